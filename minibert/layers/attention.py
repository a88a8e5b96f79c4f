"""Multi-head self-attention, forward and backward.

    q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv       each (B, T, H), split into A heads of size D
    scores  = q k^T / sqrt(D) + mask                      (B, A, T, T); mask is 0 or a huge negative at padding
    probs   = softmax(scores) -> dropout                  (B, A, T, T)
    context = probs v, heads joined back                  (B, T, H)

Parameter names (prefix e.g. "bert.encoder.layer.0.attention.self."): query/key/value.{weight,bias}.
The output projection, dropout, residual and LayerNorm live in encoder_layer.py, as in Hugging Face's
BertSelfOutput.
"""

import math

import numpy as np

from minibert.layers.dropout import dropout_backward, dropout_forward


def softmax_forward(scores, additive_mask=None):
    """Softmax over the last axis of `scores + additive_mask`, in place on `scores` (additive_mask broadcasts
    against scores, e.g. (B, 1, 1, T) for scores (B, A, T, T))."""
    if additive_mask is not None:
        scores += additive_mask  # padded keys get ~zero probability
    scores -= scores.max(axis=-1, keepdims=True)  # shift for stability: exp never overflows
    np.exp(scores, out=scores)
    scores /= np.einsum("...t->...", scores)[..., None]  # row sums (einsum: NumPy's .sum is slow on short rows)
    return scores


def softmax_backward(dprobs, probs):
    """d scores = probs * (dprobs - sum(dprobs * probs)) over the last axis, in place on dprobs."""
    dprobs -= np.einsum("...i,...i->...", dprobs, probs)[..., None]
    dprobs *= probs
    return dprobs


def self_attention_forward(x, params, prefix, additive_mask, num_heads, p_drop, rng, training):
    # x (B, T, H); additive_mask (B, 1, 1, T) or None
    B, T, H = x.shape
    A, D = num_heads, H // num_heads
    # One matmul for q, k and v together (3x fewer BLAS calls); the (3H, H) weight is rebuilt from Hugging
    # Face's three separate matrices, which costs one small copy.
    # The 1/sqrt(D) score scale is folded into the query projection (a (H, H) multiply instead of one over
    # every query).
    scale = 1.0 / math.sqrt(D)
    w_qkv = np.concatenate([params[prefix + n + ".weight"] for n in ("query", "key", "value")])  # (3H, H)
    b_qkv = np.concatenate([params[prefix + n + ".bias"] for n in ("query", "key", "value")])  # (3H,)
    w_qkv[:H] *= scale
    b_qkv[:H] *= scale
    qkv = x.reshape(B * T, H) @ w_qkv.T + b_qkv  # (B*T, 3H)
    # One copy into head-major layout, so each head's (T, D) block is contiguous for the batched matmuls.
    qkv = np.ascontiguousarray(qkv.reshape(B, T, 3, A, D).transpose(2, 0, 3, 1, 4))  # (3, B, A, T, D)
    q, k, v = qkv[0], qkv[1], qkv[2]  # each (B, A, T, D); q already scaled
    scores = q @ k.transpose(0, 1, 3, 2)  # (B, A, T, T)
    probs = softmax_forward(scores, additive_mask)  # (B, A, T, T); mask (B, 1, 1, T): padded keys get ~0
    probs_dropped, drop_mask = dropout_forward(probs, p_drop, rng, training)  # (B, A, T, T)
    context = probs_dropped @ v  # (B, A, T, D)
    context = context.transpose(0, 2, 1, 3).reshape(B, T, H)  # (B, T, H): heads side by side
    cache = (x, w_qkv, q, k, v, probs, probs_dropped, drop_mask, scale)
    # The second result is what output_attentions shows: the weights the context was built with (after
    # dropout in training, as Hugging Face returns them; plain softmax in eval mode).
    return context, probs_dropped, cache


def self_attention_backward(dcontext, cache, grads, prefix):
    x, w_qkv, q, k, v, probs, probs_dropped, drop_mask, scale = cache
    B, A, T, D = q.shape
    H = A * D
    dcontext = dcontext.reshape(B, T, A, D).transpose(0, 2, 1, 3)  # (B, A, T, D)
    dprobs = dcontext @ v.transpose(0, 1, 3, 2)  # (B, A, T, T)
    dqkv = np.empty((3, B, A, T, D), dtype=x.dtype)
    np.matmul(probs_dropped.transpose(0, 1, 3, 2), dcontext, out=dqkv[2])  # dv (B, A, T, D)
    dprobs = dropout_backward(dprobs, drop_mask)  # (B, A, T, T)
    dscores = softmax_backward(dprobs, probs)  # (B, A, T, T); the additive mask has no gradient
    np.matmul(dscores, k, out=dqkv[0])  # d(scaled q) (B, A, T, D)
    np.matmul(dscores.transpose(0, 1, 3, 2), q, out=dqkv[1])  # dk (B, A, T, D); q carries the scale
    dqkv = dqkv.transpose(1, 3, 0, 2, 4).reshape(B * T, 3 * H)  # (B*T, 3H), the layout of the qkv matmul
    dw_qkv = dqkv.T @ x.reshape(B * T, H)  # (3H, H) w.r.t. the scaled weights
    db_qkv = dqkv.sum(axis=0, dtype=np.float64)  # (3H,) in float64, as linear.py's bias gradient
    dw_qkv[:H] *= scale  # chain rule through the folded scale: d/dWq = scale * d/d(scale Wq)
    db_qkv[:H] *= scale
    for i, n in enumerate(("query", "key", "value")):
        grads[prefix + n + ".weight"] += dw_qkv[i * H:(i + 1) * H]
        grads[prefix + n + ".bias"] += db_qkv[i * H:(i + 1) * H]
    return (dqkv @ w_qkv).reshape(B, T, H)  # dx (B, T, H); w_qkv holds the scaled query weights, as used
