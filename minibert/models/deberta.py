"""DeBERTa-v2/v3 (transformers' DebertaV2*): BERT's encoder with the disentangled attention, under Hugging Face's
names.

What differs from BERT, and where it lives:
- the attention adds content-to-position and position-to-content scores read from relative-position embeddings
  (layers/disentangled_attention.py), normalised once per forward by encoder.LayerNorm and shared by the layers;
- the embeddings may have no absolute positions (position_biased_input false) nor token types (type_vocab_size
  0), and are multiplied by the attention mask after their LayerNorm (layers/embedding.py);
- DebertaV2Model has no pooler; the sequence classifier's ContextPooler is GELU(dense(h[CLS])) (dropout
  pooler_dropout before the dense), not BERT's tanh;
- the masked-LM head is BERT's (transformers' legacy head: cls.predictions, decoder tied to the word embeddings).
Everything else (post-LN layer, feed-forward, losses, the sparse last layer, recompute) is BERT's code, run on
these names:

    deberta.embeddings.word_embeddings / position_embeddings / token_type_embeddings / LayerNorm
    deberta.encoder.layer.N.attention.self.{query_proj,key_proj,value_proj,pos_key_proj,pos_query_proj}
    deberta.encoder.layer.N.attention.output.{dense,LayerNorm}, .intermediate.dense, .output.{dense,LayerNorm}
    deberta.encoder.rel_embeddings.weight (2S, H), deberta.encoder.LayerNorm
    cls.predictions.{transform.dense,transform.LayerNorm,bias}; pooler.dense, classifier; qa_outputs

(The bare DebertaV2Model has no "deberta." prefix.) transformers does not run the paper's Enhanced Mask Decoder
(its DebertaV2Model has z_steps = 0), and neither does minibert.
"""

from __future__ import annotations

import numpy as np

from minibert.deberta_config import DebertaV2Config
from minibert.layers.activations import get_activation
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.models.base import check_config_type
from minibert.models.bert import BertEncoder, BertModel
from minibert.models.classification import BertForSequenceClassification
from minibert.models.pretraining import BertForMaskedLM, mlm_head_shapes
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification

PREFIX = "deberta."


def deberta_param_shapes(config, prefix=""):
    """Name -> shape of every DebertaV2Model parameter, in transformers' state-dict order."""
    H, F = config.hidden_size, config.intermediate_size
    shapes = {prefix + "embeddings.word_embeddings.weight": (config.vocab_size, H)}
    if config.position_biased_input:
        shapes[prefix + "embeddings.position_embeddings.weight"] = (config.max_position_embeddings, H)
    if config.type_vocab_size > 0:
        shapes[prefix + "embeddings.token_type_embeddings.weight"] = (config.type_vocab_size, H)
    shapes[prefix + "embeddings.LayerNorm.weight"] = (H,)
    shapes[prefix + "embeddings.LayerNorm.bias"] = (H,)
    projections = ("query_proj", "key_proj", "value_proj", *config.separate_position_projections)
    for i in range(config.num_hidden_layers):
        p = f"{prefix}encoder.layer.{i}."
        for name in projections:
            shapes[p + f"attention.self.{name}.weight"] = (H, H)
            shapes[p + f"attention.self.{name}.bias"] = (H,)
        for name, shape in (("attention.output.dense.weight", (H, H)), ("attention.output.dense.bias", (H,)),
                            ("attention.output.LayerNorm.weight", (H,)), ("attention.output.LayerNorm.bias", (H,)),
                            ("intermediate.dense.weight", (F, H)), ("intermediate.dense.bias", (F,)),
                            ("output.dense.weight", (H, F)), ("output.dense.bias", (H,)),
                            ("output.LayerNorm.weight", (H,)), ("output.LayerNorm.bias", (H,))):
            shapes[p + name] = shape
    if config.relative_attention:
        shapes[prefix + "encoder.rel_embeddings.weight"] = (2 * config.relative_span, H)
    if config.normalise_rel_embeddings:
        shapes[prefix + "encoder.LayerNorm.weight"] = (H,)
        shapes[prefix + "encoder.LayerNorm.bias"] = (H,)
    return shapes


class _DebertaNames:
    """Mixin: a DebertaV2Config, the body under "deberta." (bare: none), checkpoints of model_type deberta-v2."""

    base_prefix = PREFIX
    family_prefix = PREFIX  # what checkpoint loading adds or strips between bare and task models
    model_type = "deberta-v2"

    @classmethod
    def expected_shapes(cls, config):
        """Every parameter's shape from the config alone (checked against a checkpoint before building)."""
        return deberta_param_shapes(config, cls.base_prefix)

    def _body(self):
        """The shared encoder on DeBERTa's names, without BERT's pooler; .deberta is transformers' name."""
        self.bert = self.deberta = BertEncoder(self, self.base_prefix, pooler=False)

    def _extra_shapes(self):
        return {}

    def param_shapes(self):
        """Every parameter's Hugging Face name -> shape: the body's (deberta_param_shapes), then the head's."""
        return {**deberta_param_shapes(self.config, self.base_prefix), **self._extra_shapes()}


def _check_config(config):
    check_config_type(config, DebertaV2Config)


