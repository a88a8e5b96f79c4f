"""DeBERTa's disentangled self-attention, forward and backward (transformers' DisentangledSelfAttention).

BERT's attention score says how well token i's content matches token j's. DeBERTa adds two terms that read the
relative position of the pair through a table of relative-position embeddings R (2S rows, S = the span):

    q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv              each (B, T, H), in A heads of size D
    Pk, Pq  = R Wk'^T + bk', R Wq'^T + bq'                        (2S, H): R seen as keys / as queries
    idx[i, j] = clamp(bucket(i - j) + S, 0, 2S - 1)               (T, T): the row of R for the pair (i, j)
    c2p[i, j] = q_i . Pk[idx[i, j]]                               content of i against the position of j from i
    p2c[i, j] = k_j . Pq[idx[i, j]]                               content of j against that same position
    scores    = (q k^T + c2p + p2c) / sqrt(D (1 + number of terms)), masked, softmax, dropout, times v

Wk', Wq' are key_proj / query_proj when share_att_key is set, else pos_key_proj / pos_query_proj. c2p and p2c
are each computed as one matmul against all 2S rows, q Pk^T (B, A, T, 2S), then a gather of column idx[i, j] for
every pair. (The paper writes p2c with the index of (j, i); transformers' code, followed here, reads the same
table for both terms: its p2c gathers with -bucket(j - i), which is bucket(i - j).)

bucket(r) is r itself for |r| < S / 2 (about), and beyond that a log bucket that grows with log|r| up to
max_relative_positions (`make_log_bucket_position`); without position_buckets it is r. Distances beyond the span
are clamped to the table's first or last row.

The backward: each gather becomes a scatter-add back into the (T, 2S) matrix of its matmul. Two pairs (i, j)
of one row i land on the same column when their distances share a bucket or both are clamped, so the gradients
must be summed, not written (a one-hot product, or np.bincount with weights: scatter_columns). The gradient of
R is summed over all layers (RelativeAttention.d_rel) before it goes back through encoder.LayerNorm, once per
step (models/bert.py).

Masking: the pair (i, j) is kept when both tokens are real (mask_i * mask_j); the others are set to the most
negative float before softmax, as masked_fill does, so they get no gradient, and a padded query row, all of it
masked, becomes uniform (what transformers gives it).

Parameter names (prefix e.g. "deberta.encoder.layer.0.attention.self."): query_proj, key_proj, value_proj,
pos_key_proj, pos_query_proj, each .weight (H, H) and .bias (H,).
"""

from __future__ import annotations

import math

import numpy as np

from minibert.layers.attention import softmax_backward, softmax_forward
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward

REL_EMBEDDINGS = "encoder.rel_embeddings.weight"
REL_LAYER_NORM = "encoder.LayerNorm"


# ---------------------------------------------------------------------------------------------- relative positions
def make_log_bucket_position(relative_pos, bucket_size, max_position):
    """transformers' make_log_bucket_position, in float32 as torch computes it, so the integers are the same.

    Distances with |r| <= bucket_size // 2 keep their value; longer ones get mid + ceil(log(|r| / mid) /
    log((max_position - 1) / mid) * (mid - 1)), with r's sign: the buckets widen with the distance."""
    relative_pos = np.asarray(relative_pos, dtype=np.int64)
    sign = np.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = np.where((relative_pos < mid) & (relative_pos > -mid), mid - 1, np.abs(relative_pos))
    f32 = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) where mid is 1: those entries keep r
        log_pos = np.ceil(np.log(abs_pos.astype(f32) / f32(mid)) / np.log(f32((max_position - 1) / mid))
                          * f32(mid - 1)) + f32(mid)
        log_pos = np.nan_to_num(log_pos * sign)
    return np.where(abs_pos <= mid, relative_pos, log_pos.astype(np.int64))


def relative_position_index(T, config):
    """idx (T, T): the row of the relative embeddings that pair (i, j) reads, clamp(bucket(i - j) + S, 0, 2S - 1)."""
    r = np.arange(T)[:, None] - np.arange(T)[None, :]  # (T, T) i - j
    if config.position_buckets > 0:
        r = make_log_bucket_position(r, config.position_buckets, config.max_positions_for_buckets)
    S = config.relative_span
    return np.clip(r + S, 0, 2 * S - 1)  # (T, T)


ONE_HOT_LIMIT = 1 << 22  # entries of the (T, T, width) one-hot table (16 MB in float32) up to which it is used


