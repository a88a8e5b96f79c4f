"""The distillation losses, each a forward returning (loss, cache) and a backward returning the gradient
w.r.t. the student's output (the teacher's side is a constant: it gets no gradient).

- soft targets:   T^2 * mean over the M rows of KL(softmax(t / T) || softmax(s / T))          s, t (M, V)
                  (DistilBERT's KLDivLoss(batchmean) x T^2; the same gradient as the cross-entropy against the
                  teacher's distribution, which differs only by the teacher's entropy, a constant)
- token cosine:   mean over the N real tokens of 1 - cos(s_n, t_n)                             s, t (B, T, H)
- token MSE:      mean over the N real tokens and H features of (s - t)^2                      s, t (B, T, H)
- pooled cosine:  mean over the B sequences of 1 - cos(mean-pool(s), mean-pool(t))            s, t (B, T, H)
                  (the sentence embedding of sentence-transformers models such as all-MiniLM-L6-v2)

`mask` (B, T) is the attention mask: padded positions count in no loss.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-12


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def soft_target_forward(s_logits, t_logits, temperature):
    # s_logits, t_logits (M, V)
    M = s_logits.shape[0]
    if M == 0:
        return 0.0, (None, None, temperature, 0)
    log_ps = _log_softmax(s_logits.astype(np.float64) / temperature)  # (M, V)
    log_pt = _log_softmax(t_logits.astype(np.float64) / temperature)  # (M, V)
    pt = np.exp(log_pt)
    loss = temperature ** 2 * float((pt * (log_pt - log_ps)).sum()) / M
    return loss, (np.exp(log_ps), pt, temperature, M)


def soft_target_backward(cache, dloss=1.0, dtype=np.float32):
    ps, pt, temperature, M = cache
    if M == 0:
        return None
    return (dloss * temperature * (ps - pt) / M).astype(dtype)  # (M, V): T^2 x (1/T) from z / T


def _cosine_rows_forward(a, b):
    # a, b (N, H) -> cos (N,)
    na = np.maximum(np.linalg.norm(a, axis=-1), EPS)  # (N,)
    nb = np.maximum(np.linalg.norm(b, axis=-1), EPS)  # (N,)
    cos = (a * b).sum(axis=-1) / (na * nb)  # (N,)
    return cos, (a, b, na, nb, cos)


def _cosine_rows_backward(dcos, cache):
    """d cos / d a = b / (|a||b|) - cos a / |a|^2, scaled by dcos (N,); returns (N, H)."""
    a, b, na, nb, cos = cache
    return dcos[:, None] * (b / (na * nb)[:, None] - cos[:, None] * a / (na ** 2)[:, None])


def token_cosine_forward(s, t, mask):
    # s, t (B, T, H), mask (B, T)
    keep = mask.reshape(-1).astype(bool)  # (B*T,)
    H = s.shape[-1]
    cos, c = _cosine_rows_forward(s.reshape(-1, H)[keep].astype(np.float64), t.reshape(-1, H)[keep].astype(np.float64))
    N = max(1, int(keep.sum()))
    return float((1.0 - cos).sum()) / N, (c, keep, N, s.shape, s.dtype)


def token_cosine_backward(cache, dloss=1.0):
    c, keep, N, shape, dtype = cache
    ds = np.zeros((keep.size, shape[-1]), dtype=dtype)  # (B*T, H)
    ds[keep] = _cosine_rows_backward(np.full(int(keep.sum()), -dloss / N), c)
    return ds.reshape(shape)


def token_mse_forward(s, t, mask):
    # s, t (B, T, H), mask (B, T)
    m = mask.astype(np.float64)[:, :, None]  # (B, T, 1)
    diff = (s.astype(np.float64) - t) * m  # (B, T, H)
    count = max(1.0, float(m.sum())) * s.shape[-1]
    return float((diff ** 2).sum()) / count, (diff, count, s.dtype)


def token_mse_backward(cache, dloss=1.0):
    diff, count, dtype = cache
    return (dloss * 2.0 * diff / count).astype(dtype)  # (B, T, H); zero at padding


def pooled_cosine_forward(s, t, mask):
    # s, t (B, T, H), mask (B, T) -> 1 - cos of the mean-pooled rows, averaged over B
    m = mask.astype(np.float64)[:, :, None]  # (B, T, 1)
    counts = np.maximum(m.sum(axis=1), 1e-9)  # (B, 1)
    ps = (s * m).sum(axis=1) / counts  # (B, H)
    pt = (t * m).sum(axis=1) / counts  # (B, H)
    cos, c = _cosine_rows_forward(ps, pt)
    B = s.shape[0]
    return float((1.0 - cos).sum()) / B, (c, m, counts, B, s.dtype)


def pooled_cosine_backward(cache, dloss=1.0):
    c, m, counts, B, dtype = cache
    dps = _cosine_rows_backward(np.full(B, -dloss / B), c)  # (B, H)
    return ((dps / counts)[:, None, :] * m).astype(dtype)  # (B, T, H): each real token's share of the mean
