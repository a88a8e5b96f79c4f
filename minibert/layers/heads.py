"""The task heads on top of the encoder.

- pooler:  tanh(h[:, 0] Wp^T + bp), "bert.pooler.dense"                       (B, H)
- MLM:     LayerNorm(act(h Wt^T + bt)) E^T + b, "cls.predictions.*"           (M, V)
           E is the word-embedding matrix: the decoder is tied to the input embeddings, so the same
           matrix reads tokens in and writes them out, and its gradient gets both contributions.
- NSP:     pooled Wn^T + bn, "cls.seq_relationship"                            (B, 2)
- RTD:     act(h Wd^T + bd) Wp^T + bp, "discriminator_predictions.*"          (N,)
           ELECTRA's replaced-token detection: one logit per token, "was this token replaced?"

The MLM head's parameter names and activation come from `MlmHeadNames`: BERT's (`bert_mlm_names`) or ELECTRA's
generator head (`ELECTRA_GENERATOR_HEAD`: dense H -> E, always exact GELU, LayerNorm over E, decoder tied to the
E-wide word embeddings), the same computation under other names.
"""

from typing import NamedTuple

from minibert.layers.activations import get_activation, tanh_backward, tanh_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward

WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"


class MlmHeadNames(NamedTuple):
    dense: str  # transform Linear (without .weight/.bias)
    layer_norm: str  # transform LayerNorm
    bias: str  # the decoder's output bias (V,)
    decoder: str  # the tied decoder matrix: the word embeddings (V, E)
    activation: str | None  # None: the config's mlm_head_act


def bert_mlm_names(bert_prefix):
    return MlmHeadNames("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                        "cls.predictions.bias", bert_prefix + WORD_EMBEDDINGS, None)


# Hugging Face's ElectraGeneratorPredictions hard-codes get_activation("gelu"), whatever hidden_act says.
ELECTRA_GENERATOR_HEAD = MlmHeadNames("generator_predictions.dense", "generator_predictions.LayerNorm",
                                      "generator_lm_head.bias", "electra." + WORD_EMBEDDINGS, "gelu")


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


def mlm_head_forward(h, params, bert_prefix, config, names=None):
    # h (M, H): the positions to predict -> logits (M, V)
    n = names or bert_mlm_names(bert_prefix)
    act_forward, _ = get_activation(n.activation or config.mlm_head_act)
    t, c1 = linear_forward(h, params[n.dense + ".weight"], params[n.dense + ".bias"])  # (M, E), E = H in BERT
    t, c2 = act_forward(t)  # (M, E)
    t, c3 = layernorm_forward(t, params[n.layer_norm + ".weight"], params[n.layer_norm + ".bias"],
                              config.layer_norm_eps)  # (M, E)
    logits, c4 = linear_forward(t, params[n.decoder], params[n.bias])  # (M, V)
    return logits, (c1, c2, c3, c4)


def mlm_head_backward(dlogits, cache, params, grads, bert_prefix, config, names=None):
    c1, c2, c3, c4 = cache
    n = names or bert_mlm_names(bert_prefix)
    _, act_backward = get_activation(n.activation or config.mlm_head_act)
    dt = linear_backward(dlogits, c4, params[n.decoder], grads[n.decoder], grads[n.bias])  # (M, E); the tied
    # matrix's decoder share
    dt = layernorm_backward(dt, c3, params[n.layer_norm + ".weight"], grads[n.layer_norm + ".weight"],
                            grads[n.layer_norm + ".bias"])
    dt = act_backward(dt, c2)
    return linear_backward(dt, c1, params[n.dense + ".weight"], grads[n.dense + ".weight"],
                           grads[n.dense + ".bias"])  # (M, H)


def nsp_head_forward(pooled, params):
    # pooled (B, H) -> (B, 2): "is segment B the real next segment?"
    return linear_forward(pooled, params["cls.seq_relationship.weight"], params["cls.seq_relationship.bias"])


def nsp_head_backward(dlogits, cache, params, grads):
    return linear_backward(dlogits, cache, params["cls.seq_relationship.weight"],
                           grads["cls.seq_relationship.weight"], grads["cls.seq_relationship.bias"])


RTD = "discriminator_predictions."


def rtd_head_forward(h, params, config):
    # h (..., H) -> logits (...,): ElectraDiscriminatorPredictions, dense H -> H, hidden_act, dense H -> 1
    act_forward, _ = get_activation(config.hidden_act)
    z, c1 = linear_forward(h, params[RTD + "dense.weight"], params[RTD + "dense.bias"])  # (..., H)
    a, c2 = act_forward(z)  # (..., H)
    logits, c3 = linear_forward(a, params[RTD + "dense_prediction.weight"], params[RTD + "dense_prediction.bias"])
    return logits[..., 0], (c1, c2, c3)  # (...,): the squeeze(-1) of Hugging Face


def rtd_head_backward(dlogits, cache, params, grads, config):
    c1, c2, c3 = cache
    _, act_backward = get_activation(config.hidden_act)
    da = linear_backward(dlogits[..., None], c3, params[RTD + "dense_prediction.weight"],
                         grads[RTD + "dense_prediction.weight"], grads[RTD + "dense_prediction.bias"])  # (..., H)
    dz = act_backward(da, c2)
    return linear_backward(dz, c1, params[RTD + "dense.weight"], grads[RTD + "dense.weight"],
                           grads[RTD + "dense.bias"])  # (..., H)