class DebertaV2Model(_DebertaNames, BertModel):
    """The bare DeBERTa encoder: `.last_hidden_state` (B, T, H); no pooler (pooler_output is None). forward as
    BertModel.forward; token_type_ids are ignored when type_vocab_size is 0."""

    base_prefix = ""

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        super().__init__(config, seed=seed, dtype=dtype, add_pooling_layer=False, init_weights=init_weights)


class DebertaV2ForMaskedLM(_DebertaNames, BertForMaskedLM):
    """DeBERTa with transformers' legacy MLM head (cls.predictions: dense, hidden_act, LayerNorm, decoder tied to
    the word embeddings); forward and backward as BertForMaskedLM (sparse prediction with labels)."""

    has_pooler = False

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self._body()

    def _extra_shapes(self):
        return mlm_head_shapes(self.config)

    @classmethod
    def expected_shapes(cls, config):
        """Every parameter's shape from the config alone: the body's and the MLM head's."""
        return {**deberta_param_shapes(config, cls.base_prefix), **mlm_head_shapes(config)}

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, next_sentence_label=None,
                output_attentions=False, output_hidden_states=False):
        """As BertForMaskedLM.forward; the output also names the loss `.mlm_loss`, so that pre-training's loop
        (which asks BertForPreTraining for it) trains this model too. DeBERTa has no sentence-pair head:
        next_sentence_label must be None."""
        if next_sentence_label is not None:
            raise ValueError("DebertaV2ForMaskedLM has no next-sentence head: pre-train it with objective mlm")
        out = super().forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask, labels=labels,
                              output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        out["mlm_loss"] = out.loss
        return out

    __call__ = forward

    def backward(self, loss_scale=1.0, d_logits=None, d_last_hidden_state=None, mlm_scale=None):
        """As BertForMaskedLM.backward; mlm_scale (data-parallel pre-training's weight of this rank's masked
        tokens), when given, replaces loss_scale: the loss is all MLM."""
        super().backward(loss_scale if mlm_scale is None else mlm_scale, d_logits, d_last_hidden_state)


class DebertaV2ForSequenceClassification(_DebertaNames, BertForSequenceClassification):
    """DeBERTa + transformers' ContextPooler and a linear classifier: logits = dropout(GELU(dense(dropout(h[CLS]))))
    W^T + b (pooler.dense (H, H), classifier (C, H)); labels and losses as BertForSequenceClassification's. The
    classifier's dropout is config cls_dropout, else hidden_dropout_prob; the pooler's is pooler_dropout."""

    dropout_key = "cls_dropout"
    head_names = ("classifier.weight", "classifier.bias", "pooler.dense.weight", "pooler.dense.bias")

    def __init__(self, config, num_labels=None, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        super().__init__(config, num_labels=num_labels, seed=seed, dtype=dtype, init_weights=init_weights)
        self._body()

    def _extra_shapes(self):
        H = self.config.hidden_size
        return {"pooler.dense.weight": (H, H), "pooler.dense.bias": (H,),
                "classifier.weight": (self.num_labels, H), "classifier.bias": (self.num_labels,)}

    def _pool_forward(self, out):
        h = out.last_hidden_state  # (B, T, H), or (B, H): the [CLS] rows only (the sparse last layer)
        cls = h[:, 0] if h.ndim == 3 else h  # (B, H)
        act_forward, _ = get_activation(self.config.pooler_hidden_act)
        x, m_drop = dropout_forward(cls, float(self.config.pooler_dropout), self.rng, self.training)  # (B, H)
        z, c_lin = linear_forward(x, self.params["pooler.dense.weight"], self.params["pooler.dense.bias"])  # (B, H)
        pooled, c_act = act_forward(z)  # (B, H)
        return pooled, (m_drop, c_lin, c_act, h.shape)

    def _pool_backward(self, dpooled, cache):
        m_drop, c_lin, c_act, shape = cache
        _, act_backward = get_activation(self.config.pooler_hidden_act)
        dz = act_backward(dpooled, c_act)  # (B, H)
        d_cls = linear_backward(dz, c_lin, self.params["pooler.dense.weight"], self.grads["pooler.dense.weight"],
                                self.grads["pooler.dense.bias"])  # (B, H)
        d_cls = dropout_backward(d_cls, m_drop)
        self._cls_backward(d_cls, shape)


class DebertaV2ForTokenClassification(_DebertaNames, BertForTokenClassification):
    """DeBERTa + a linear layer on every token (transformers' DebertaV2ForTokenClassification): as
    BertForTokenClassification."""

    def __init__(self, config, num_labels=None, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        super().__init__(config, num_labels=num_labels, seed=seed, dtype=dtype, init_weights=init_weights)
        self._body()

    def _extra_shapes(self):
        return {"classifier.weight": (self.num_labels, self.config.hidden_size),
                "classifier.bias": (self.num_labels,)}


class DebertaV2ForQuestionAnswering(_DebertaNames, BertForQuestionAnswering):
    """DeBERTa + a start and an end score per token (qa_outputs), as BertForQuestionAnswering."""

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self._body()

    def _extra_shapes(self):
        return {"qa_outputs.weight": (self.num_outputs, self.config.hidden_size),
                "qa_outputs.bias": (self.num_outputs,)}
