"""The task heads on top of the encoder.

- pooler:  tanh(h[:, 0] Wp^T + bp), "bert.pooler.dense"                       (B, H)
- MLM:     LayerNorm(act(h Wt^T + bt)) E^T + b, "cls.predictions.*"           (M, V)
           E is the word-embedding matrix: the decoder is tied to the input embeddings, so the same
           matrix reads tokens in and writes them out, and its gradient gets both contributions.
- NSP:     pooled Wn^T + bn, "cls.seq_relationship"                            (B, 2)
"""

from minibert.layers.activations import get_activation, tanh_backward, tanh_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


def pooler_forward(h, params, prefix):
    # h (B, T, H) -> pooled (B, H): the [CLS] token's final state through dense + tanh
    z, c_lin = linear_forward(h[:, 0], params[prefix + "pooler.dense.weight"], params[prefix + "pooler.dense.bias"])
    pooled, c_tanh = tanh_forward(z)
    return pooled, (c_lin, c_tanh)


def pooler_backward(dpooled, cache, params, grads, prefix):
    """Returns the gradient w.r.t. the [CLS] token's final state, (B, H); the caller adds it into dh[:, 0]."""
    c_lin, c_tanh = cache
    dz = tanh_backward(dpooled, c_tanh)  # (B, H)
    return linear_backward(dz, c_lin, params[prefix + "pooler.dense.weight"], grads[prefix + "pooler.dense.weight"],
                           grads[prefix + "pooler.dense.bias"])  # (B, H)


def mlm_head_forward(h, params, bert_prefix, config):
    # h (M, H): the positions to predict -> logits (M, V)
    act_forward, _ = get_activation(config.mlm_head_act)
    t, c1 = linear_forward(h, params["cls.predictions.transform.dense.weight"],
                           params["cls.predictions.transform.dense.bias"])  # (M, H)
    t, c2 = act_forward(t)  # (M, H)
    t, c3 = layernorm_forward(t, params["cls.predictions.transform.LayerNorm.weight"],
                              params["cls.predictions.transform.LayerNorm.bias"], config.layer_norm_eps)  # (M, H)
    logits, c4 = linear_forward(t, params[bert_prefix + WORD_EMBEDDINGS], params["cls.predictions.bias"])  # (M, V)
    return logits, (c1, c2, c3, c4)


def mlm_head_backward(dlogits, cache, params, grads, bert_prefix, config):
    c1, c2, c3, c4 = cache
    _, act_backward = get_activation(config.mlm_head_act)
    dt = linear_backward(dlogits, c4, params[bert_prefix + WORD_EMBEDDINGS], grads[bert_prefix + WORD_EMBEDDINGS],
                         grads["cls.predictions.bias"])  # (M, H); the tied matrix's decoder share
    dt = layernorm_backward(dt, c3, params["cls.predictions.transform.LayerNorm.weight"],
                            grads["cls.predictions.transform.LayerNorm.weight"],
                            grads["cls.predictions.transform.LayerNorm.bias"])
    dt = act_backward(dt, c2)
    return linear_backward(dt, c1, params["cls.predictions.transform.dense.weight"],
                           grads["cls.predictions.transform.dense.weight"],
                           grads["cls.predictions.transform.dense.bias"])  # (M, H)


def nsp_head_forward(pooled, params):
    # pooled (B, H) -> (B, 2): "is segment B the real next segment?"
    return linear_forward(pooled, params["cls.seq_relationship.weight"], params["cls.seq_relationship.bias"])


def nsp_head_backward(dlogits, cache, params, grads):
    return linear_backward(dlogits, cache, params["cls.seq_relationship.weight"],
                           grads["cls.seq_relationship.weight"], grads["cls.seq_relationship.bias"])
