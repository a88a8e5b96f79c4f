"""BertForTokenClassification: BERT + one linear layer on every token's final vector (NER, POS tagging).

    logits = dropout(h) W^T + b          h (B, T, H), W "classifier.weight" (C, H), b "classifier.bias" (C,)

The loss is the cross-entropy over all positions whose label is not -100 (padding, [CLS]/[SEP] and the
non-first pieces of a word carry -100). As in Hugging Face the body has no pooler; the names match
`transformers.BertForTokenClassification`, so a saved model loads there unchanged.
"""

from __future__ import annotations

import numpy as np

from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.layers.loss import cross_entropy_backward, cross_entropy_forward
from minibert.models.base import Model, check_grad, needs_forward
from minibert.models.bert import BertEncoder, bert_param_shapes
from minibert.models.checks import check_labels
from minibert.models.labels import ClassLabels, classifier_dropout_of
from minibert.models.outputs import ModelOutput


class BertForTokenClassification(ClassLabels, Model):
    """BERT + a linear layer on every token's final vector (NER, POS tagging): `.logits` (B, T, C), one score per
    tag per token (transformers' BertForTokenClassification, same names); labels (B, T), -100 where ignored."""

    base_prefix = "bert."

    def __init__(self, config, num_labels=None, seed=0, dtype=np.float32, init_weights=True):
        """num_labels: the number of tags C. None: len(config id2label) if the config has one, else 2."""
        config = self._init_labels(config, num_labels)
        self.classifier_dropout = classifier_dropout_of(config)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.bert = BertEncoder(self, "bert.", pooler=False)
        self._cache = None

    def param_shapes(self):
        shapes = bert_param_shapes(self.config, "bert.", pooler=False)
        shapes["classifier.weight"] = (self.num_labels, self.config.hidden_size)
        shapes["classifier.bias"] = (self.num_labels,)
        return shapes

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, output_attentions=False,
                output_hidden_states=False):
        """`.logits` (B, T, C); with labels (B, T) (-100 = ignored), `.loss`, the mean over labelled tokens.

        input_ids, token_type_ids, attention_mask (B, T) as BertModel.forward."""
        self._cache = None  # a forward that fails must not leave an older batch's caches for backward()
        out = self.bert.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        h = out.last_hidden_state  # (B, T, H)
        B, T, _ = h.shape
        if labels is not None:  # checked before the head runs: a bad shape is one clear line
            labels = check_labels(labels, (B, T), self.num_labels, "labels")
        x, drop_mask = dropout_forward(h, self.classifier_dropout, self.rng, self.training)  # (B, T, H)
        logits, c_lin = linear_forward(x, self.params["classifier.weight"], self.params["classifier.bias"])  # (B, T, C)
        loss, c_loss = None, None
        if labels is not None:
            loss, c_loss = cross_entropy_forward(logits.reshape(B * T, -1), labels.reshape(-1))  # over (N, C)
        self._cache = (drop_mask, c_lin, c_loss, logits.shape)
        return ModelOutput(loss=loss, logits=logits, attentions=out.attentions, hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0, dlogits=None):
        """Accumulate d(loss_scale * loss)/d(param) into `grads` (or, with `dlogits` (B, T, C), the gradient of
        any loss whose derivative w.r.t. the logits is given)."""
        if self._cache is None:
            raise needs_forward()
        drop_mask, c_lin, c_loss, shape = self._cache
        if dlogits is None:
            if c_loss is None:
                raise ValueError("backward() needs a forward() with labels, or dlogits")
            dlogits = cross_entropy_backward(c_loss, loss_scale).reshape(shape)  # (B, T, C)
        else:
            dlogits = check_grad("dlogits", dlogits, shape).astype(self.dtype, copy=False) * loss_scale  # (B, T, C)
        dx = linear_backward(dlogits, c_lin, self.params["classifier.weight"], self.grads["classifier.weight"],
                             self.grads["classifier.bias"])  # (B, T, H)
        self.bert.backward(dropout_backward(dx, drop_mask))
        self._cache = None
