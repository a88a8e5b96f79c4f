"""Solutions to the exercises of course/05_encoder_layer.py."""

import math

import numpy as np


def gelu_tanh_derivative(x):
    c = math.sqrt(2.0 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x ** 3))  # tanh(u)
    # product rule: d/dx [x/2 (1 + t)] = (1 + t)/2 + x/2 (1 - t^2) du/dx
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)


def rmsnorm_backward(dy, x, w, eps):
    rstd = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (N, 1)
    xhat = x * rstd  # (N, H)
    g = dy * w  # (N, H) gradient w.r.t. xhat
    # LayerNorm's formula without the mean term: dx = rstd (g - xhat mean(g xhat))
    return rstd * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))  # (N, H)


def relu_ffn_backward(dy, h, w1, b1, w2):
    f = h @ w1.T + b1  # (B, T, F)
    g = np.maximum(f, 0)  # (B, T, F)
    dw2 = dy.reshape(-1, dy.shape[-1]).T @ g.reshape(-1, g.shape[-1])  # (H, F)
    dg = dy @ w2  # (B, T, F)
    df = dg * (f > 0)  # (B, T, F)
    dw1 = df.reshape(-1, df.shape[-1]).T @ h.reshape(-1, h.shape[-1])  # (F, H)
    db1 = df.reshape(-1, df.shape[-1]).sum(axis=0)  # (F,)
    return df @ w1, dw1, db1, dw2  # dh (B, T, H)
