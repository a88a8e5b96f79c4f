"""DistilBertModel and DistilBertForMaskedLM: BERT's encoder and MLM head under DistilBERT's Hugging Face names.

DistilBERT's layer is BERT's post-LN layer (without the dropout after the attention output, see
distilbert_config.py); it has no token-type embeddings and no pooler. So these models run the shared
`BertEncoder` and MLM head unchanged: their parameters are stored under DistilBERT's names (what
transformers' DistilBertModel / DistilBertForMaskedLM state dicts hold), and the shared code reads them through
`bert_view`, which renames on the fly with one table (BERT-style name -> DistilBERT name):

    bert.embeddings.{word,position}_embeddings, .LayerNorm    distilbert.embeddings.(same)
    bert.encoder.layer.N.attention.self.{query,key,value}     distilbert.transformer.layer.N.attention.{q,k,v}_lin
    bert.encoder.layer.N.attention.output.dense               distilbert.transformer.layer.N.attention.out_lin
    bert.encoder.layer.N.attention.output.LayerNorm           distilbert.transformer.layer.N.sa_layer_norm
    bert.encoder.layer.N.intermediate.dense / output.dense    distilbert.transformer.layer.N.ffn.lin1 / lin2
    bert.encoder.layer.N.output.LayerNorm                     distilbert.transformer.layer.N.output_layer_norm
    cls.predictions.transform.dense / .LayerNorm / .bias      vocab_transform / vocab_layer_norm / vocab_projector.bias

(The bare DistilBertModel has "" for "bert." and "distilbert.".) The MLM decoder `vocab_projector.weight` is
the word-embedding matrix (tied), as in BERT.
"""

from __future__ import annotations

import numpy as np

from minibert.distilbert_config import DistilBertConfig
from minibert.models.base import check_config_type
from minibert.models.bert import BertModel, bert_param_shapes
from minibert.models.pretraining import BertForMaskedLM, mlm_head_shapes

LAYER_NAMES = {
    "attention.self.query.": "attention.q_lin.", "attention.self.key.": "attention.k_lin.",
    "attention.self.value.": "attention.v_lin.", "attention.output.dense.": "attention.out_lin.",
    "attention.output.LayerNorm.": "sa_layer_norm.", "intermediate.dense.": "ffn.lin1.",
    "output.dense.": "ffn.lin2.", "output.LayerNorm.": "output_layer_norm.",
}
HEAD_NAMES = {
    "cls.predictions.transform.dense.": "vocab_transform.", "cls.predictions.transform.LayerNorm.": "vocab_layer_norm.",
    "cls.predictions.bias": "vocab_projector.bias",
}
TIED_DECODER = "vocab_projector.weight"


def distilbert_name(bert_name: str, bert_prefix: str, prefix: str) -> str:
    """The DistilBERT name of a BERT-style parameter name (one of the table in the module docstring)."""
    for old, new in HEAD_NAMES.items():
        if bert_name.startswith(old):
            return new + bert_name[len(old):]
    if not bert_name.startswith(bert_prefix):
        raise KeyError(bert_name)
    rest = bert_name[len(bert_prefix):]
    if rest.startswith("embeddings."):
        return prefix + rest
    layer, dot, tail = rest.partition(".layer.")[2].partition(".")  # "3", ".", "attention.self.query.weight"
    for old, new in LAYER_NAMES.items():
        if tail.startswith(old):
            return f"{prefix}transformer.layer.{layer}.{new}{tail[len(old):]}"
    raise KeyError(bert_name)


def distilbert_names(config, bert_prefix: str, prefix: str, mlm_head: bool) -> dict[str, str]:
    """BERT-style name -> DistilBERT name for every parameter, in Hugging Face's state-dict order."""
    shapes = bert_param_shapes(config, bert_prefix, pooler=False)
    names = [n for n in shapes if not n.endswith("token_type_embeddings.weight")]
    if mlm_head:
        names += [n for n in mlm_head_shapes(config) if n != "cls.predictions.bias"] + ["cls.predictions.bias"]
    return {n: distilbert_name(n, bert_prefix, prefix) for n in names}


def bert_style_shapes(config, bert_prefix: str, mlm_head: bool) -> dict[str, tuple]:
    shapes = bert_param_shapes(config, bert_prefix, pooler=False)
    if mlm_head:
        shapes.update(mlm_head_shapes(config))
    return shapes


class RenamedArrays:
    """A name -> array dict seen under other names: view[bert_name] is arrays[names[bert_name]]. The arrays are
    shared; assigning (`view[k] += g` ends in one) writes into the model's own array, in place."""

    def __init__(self, arrays, names: dict[str, str]):
        self.arrays, self.names = arrays, names

    def __getitem__(self, name):
        return self.arrays[self.names[name]]

    def __setitem__(self, name, value):
        target = self[name]
        if value is not target:
            target[...] = value

    def __contains__(self, name):
        return name in self.names


def _check_config(config):
    check_config_type(config, DistilBertConfig)


class _DistilBertNames:
    """Mixin: parameters under DistilBERT's names, read by the shared BERT code through the table."""

    mlm_head = False
    model_type = "distilbert"  # the config.json model_type it loads
    family_prefix = "distilbert."  # what map_keys adds or strips between bare and task checkpoints
    decoder_weight_key = TIED_DECODER

    def _make_names(self, config):
        bert_prefix = "bert." if self.base_prefix else ""
        self.bert_names = distilbert_names(config, bert_prefix, self.base_prefix, self.mlm_head)
        self._shapes = self.expected_shapes(config)

    def param_shapes(self):
        """Every parameter's DistilBERT name -> shape, in transformers' state-dict order."""
        return self._shapes

    def bert_view(self, arrays):
        """`params` or `grads` read by BERT's names (the shared layers' code): a renaming view, same arrays."""
        return RenamedArrays(arrays, self.bert_names)

    @classmethod
    def expected_shapes(cls, config):
        """Every parameter's shape from the config alone (checked against a checkpoint before building)."""
        bert_prefix = "bert." if cls.base_prefix else ""
        names = distilbert_names(config, bert_prefix, cls.base_prefix, cls.mlm_head)
        shapes = bert_style_shapes(config, bert_prefix, cls.mlm_head)
        return {names[n]: shapes[n] for n in names}


class DistilBertModel(_DistilBertNames, BertModel):
    """The bare DistilBERT encoder: `.last_hidden_state` (B, T, H); no pooler (pooler_output is None). forward as
    BertModel.forward; token_type_ids, when given, are ignored (DistilBERT has no token types), so a tokenizer's
    whole batch passes as `model(**batch)`."""

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        self._make_names(config)
        super().__init__(config, seed=seed, dtype=dtype, add_pooling_layer=False, init_weights=init_weights)


class DistilBertForMaskedLM(_DistilBertNames, BertForMaskedLM):
    """DistilBERT with its MLM head (vocab_transform, vocab_layer_norm, vocab_projector tied to the word
    embeddings); forward and backward as BertForMaskedLM (sparse prediction with labels), token_type_ids ignored."""

    base_prefix = "distilbert."
    mlm_head = True
    has_pooler = False
    mlm_bias_key = "vocab_projector.bias"
    view_prefix = "bert."  # the shared code reads "bert.*" names through bert_view

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        self._make_names(config)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.distilbert = self.bert  # Hugging Face's attribute name; .bert is what the shared code uses