def scatter_columns(d, idx, width):
    """The backward of the gather g[..., i, j] = m[..., i, idx[i, j]]: out[..., i, c] = sum over j with
    idx[i, j] == c of d[..., i, j]. d (N, A, T, T), idx (T, T) -> (N, A, T, width). Colliding j's are summed.

    Two ways, the same sums: for row i, d[..., i, :] times the one-hot (T, width) matrix of idx[i, :] (one
    batched matmul over the rows; ~5x faster than bincount at T = 64), while that table is small; beyond
    ONE_HOT_LIMIT entries (long sequences), np.bincount with weights over flat output indices."""
    N, A, T, _ = d.shape
    if T * T * width <= ONE_HOT_LIMIT:
        onehot = (idx[:, :, None] == np.arange(width)).astype(d.dtype)  # (T, T, width)
        out = np.matmul(d.reshape(N * A, T, T).transpose(1, 0, 2), onehot)  # (T, N*A, width): row i's sums
        return np.ascontiguousarray(out.transpose(1, 0, 2)).reshape(N, A, T, width)
    rows = np.arange(N * A * T)[:, None] * width  # (N*A*T, 1) the start of each output row
    flat = (rows.reshape(N * A, T, 1) + idx[None]).reshape(-1)  # (N*A*T*T,) where each d[..., i, j] goes
    out = np.bincount(flat, weights=d.reshape(-1), minlength=N * A * T * width)  # (N*A*T*width,)
    return out.reshape(N, A, T, width).astype(d.dtype)


class RelativeAttention:
    """What every layer's attention shares in one forward: the pair mask (B, 1, T, T) (None: no padding), the
    relative embeddings R (2S, H) after encoder.LayerNorm (None when relative_attention is off), the index table
    idx (T, T), and d_rel (2S, H), where the layers' backwards add R's gradient."""

    def __init__(self, pair_mask, rel, idx, ln_cache=None):
        self.pair_mask, self.rel, self.idx, self.ln_cache = pair_mask, rel, idx, ln_cache
        self.d_rel = None if rel is None else np.zeros_like(rel)


def relative_attention_forward(params, prefix, config, attention_mask, T):
    """The shared part, once per forward: the pair mask, R = LayerNorm(rel_embeddings) and the index table."""
    pair_mask = None
    if attention_mask is not None and not attention_mask.all():
        m = attention_mask.astype(bool)  # (B, T)
        pair_mask = m[:, None, :, None] & m[:, None, None, :]  # (B, 1, T, T): both tokens real
    rel = ln_cache = None
    if config.relative_attention:
        rel = params[prefix + REL_EMBEDDINGS]  # (2S, H)
        if config.normalise_rel_embeddings:
            rel, ln_cache = layernorm_forward(rel, params[prefix + REL_LAYER_NORM + ".weight"],
                                              params[prefix + REL_LAYER_NORM + ".bias"], config.layer_norm_eps)
    return RelativeAttention(pair_mask, rel, relative_position_index(T, config), ln_cache)


def relative_attention_backward(shared, params, grads, prefix):
    """R's gradient, summed over the layers, back through encoder.LayerNorm into rel_embeddings."""
    if shared.rel is None:
        return
    d = shared.d_rel  # (2S, H)
    if shared.ln_cache is not None:
        d = layernorm_backward(d, shared.ln_cache, params[prefix + REL_LAYER_NORM + ".weight"],
                               grads[prefix + REL_LAYER_NORM + ".weight"], grads[prefix + REL_LAYER_NORM + ".bias"])
    grads[prefix + REL_EMBEDDINGS] += d


