"""One encoder layer, post-LN (the original BERT, the default) or pre-LN (config.layer_norm_position "pre"):

    post-LN:  h   = LayerNorm(x + Dropout(Attention(x) Wo^T + bo))           "attention.output.LayerNorm"
              out = LayerNorm(h + Dropout(act(h W1^T + b1) W2^T + b2))       "output.LayerNorm"
    pre-LN:   h   = x + Dropout(Attention(LayerNorm(x)) Wo^T + bo)           "attention.LayerNorm"
              out = h + Dropout(act(LayerNorm(h) W1^T + b1) W2^T + b2)       "intermediate.LayerNorm"

Pre-LN is exactly what transformers' RobertaPreLayerNorm computes (its model adds one final LayerNorm after the
last layer, see models/bert.py): the residual path carries x unnormalised from layer to layer, which is why short
runs train more stably with it. ALBERT's layer is post-LN without the dropout after the feed-forward output.

Rows: a layer whose output is needed at a few positions only (the last layer, when the loss reads only the
masked positions and [CLS]: models/pretraining.py) takes their flat indices into B*T. Attention still reads
every position (keys and values), but everything after it (output projection, residual, LayerNorms, the
feed-forward block) runs on those R rows, and the layer returns (R, H). The kept rows get the same values as
in the full layer; the output projection and the feed-forward block are 3/4 of a layer's matmuls.

Parameter names under the prefix "bert.encoder.layer.{i}.":
  attention.self.{query,key,value}.{weight,bias}, attention.output.dense.{weight,bias}, intermediate.dense.*,
  output.dense.*, and post-LN: attention.output.LayerNorm.*, output.LayerNorm.*
                      pre-LN:  attention.LayerNorm.*, intermediate.LayerNorm.*
"""

import numpy as np

from minibert.layers.activations import get_activation
from minibert.layers.attention import self_attention_backward, self_attention_forward
from minibert.layers.disentangled_attention import (RelativeAttention, disentangled_attention_backward,
                                                    disentangled_attention_forward)
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward

# The two LayerNorms of a layer: (before the residual sum is used by attention, ... by the feed-forward block)
POST_LN_NAMES = ("attention.output.LayerNorm", "output.LayerNorm")
PRE_LN_NAMES = ("attention.LayerNorm", "intermediate.LayerNorm")


def layer_norm_names(config):
    return PRE_LN_NAMES if config.layer_norm_position == "pre" else POST_LN_NAMES


def encoder_layer_forward(x, params, prefix, additive_mask, config, rng, training, rows=None, for_backward=True):
    # x (B, T, H); rows None, or (R,) sorted flat indices into B*T: then the output is (R, H) (see the top)
    # additive_mask (B, 1, 1, T) or None; for DeBERTa a RelativeAttention (its pair mask, relative embeddings and
    # index table, shared by the layers): the layer then runs the disentangled attention
    # for_backward=False: no backward reads this cache (recompute keeps only the input), so the activation's
    # derivative is not computed
    P = lambda name: params[prefix + name]  # noqa: E731  (short local alias keeps the lines readable)
    pre = config.layer_norm_position == "pre"
    ln1, ln2 = (prefix + n for n in layer_norm_names(config))
    g1, b1, g2, b2 = params[ln1 + ".weight"], params[ln1 + ".bias"], params[ln2 + ".weight"], params[ln2 + ".bias"]
    eps, p_hidden = config.layer_norm_eps, config.hidden_dropout_prob
    p_ffn = 0.0 if config.shared_layers else p_hidden  # ALBERT has no dropout after the feed-forward output
    act_forward, _ = get_activation(config.hidden_act)
    c_pre1 = c_post1 = c_pre2 = c_post2 = None

    # --- self-attention block
    a = x
    if pre:
        a, c_pre1 = layernorm_forward(x, g1, b1, eps)  # (B, T, H)
    if isinstance(additive_mask, RelativeAttention):
        ctx, probs, c_attn = disentangled_attention_forward(a, params, prefix + "attention.self.", additive_mask,
                                                            config, rng, training)  # (B, T, H)
    else:
        ctx, probs, c_attn = self_attention_forward(a, params, prefix + "attention.self.", additive_mask,
                                                    config.num_attention_heads, config.attention_probs_dropout_prob,
                                                    rng, training)  # (B, T, H)
    residual = x  # (B, T, H)
    if rows is not None:  # from here on, only the rows whose output is needed
        B, T, H = x.shape
        ctx, residual = ctx.reshape(B * T, H)[rows], x.reshape(B * T, H)[rows]  # (R, H), (R, H)
    # Below, (B, T, H) and (B, T, F) read (R, H) and (R, F) when rows are given.
    attn_out, c_ao = linear_forward(ctx, P("attention.output.dense.weight"),
                                    P("attention.output.dense.bias"))  # (B, T, H)
    # DistilBERT has no dropout after the attention's output projection (its config says so)
    p_ao = p_hidden if getattr(config, "attention_output_dropout", True) else 0.0
    attn_out, m_ao = dropout_forward(attn_out, p_ao, rng, training)  # (B, T, H)
    attn_out += residual
    h = attn_out
    if not pre:
        h, c_post1 = layernorm_forward(attn_out, g1, b1, eps)  # (B, T, H)

    # --- feed-forward block
    g = h
    if pre:
        g, c_pre2 = layernorm_forward(h, g2, b2, eps)  # (B, T, H)
    f, c_in = linear_forward(g, P("intermediate.dense.weight"), P("intermediate.dense.bias"))  # (B, T, F)
    f, c_act = act_forward(f, for_backward)  # (B, T, F)
    ffn_out, c_out = linear_forward(f, P("output.dense.weight"), P("output.dense.bias"))  # (B, T, H)
    ffn_out, m_out = dropout_forward(ffn_out, p_ffn, rng, training)  # (B, T, H)
    ffn_out += h  # residual
    out = ffn_out
    if not pre:
        out, c_post2 = layernorm_forward(ffn_out, g2, b2, eps)  # (B, T, H)
    cache = (c_pre1, c_attn, c_ao, m_ao, c_post1, c_pre2, c_in, c_act, c_out, m_out, c_post2, rows, x.shape)
    return out, probs, cache


