"""Cross-entropy from logits, mean over the positions whose label is not ignore_index (-100).

When every label is ignored (nothing masked in a batch) the loss is 0 with zero gradients; Hugging Face
returns NaN there (0/0), which would poison a training run.
"""

import numpy as np

IGNORE_INDEX = -100


def cross_entropy_forward(logits, labels, ignore_index=IGNORE_INDEX):
    # logits (N, C)  labels (N,) int
    valid = labels != ignore_index  # (N,)
    count = int(valid.sum())
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (N, C): exp never overflows
    exp = np.exp(shifted)
    sum_exp = exp.sum(axis=-1, keepdims=True)  # (N, 1)
    safe_labels = np.where(valid, labels, 0)
    log_prob_true = shifted[np.arange(len(labels)), safe_labels] - np.log(sum_exp[:, 0])  # (N,)
    loss = (-log_prob_true * valid).sum() / max(count, 1)
    probs = exp
    probs /= sum_exp  # (N, C): softmax, kept for the backward
    return float(loss), (probs, safe_labels, valid, count)


def cross_entropy_backward(cache, dloss=1.0):
    """d loss / d logits = (softmax - onehot) / count at valid positions, 0 elsewhere."""
    probs, labels, valid, count = cache
    dlogits = probs.copy()  # (N, C)
    dlogits[np.arange(len(labels)), labels] -= 1.0
    dlogits *= (valid * (dloss / max(count, 1)))[:, None].astype(probs.dtype)
    return dlogits