# ---------------------------------------------------------------------------------------------- the attention
def _heads(t, A):
    """(N, H) rows -> (A, N, D), or (B, T, H) -> (B, A, T, D), contiguous."""
    if t.ndim == 2:
        N, H = t.shape
        return np.ascontiguousarray(t.reshape(N, A, H // A).transpose(1, 0, 2))
    B, T, H = t.shape
    return np.ascontiguousarray(t.reshape(B, T, A, H // A).transpose(0, 2, 1, 3))


def _position_projection(config, term):
    """The projection of R for a term: c2p reads R as keys, p2c as queries."""
    if term == "c2p":
        return "key_proj" if config.share_att_key else "pos_key_proj"
    return "query_proj" if config.share_att_key else "pos_query_proj"


def disentangled_attention_forward(x, params, prefix, shared, config, rng, training):
    # x (B, T, H); shared: RelativeAttention (the pair mask, R and idx of this forward)
    B, T, H = x.shape
    A = config.num_attention_heads
    P = lambda name: params[prefix + name]  # noqa: E731
    terms = [t for t in ("c2p", "p2c") if t in config.pos_att_type]
    scale = 1.0 / math.sqrt((H // A) * (1 + len(terms)))  # counts the terms even without relative_attention
    q, c_q = linear_forward(x, P("query_proj.weight"), P("query_proj.bias"))  # (B, T, H)
    k, c_k = linear_forward(x, P("key_proj.weight"), P("key_proj.bias"))  # (B, T, H)
    v, c_v = linear_forward(x, P("value_proj.weight"), P("value_proj.bias"))  # (B, T, H)
    q, k, v = _heads(q, A), _heads(k, A), _heads(v, A)  # (B, A, T, D)
    scores = q @ k.transpose(0, 1, 3, 2)  # (B, A, T, T) content to content
    R = m_rel = None
    pos = {}  # term -> (position heads (A, 2S, D), the projection's cache)
    if config.relative_attention and terms:
        R, m_rel = dropout_forward(shared.rel, config.hidden_dropout_prob, rng, training)  # (2S, H)
        i_rows = np.arange(T)[:, None]  # (T, 1)
        for term in terms:
            name = _position_projection(config, term)
            p, c_p = linear_forward(R, P(name + ".weight"), P(name + ".bias"))  # (2S, H)
            p = _heads(p, A)  # (A, 2S, D)
            pos[term] = (p, c_p)
            if term == "c2p":  # q_i against every relative row, then the row of (i, j)
                scores += (q @ p.transpose(0, 2, 1))[:, :, i_rows, shared.idx]  # (B, A, T, T)
            else:  # k_j against every relative row, then the row of (i, j): [i, j] reads row j
                scores += (k @ p.transpose(0, 2, 1))[:, :, i_rows.T, shared.idx]  # (B, A, T, T)
    scores *= scores.dtype.type(scale)
    if shared.pair_mask is not None:
        np.copyto(scores, np.finfo(scores.dtype).min, where=~shared.pair_mask)  # masked_fill, not an addition
    probs = softmax_forward(scores)  # (B, A, T, T)
    probs_dropped, drop_mask = dropout_forward(probs, config.attention_probs_dropout_prob, rng, training)
    context = probs_dropped @ v  # (B, A, T, D)
    context = context.transpose(0, 2, 1, 3).reshape(B, T, H)  # (B, T, H)
    cache = (c_q, c_k, c_v, q, k, v, probs, probs_dropped, drop_mask, scale, m_rel, pos, shared)
    return context, probs_dropped, cache


def _sum_over_batch(d_all, x):
    """sum over b and t of d_all[b, a, t, :]^T x[b, a, t, :] (an einsum "batc,batd->acd") as one matmul per head:
    (A, 2S, B*T) @ (A, B*T, D)."""
    B, A, T, W = d_all.shape
    return d_all.transpose(1, 3, 0, 2).reshape(A, W, B * T) @ x.transpose(1, 0, 2, 3).reshape(A, B * T, -1)


def disentangled_attention_backward(dcontext, cache, params, grads, prefix, config):
    """Returns dx (B, T, H); adds the parameters' gradients into grads and R's into shared.d_rel."""
    c_q, c_k, c_v, q, k, v, probs, probs_dropped, drop_mask, scale, m_rel, pos, shared = cache
    B, A, T, D = q.shape
    H = A * D
    P = lambda name: params[prefix + name]  # noqa: E731
    G = lambda name: grads[prefix + name]  # noqa: E731
    dcontext = np.ascontiguousarray(dcontext.reshape(B, T, A, D).transpose(0, 2, 1, 3))  # (B, A, T, D)
    dprobs = dcontext @ v.transpose(0, 1, 3, 2)  # (B, A, T, T)
    dv = probs_dropped.transpose(0, 1, 3, 2) @ dcontext  # (B, A, T, D)
    dprobs = dropout_backward(dprobs, drop_mask)  # (B, A, T, T)
    dscores = softmax_backward(dprobs, probs)  # (B, A, T, T)
    if shared.pair_mask is not None:
        dscores *= shared.pair_mask  # masked_fill replaced those scores: no gradient reaches them
    dscores *= dscores.dtype.type(scale)  # the gradient of the unscaled sum q k^T + c2p + p2c
    dq = dscores @ k  # (B, A, T, D)
    dk = dscores.transpose(0, 1, 3, 2) @ q  # (B, A, T, D)
    if pos:
        dR = np.zeros(shared.rel.shape, dtype=q.dtype)  # (2S, H) this layer's share, before its dropout
        width = dR.shape[0]
        for term, (p, c_p) in pos.items():
            if term == "c2p":  # scores[i, j] += (q_i Pk^T)[idx[i, j]]
                d_all = scatter_columns(dscores, shared.idx, width)  # (B, A, T, 2S)
                dq += d_all @ p  # (B, A, T, D)
                dp = _sum_over_batch(d_all, q)  # (A, 2S, D)
            else:  # scores[i, j] += (k_j Pq^T)[idx[i, j]]: row j of the transposed scores, column idx[j, i]^T
                d_all = scatter_columns(np.ascontiguousarray(dscores.transpose(0, 1, 3, 2)), shared.idx.T, width)
                dk += d_all @ p  # (B, A, T, D)
                dp = _sum_over_batch(d_all, k)  # (A, 2S, D)
            dp = dp.transpose(1, 0, 2).reshape(width, H)  # (2S, H)
            name = _position_projection(config, term)
            dR += linear_backward(dp, c_p, P(name + ".weight"), G(name + ".weight"), G(name + ".bias"))  # (2S, H)
        shared.d_rel += dropout_backward(dR, m_rel)
    joined = lambda t: t.transpose(0, 2, 1, 3).reshape(B, T, H)  # noqa: E731  (B, A, T, D) -> (B, T, H)
    dx = linear_backward(joined(dq), c_q, P("query_proj.weight"), G("query_proj.weight"), G("query_proj.bias"))
    dx += linear_backward(joined(dk), c_k, P("key_proj.weight"), G("key_proj.weight"), G("key_proj.bias"))
    dx += linear_backward(joined(dv), c_v, P("value_proj.weight"), G("value_proj.weight"), G("value_proj.bias"))
    return dx  # (B, T, H)
