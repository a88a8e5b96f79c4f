"""One BERT encoder layer (post-LN, as in the original BERT):

    h   = LayerNorm(x + Dropout(Attention(x) Wo^T + bo))          "attention.output"
    out = LayerNorm(h + Dropout(act(h W1^T + b1) W2^T + b2))      "intermediate" and "output"

Parameter names under the prefix "bert.encoder.layer.{i}.":
  attention.self.{query,key,value}.{weight,bias}, attention.output.dense.{weight,bias},
  attention.output.LayerNorm.{weight,bias}, intermediate.dense.{weight,bias}, output.dense.{weight,bias},
  output.LayerNorm.{weight,bias}
"""

from minibert.layers.activations import get_activation
from minibert.layers.attention import self_attention_backward, self_attention_forward
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward


def encoder_layer_forward(x, params, prefix, additive_mask, config, rng, training):
    # x (B, T, H)
    P = lambda name: params[prefix + name]  # noqa: E731  (short local alias keeps the lines readable)
    p_hidden = config.hidden_dropout_prob
    act_forward, _ = get_activation(config.hidden_act)

    # --- self-attention block
    ctx, probs, c_attn = self_attention_forward(x, params, prefix + "attention.self.", additive_mask,
                                                config.num_attention_heads, config.attention_probs_dropout_prob,
                                                rng, training)  # (B, T, H)
    attn_out, c_ao = linear_forward(ctx, P("attention.output.dense.weight"),
                                    P("attention.output.dense.bias"))  # (B, T, H)
    # DistilBERT has no dropout after the attention's output projection (its config says so)
    p_ao = p_hidden if getattr(config, "attention_output_dropout", True) else 0.0
    attn_out, m_ao = dropout_forward(attn_out, p_ao, rng, training)  # (B, T, H)
    attn_out += x  # residual
    h, c_ln1 = layernorm_forward(attn_out, P("attention.output.LayerNorm.weight"),
                                 P("attention.output.LayerNorm.bias"), config.layer_norm_eps)  # (B, T, H)

    # --- feed-forward block
    f, c_in = linear_forward(h, P("intermediate.dense.weight"), P("intermediate.dense.bias"))  # (B, T, F)
    f, c_act = act_forward(f)  # (B, T, F)
    ffn_out, c_out = linear_forward(f, P("output.dense.weight"), P("output.dense.bias"))  # (B, T, H)
    ffn_out, m_out = dropout_forward(ffn_out, p_hidden, rng, training)  # (B, T, H)
    ffn_out += h  # residual
    out, c_ln2 = layernorm_forward(ffn_out, P("output.LayerNorm.weight"), P("output.LayerNorm.bias"),
                                   config.layer_norm_eps)  # (B, T, H)
    cache = (c_attn, c_ao, m_ao, c_ln1, c_in, c_act, c_out, m_out, c_ln2)
    return out, probs, cache


def encoder_layer_backward(dout, cache, params, grads, prefix, config):
    """Exact reverse of encoder_layer_forward; returns dx (B, T, H)."""
    c_attn, c_ao, m_ao, c_ln1, c_in, c_act, c_out, m_out, c_ln2 = cache
    P = lambda name: params[prefix + name]  # noqa: E731
    G = lambda name: grads[prefix + name]  # noqa: E731
    _, act_backward = get_activation(config.hidden_act)

    # --- feed-forward block, backwards
    d_sum2 = layernorm_backward(dout, c_ln2, P("output.LayerNorm.weight"), G("output.LayerNorm.weight"),
                                G("output.LayerNorm.bias"))  # (B, T, H) gradient of h + ffn_out
    d_ffn_out = dropout_backward(d_sum2, m_out)  # (B, T, H)
    df = linear_backward(d_ffn_out, c_out, P("output.dense.weight"), G("output.dense.weight"),
                         G("output.dense.bias"))  # (B, T, F)
    df = act_backward(df, c_act)  # (B, T, F)
    dh = linear_backward(df, c_in, P("intermediate.dense.weight"), G("intermediate.dense.weight"),
                         G("intermediate.dense.bias"))  # (B, T, H) through the feed-forward branch
    dh += d_sum2  # (B, T, H) residual branch: the gradient reaches h directly too

    # --- self-attention block, backwards
    d_sum1 = layernorm_backward(dh, c_ln1, P("attention.output.LayerNorm.weight"),
                                G("attention.output.LayerNorm.weight"),
                                G("attention.output.LayerNorm.bias"))  # (B, T, H) gradient of x + attn_out
    d_attn_out = dropout_backward(d_sum1, m_ao)  # (B, T, H)
    dctx = linear_backward(d_attn_out, c_ao, P("attention.output.dense.weight"), G("attention.output.dense.weight"),
                           G("attention.output.dense.bias"))  # (B, T, H)
    dx = self_attention_backward(dctx, c_attn, grads, prefix + "attention.self.")  # (B, T, H) through attention
    dx += d_sum1  # (B, T, H) residual
    return dx
