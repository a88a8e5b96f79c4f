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
    safe_labels = np.where(valid, labels, 0)  # (N,)
    probs = logits - logits.max(axis=-1, keepdims=True)  # (N, C) shifted: exp never overflows
    log_prob_true = probs[np.arange(len(labels)), safe_labels]  # (N,) shifted logit at the label (a copy)
    np.exp(probs, out=probs)  # in place: the (N, C) array is the MLM head's largest
    sum_exp = probs.sum(axis=-1, keepdims=True)  # (N, 1)
    log_prob_true -= np.log(sum_exp[:, 0])  # (N,) log softmax at the labels
    probs /= sum_exp  # (N, C) softmax, kept for the backward
    loss = (-log_prob_true * valid).sum() / max(count, 1)
    return float(loss), (probs, safe_labels, valid, count)


def cross_entropy_backward(cache, dloss=1.0, overwrite=False):
    """d loss / d logits = (softmax - onehot) / count at valid positions, 0 elsewhere.

    overwrite=True writes the gradient over the softmax kept in `cache` instead of into a new array (the cache is
    then used up): the models' backward passes, which drop their cache afterwards, save one (N, C) array, for
    the MLM head (M, V) the largest array of a small model's step. The same operations, the same numbers."""
    probs, labels, valid, count = cache
    row_scale = (valid * (dloss / max(count, 1))).astype(probs.dtype)  # (N,)
    dlogits = probs if overwrite else probs.copy()  # (N, C)
    dlogits[np.arange(len(labels)), labels] -= 1.0
    dlogits *= row_scale[:, None]
    return dlogits


def bce_with_logits_forward(logits, labels, active):
    """Sigmoid binary cross-entropy, mean over the active tokens (ELECTRA's replaced-token detection; Hugging Face
    ElectraForPreTraining: BCEWithLogitsLoss over the tokens whose attention_mask is 1).

    logits (N,) float, labels (N,) 0/1, active (N,) bool. Written as max(x, 0) - x y + log(1 + exp(-|x|)), which
    never overflows. With no active token the loss is 0 (Hugging Face: NaN)."""
    x = logits
    y = labels.astype(x.dtype)
    count = int(active.sum())
    per_token = np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))  # (N,)
    loss = float((per_token * active).sum() / max(count, 1))
    return loss, (x, y, active, count)


def bce_with_logits_backward(cache, dloss=1.0):
    """d loss / d logits = (sigmoid(x) - y) / count at active tokens, 0 elsewhere."""
    x, y, active, count = cache
    sig = np.empty_like(x)
    e = np.exp(-np.abs(x))  # sigmoid from exp(-|x|): stable on both sides
    np.divide(np.where(x >= 0, 1.0, e), 1.0 + e, out=sig)  # (N,)
    return ((sig - y) * (active * (dloss / max(count, 1)))).astype(x.dtype)