def encoder_layer_backward(dout, cache, params, grads, prefix, config):
    """Exact reverse of encoder_layer_forward; returns dx (B, T, H). Parameter gradients are added (+=), so a
    layer whose weights are shared (ALBERT) collects the sum over its uses. dout is (R, H) if the forward was
    given rows; (B, T, H) and (B, T, F) below then read (R, H) and (R, F) up to the attention."""
    c_pre1, c_attn, c_ao, m_ao, c_post1, c_pre2, c_in, c_act, c_out, m_out, c_post2, rows, x_shape = cache
    P = lambda name: params[prefix + name]  # noqa: E731
    G = lambda name: grads[prefix + name]  # noqa: E731
    ln1, ln2 = (prefix + n for n in layer_norm_names(config))
    LN1 = params[ln1 + ".weight"], grads[ln1 + ".weight"], grads[ln1 + ".bias"]  # gamma, d gamma, d beta
    LN2 = params[ln2 + ".weight"], grads[ln2 + ".weight"], grads[ln2 + ".bias"]
    _, act_backward = get_activation(config.hidden_act)

    # --- feed-forward block, backwards
    d_sum2 = dout  # (B, T, H) gradient of h + ffn_out
    if c_post2 is not None:
        d_sum2 = layernorm_backward(dout, c_post2, *LN2)
    d_ffn_out = dropout_backward(d_sum2, m_out)  # (B, T, H)
    df = linear_backward(d_ffn_out, c_out, P("output.dense.weight"), G("output.dense.weight"),
                         G("output.dense.bias"))  # (B, T, F)
    df = act_backward(df, c_act)  # (B, T, F)
    dh = linear_backward(df, c_in, P("intermediate.dense.weight"), G("intermediate.dense.weight"),
                         G("intermediate.dense.bias"))  # (B, T, H) through the feed-forward branch
    if c_pre2 is not None:
        dh = layernorm_backward(dh, c_pre2, *LN2)  # (B, T, H)
    dh += d_sum2  # (B, T, H) residual branch: the gradient reaches h directly too

    # --- self-attention block, backwards
    d_sum1 = dh  # (B, T, H) gradient of x + attn_out
    if c_post1 is not None:
        d_sum1 = layernorm_backward(dh, c_post1, *LN1)
    d_attn_out = dropout_backward(d_sum1, m_ao)  # (B, T, H)
    dctx = linear_backward(d_attn_out, c_ao, P("attention.output.dense.weight"), G("attention.output.dense.weight"),
                           G("attention.output.dense.bias"))  # (B, T, H)
    if rows is not None:  # the rows whose output was not needed have no gradient: zeros in the full (B, T, H)
        B, T, H = x_shape
        full = np.zeros((B * T, H), dtype=dctx.dtype)  # (B*T, H)
        full[rows] = dctx
        dctx = full.reshape(x_shape)  # (B, T, H)
    if isinstance(c_attn[-1], RelativeAttention):  # DeBERTa's attention
        dx = disentangled_attention_backward(dctx, c_attn, params, grads, prefix + "attention.self.", config)
    else:
        dx = self_attention_backward(dctx, c_attn, grads, prefix + "attention.self.")  # (B, T, H) through attention
    if c_pre1 is not None:
        dx = layernorm_backward(dx, c_pre1, *LN1)  # (B, T, H)
    if rows is None:
        dx += d_sum1  # (B, T, H) residual
    else:
        flat = dx.reshape(-1, x_shape[-1])  # (B*T, H); a copy if dx were not contiguous, hence the reshape back
        flat[rows] += d_sum1  # (R, H) into the kept rows (distinct: no double counting)
        dx = flat.reshape(x_shape)  # (B, T, H)
    return dx
