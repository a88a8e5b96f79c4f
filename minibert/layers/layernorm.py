"""LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * w + b.

The backward is the compact form derived in llm.c's doc/layernorm: with xhat the normalised input and
g = dout * w, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
"""

import numpy as np


def layernorm_forward(x, w, b, eps):
    # x (..., H)  w (H,)  b (H,)
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    xc = x - mean  # (..., H)
    var = np.mean(xc * xc, axis=-1, keepdims=True)  # (..., 1) biased variance, as torch uses
    rstd = 1.0 / np.sqrt(var + eps)  # (..., 1)
    xhat = xc  # reuse the buffer: xc is not needed any more
    xhat *= rstd  # (..., H)
    out = xhat * w  # (..., H)
    out += b
    return out, (xhat, rstd)


def layernorm_backward(dout, cache, w, dw, db):
    xhat, rstd = cache
    H = xhat.shape[-1]
    d2 = dout.reshape(-1, H)  # (N, H)
    x2 = xhat.reshape(-1, H)  # (N, H)
    dw += np.einsum("nh,nh->h", d2, x2)  # (H,)  sum over tokens of dout * xhat
    db += d2.sum(axis=0)  # (H,)
    g = dout * w  # (..., H) gradient w.r.t. xhat
    g_mean = g.mean(axis=-1, keepdims=True)  # (..., 1)
    gx_mean = np.mean(g * xhat, axis=-1, keepdims=True)  # (..., 1)
    g -= g_mean
    g -= xhat * gx_mean
    g *= rstd
    return g  # (..., H)
