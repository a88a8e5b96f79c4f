"""DistilBertForSequenceClassification, as transformers has it:

    logits = dropout(relu(h[:, 0] Wp^T + bp)) W^T + b     "pre_classifier" (H, H), "classifier" (C, H)

DistilBERT has no pooler: its head reads the [CLS] token's final state through `pre_classifier` and a ReLU (not
tanh), with dropout `seq_classif_dropout` (config.json). Everything else (labels, problem types, losses) is
BertForSequenceClassification's.
"""

from __future__ import annotations

import numpy as np

from minibert.layers.activations import relu_backward, relu_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.models.bert import BertEncoder
from minibert.models.classification import BertForSequenceClassification
from minibert.models.distilbert import _check_config, _DistilBertNames


class DistilBertForSequenceClassification(_DistilBertNames, BertForSequenceClassification):
    """DistilBERT + its classification head on [CLS] (pre_classifier, ReLU, dropout, classifier): `.logits` (B, C)
    (transformers' DistilBertForSequenceClassification, same names); forward, labels and losses as
    BertForSequenceClassification's, token_type_ids ignored (DistilBERT has none)."""

    base_prefix = "distilbert."
    dropout_key = "seq_classif_dropout"
    # the task head, new when fine-tuning for new labels: DistilBERT's has two layers
    head_names = ("classifier.weight", "classifier.bias", "pre_classifier.weight", "pre_classifier.bias")

    def __init__(self, config, num_labels=None, seed=0, dtype=np.float32, init_weights=True):
        _check_config(config)
        self._make_names(config)
        super().__init__(config, num_labels=num_labels, seed=seed, dtype=dtype, init_weights=init_weights)
        self.bert = self.distilbert = BertEncoder(self, "bert.", pooler=False)  # .bert: the shared code's name

    def param_shapes(self):
        """Every parameter's DistilBERT name -> shape: the encoder's, then the two-layer head's."""
        H = self.config.hidden_size
        return {**self._shapes, "pre_classifier.weight": (H, H), "pre_classifier.bias": (H,),
                "classifier.weight": (self.num_labels, H), "classifier.bias": (self.num_labels,)}

    def _pool_forward(self, out):
        h = out.last_hidden_state  # (B, T, H), or (B, H): the [CLS] rows only (the sparse last layer)
        cls = h[:, 0] if h.ndim == 3 else h  # (B, H)
        z, c_lin = linear_forward(cls, self.params["pre_classifier.weight"],
                                  self.params["pre_classifier.bias"])  # (B, H)
        pooled, c_relu = relu_forward(z)  # (B, H)
        return pooled, (c_lin, c_relu, h.shape)

    def _pool_backward(self, dpooled, cache):
        c_lin, c_relu, shape = cache
        dz = relu_backward(dpooled, c_relu)  # (B, H)
        d_cls = linear_backward(dz, c_lin, self.params["pre_classifier.weight"], self.grads["pre_classifier.weight"],
                                self.grads["pre_classifier.bias"])  # (B, H)
        self._cls_backward(d_cls, shape)
