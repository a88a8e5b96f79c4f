"""ELECTRA's two models, with Hugging Face's names (transformers' modeling_electra.py):

- ElectraForPreTraining, the discriminator: the BERT body under "electra." (no pooler; an `embeddings_project`
  Linear E -> H when embedding_size E differs from hidden_size H), then the replaced-token-detection head
  (heads.rtd_head_forward): one logit per token. Loss: sigmoid BCE over the tokens with attention_mask 1.
- ElectraForMaskedLM, the generator: the same body, then the MLM head under ELECTRA's names
  ("generator_predictions.dense" H -> E, exact GELU, "generator_predictions.LayerNorm" over E,
  "generator_lm_head" tied to the E-wide word embeddings). It is BertForMaskedLM with other names.

`generator_config` sizes the generator as the paper does: hidden size a fraction of the discriminator's (1/4 in
ELECTRA-Small) in heads of the discriminator's head size, feed-forward 4 x hidden, the same depth, and the
discriminator's embedding size, so that the two can share one set of embedding tables.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from minibert.layers.heads import ELECTRA_GENERATOR_HEAD, RTD, rtd_head_backward, rtd_head_forward
from minibert.layers.loss import bce_with_logits_backward, bce_with_logits_forward
from minibert.models.base import Model, needs_forward
from minibert.models.bert import BertEncoder, bert_param_shapes
from minibert.models.checks import check_inputs, fit_shape
from minibert.models.outputs import ModelOutput
from minibert.models.pretraining import BertForMaskedLM

PREFIX = "electra."
PROJECT = "embeddings_project"  # ElectraModel's E -> H Linear


def electra_body_shapes(config):
    return bert_param_shapes(config, PREFIX, pooler=False, project_name=PROJECT)


def discriminator_shapes(config):
    H = config.hidden_size
    shapes = electra_body_shapes(config)
    shapes.update({RTD + "dense.weight": (H, H), RTD + "dense.bias": (H,),
                   RTD + "dense_prediction.weight": (1, H), RTD + "dense_prediction.bias": (1,)})
    return shapes


def generator_shapes(config):
    H, E, n = config.hidden_size, config.embedding_width, ELECTRA_GENERATOR_HEAD
    shapes = electra_body_shapes(config)
    shapes.update({n.dense + ".weight": (E, H), n.dense + ".bias": (E,), n.layer_norm + ".weight": (E,),
                   n.layer_norm + ".bias": (E,), n.bias: (config.vocab_size,)})
    return shapes


def generator_config(config, fraction: float = 0.25):
    """The generator's config for a discriminator `config`: hidden = fraction x H, rounded to whole heads of the
    discriminator's head size (at least one), intermediate 4 x hidden, same depth, same embedding width."""
    if not 0 < fraction <= 1:
        raise ValueError(f"generator size fraction must be in (0, 1], got {fraction!r}")
    D = config.head_size
    heads = max(1, round(config.hidden_size * fraction / D))
    return dataclasses.replace(config, hidden_size=heads * D, num_attention_heads=heads,
                               intermediate_size=4 * heads * D, embedding_size=config.embedding_width,
                               extra={})


class _ElectraConfigFields:
    model_type = "electra"
    project_name = PROJECT

    def hf_config_fields(self):
        """What save_pretrained writes into config.json beyond BERT's fields: transformers then builds an
        ElectraConfig, whose embedding_size must be a number (ours may be None: the hidden size)."""
        return {"model_type": "electra", "embedding_size": self.config.embedding_width}


class ElectraForPreTraining(_ElectraConfigFields, Model):
    """The discriminator: `.logits` (B, T), one "was this token replaced?" score per token; with labels (B, T) of
    0/1, `.loss` = BCE over the non-padding tokens (Hugging Face's ElectraForPreTraining)."""

    base_prefix = PREFIX

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.electra = BertEncoder(self, PREFIX, pooler=False, project_name=PROJECT)
        self._cache = None

    def param_shapes(self):
        return discriminator_shapes(self.config)

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, output_attentions=False,
                output_hidden_states=False):
        self._cache = None
        input_ids, token_type_ids, attention_mask = check_inputs(self.config, input_ids, token_type_ids,
                                                                 attention_mask)
        if labels is not None:
            labels = fit_shape(labels, input_ids.shape, "ElectraForPreTraining labels")  # (never from another shape)
            if not np.isin(labels, (0, 1)).all():
                raise ValueError(f"ElectraForPreTraining labels must be 0 (original) / 1 (replaced) with the shape "
                                 f"of input_ids {input_ids.shape}, got shape {np.shape(labels)}")
        out = self.electra.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                   output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        logits, c_head = rtd_head_forward(out.last_hidden_state, self.params, self.config)  # (B, T)
        loss = c_bce = None
        if labels is not None:
            active = np.ones(input_ids.size, bool) if attention_mask is None else attention_mask.reshape(-1) == 1
            loss, c_bce = bce_with_logits_forward(logits.reshape(-1), labels.reshape(-1), active)
        self._cache = (c_head, c_bce, logits.shape)
        return ModelOutput(loss=loss, logits=logits, attentions=out.attentions, hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0):
        """Accumulate d(loss_scale * loss)/d(param) into `grads`."""
        if self._cache is None or self._cache[1] is None:
            raise needs_forward("a forward() with labels")
        c_head, c_bce, shape = self._cache
        dlogits = bce_with_logits_backward(c_bce, loss_scale).reshape(shape)  # (B, T)
        self.electra.backward(rtd_head_backward(dlogits, c_head, self.params, self.grads, self.config))
        self._cache = None


class ElectraForMaskedLM(_ElectraConfigFields, BertForMaskedLM):
    """The generator: BertForMaskedLM's computation (sparse prediction with labels) under ELECTRA's names."""

    base_prefix = PREFIX
    mlm_names = ELECTRA_GENERATOR_HEAD

    @property
    def electra(self):  # Hugging Face's attribute name for the body
        return self.bert

    def param_shapes(self):
        return generator_shapes(self.config)
