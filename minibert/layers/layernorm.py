"""LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * w + b.

The backward is the compact form derived in llm.c's doc/layernorm: with xhat the normalised input and
g = dout * w, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).

Both directions run on row blocks (threads.py): each row is normalised on its own, so blocks of rows run on
different threads; the parameter gradients (sums over all rows) are taken on the whole arrays.
"""

import numpy as np

from minibert.layers.threads import for_row_blocks, sum_rows


def _layernorm_forward_block(x, w, b, eps, out, xhat, rstd):
    # x (n, H) -> out (n, H), xhat (n, H), rstd (n, 1)
    # Row sums as einsums: NumPy's .mean()/.sum() over a short last axis run their reduction loop once per row,
    # several times slower than einsum's loop for rows of a few hundred: 165 against 61 us for 1024 x 192
    # float32 on an AMD EPYC (November 27, 2026; python -m timeit -s "import numpy as np; x = np.ones((1024, 192),
    # np.float32)" "x.sum(-1)", then the same with "np.einsum('nh->n', x)").
    H = x.shape[-1]
    mean = np.einsum("nh->n", x)[:, None]  # (n, 1) row sums ...
    mean /= H  # ... / H: the means
    np.subtract(x, mean, out=xhat)  # centred
    var = np.einsum("nh,nh->n", xhat, xhat)[:, None]  # (n, 1) sum of squares, without writing the squares
    var /= H  # biased variance, as torch uses
    var += eps
    np.sqrt(var, out=var)
    np.divide(1.0, var, out=rstd)
    xhat *= rstd
    np.multiply(xhat, w, out=out)
    out += b


def layernorm_forward(x, w, b, eps):
    # x (..., H)  w (H,)  b (H,)
    H = x.shape[-1]
    x2 = x.reshape(-1, H)  # (N, H)
    out, xhat = np.empty_like(x2), np.empty_like(x2)  # (N, H)
    rstd = np.empty((len(x2), 1), dtype=x2.dtype)  # (N, 1)
    for_row_blocks(lambda s: _layernorm_forward_block(x2[s], w, b, eps, out[s], xhat[s], rstd[s]), *x2.shape)
    return out.reshape(x.shape), (xhat.reshape(x.shape), rstd.reshape(*x.shape[:-1], 1))


def _layernorm_backward_block(dout, xhat, rstd, w, dx):
    # dout, xhat (n, H), rstd (n, 1) -> dx (n, H)
    g = np.multiply(dout, w, out=dx)  # (n, H) gradient w.r.t. xhat, built in dx's memory
    g_mean = np.einsum("nh->n", g)[:, None]  # (n, 1) row sums (einsum: see the forward) ...
    g_mean /= xhat.shape[-1]  # ... / H: the means
    gx_mean = np.einsum("nh,nh->n", g, xhat)[:, None]  # (n, 1) sum of g * xhat ...
    gx_mean /= xhat.shape[-1]  # ... / H: its mean
    g -= g_mean
    g -= xhat * gx_mean
    g *= rstd


def layernorm_backward(dout, cache, w, dw, db):
    xhat, rstd = cache
    H = xhat.shape[-1]
    d2 = dout.reshape(-1, H)  # (N, H)
    x2 = xhat.reshape(-1, H)  # (N, H)
    r2 = rstd.reshape(-1, 1)  # (N, 1)
    dw += sum_rows(d2, x2)  # (H,)  sum over tokens of dout * xhat
    db += sum_rows(d2)  # (H,)
    dx = np.empty_like(x2)  # (N, H)
    for_row_blocks(lambda s: _layernorm_backward_block(d2[s], x2[s], r2[s], w, dx[s]), len(x2), H)
    return dx.reshape(xhat.shape)  # (..., H)
