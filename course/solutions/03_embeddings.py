"""Solutions to the exercises of chapter 3, Embeddings."""

import numpy as np


def sinusoidal_table(P, H):
    p = np.arange(P)[:, None]  # (P, 1)
    freq = 1.0 / 10000 ** (np.arange(0, H, 2) / H)  # (H/2,) one frequency per sin/cos pair
    pe = np.zeros((P, H))  # (P, H)
    pe[:, 0::2] = np.sin(p * freq)
    pe[:, 1::2] = np.cos(p * freq)
    return pe


def layernorm_dx(dy, ehat, rstd, gamma):
    g = dy * gamma  # (..., H) gradient with respect to ehat
    return rstd * (g - g.mean(-1, keepdims=True) - ehat * (g * ehat).mean(-1, keepdims=True))  # (..., H)


def word_table_grad(ids, de, V, pad_id):
    grad = np.zeros((V, de.shape[-1]))  # (V, H)
    for i, row in zip(ids.reshape(-1), de.reshape(-1, de.shape[-1])):
        if i != pad_id:  # padding is not a word to learn
            grad[i] += row  # a repeated id adds up
    return grad
