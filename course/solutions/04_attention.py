"""Solutions to the exercises of course/04_attention.py."""

import numpy as np


def merge_heads(t):
    B, A, T, D = t.shape
    return t.transpose(0, 2, 1, 3).reshape(B, T, A * D)  # (B, A, T, D) -> (B, T, A, D) -> (B, T, H)


def causal_mask(T):
    allowed = np.tril(np.ones((T, T), dtype=bool))  # (T, T): query i sees keys j <= i
    return np.where(allowed, 0.0, np.finfo(np.float64).min)  # (T, T)


def softmax_jacobian(p):
    # d p_j / d s_i = p_j (delta_ij - p_i): symmetric, so rows or columns read the same
    return np.diag(p) - np.outer(p, p)  # (T, T)
