"""BertForSequenceClassification: BERT + one linear layer on the pooled [CLS] vector.

This is BERT's whole recipe for transfer: take the pre-trained body, add a classifier

    logits = dropout(pooler_output) W^T + b          W "classifier.weight" (C, H), b "classifier.bias" (C,)

and fine-tune every parameter on the labelled task. Names are Hugging Face's (the body under "bert."), so a
saved model loads in `transformers.BertForSequenceClassification` unchanged.

The loss depends on `problem_type`, as in Hugging Face:
- "single_label_classification": cross-entropy over C classes, labels are class ids (B,)
- "regression":                  mean squared error, labels are floats (B,) or (B, C)
- "multi_label_classification":  binary cross-entropy with logits, labels are 0/1 floats (B, C)
When the config does not say, it is inferred from num_labels and the labels' dtype, as Hugging Face does.
"""

from __future__ import annotations

import numpy as np

from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.layers.loss import cross_entropy_backward, cross_entropy_forward
from minibert.models.base import Model, check_grad, needs_forward
from minibert.models.bert import BertEncoder, bert_param_shapes
from minibert.models.checks import check_labels, fit_shape
from minibert.models.labels import ClassLabels, classifier_dropout_of, labels_from_config  # noqa: F401 (re-exported)
from minibert.models.outputs import ModelOutput

PROBLEM_TYPES = ("single_label_classification", "regression", "multi_label_classification")


class BertForSequenceClassification(ClassLabels, Model):
    """BERT + a linear classifier on the pooled [CLS] vector: `.logits` (B, C), one score per class (transformers'
    BertForSequenceClassification, same names). `BertForSequenceClassification.from_pretrained(folder,
    num_labels=C)` puts a new classifier on a pre-trained body; `set_labels(names)` names the classes."""

    base_prefix = "bert."
    dropout_key = "classifier_dropout"  # the config.json key of the classifier's dropout (DistilBERT's differs)

    def __init__(self, config, num_labels=None, seed=0, dtype=np.float32, init_weights=True):
        """num_labels: the number of classes C. None: len(config id2label) if the config has one, else 2.

        A num_labels that disagrees with the config's id2label replaces the names by LABEL_0..LABEL_{C-1}
        (what Hugging Face does); `set_labels` gives them real names.
        """
        config = self._init_labels(config, num_labels)
        problem_type = config.extra.get("problem_type")
        if problem_type is not None and problem_type not in PROBLEM_TYPES:
            raise ValueError(f"config problem_type {problem_type!r} is not supported; expected one of "
                             f"{', '.join(PROBLEM_TYPES)}")
        self.classifier_dropout = classifier_dropout_of(config, self.dropout_key)
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.bert = BertEncoder(self, "bert.", pooler=True)
        self._cache = None

    def param_shapes(self):
        shapes = bert_param_shapes(self.config, "bert.", pooler=True)
        shapes["classifier.weight"] = (self.num_labels, self.config.hidden_size)
        shapes["classifier.bias"] = (self.num_labels,)
        return shapes

    # ---------------------------------------------------------------- problem type
    @property
    def problem_type(self) -> str | None:
        """config.json's problem_type (single_label_classification, regression, multi_label_classification), or
        None: then each forward infers it from num_labels and the labels' dtype, as transformers does."""
        return self.config.extra.get("problem_type")

    def _resolve_problem_type(self, labels: np.ndarray) -> str:
        if self.problem_type is not None:
            return self.problem_type
        # Hugging Face's rule, applied on every call (it stores the first answer in the config; we store it
        # only when fine-tuning sets it explicitly, so one odd batch cannot change the model's loss for good).
        if self.num_labels == 1:
            return "regression"
        if np.issubdtype(labels.dtype, np.integer):
            return "single_label_classification"
        return "multi_label_classification"

    # ---------------------------------------------------------------- forward / backward
    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, output_attentions=False,
                output_hidden_states=False):
        """Class scores, and with labels the loss: `model(ids, attention_mask=mask, labels=y)`.

        input_ids (B, T), token_type_ids (B, T), attention_mask (B, T) as BertModel.forward; labels: class indices
        (B,) integers (cross-entropy), or floats: (B,) / (B, C) for regression (mean squared error, num_labels 1 or
        problem_type "regression"), (B, C) 0/1 for multi-label (binary cross-entropy); strings are refused (map
        names with model.label2id).

        Returns `.logits` (B, C) and `.loss` (with labels); `.attentions` / `.hidden_states` as BertModel's."""
        self._cache = None  # a forward that fails must not leave an older batch's caches for backward()
        if labels is not None:
            labels = np.asarray(labels)
            if labels.dtype.kind not in "biuf":  # strings ("a", "b") or objects: never read as multi-label floats
                raise TypeError(f"labels must be class indices (integers) for single-label classification, or "
                                f"floats for multi-label classification and regression, got dtype {labels.dtype} "
                                f"(map class names to indices first: model.label2id)")
        # The head reads [CLS] only: the last layer runs there only after its attention (models/bert.py)
        rows = "cls" if self.sparse_last_layer and not output_hidden_states else None
        out = self.bert.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                                rows=rows)
        pooled, c_pool = self._pool_forward(out)  # (B, H)
        x, drop_mask = dropout_forward(pooled, self.classifier_dropout, self.rng, self.training)  # (B, H)
        logits, c_lin = linear_forward(x, self.params["classifier.weight"], self.params["classifier.bias"])  # (B, C)
        loss, c_loss = None, None
        if labels is not None:
            loss, c_loss = self._loss_forward(logits, labels)
        self._cache = (drop_mask, c_lin, c_loss, c_pool, logits.shape)
        return ModelOutput(loss=loss, logits=logits, attentions=out.attentions, hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0, dlogits=None):
        """Accumulate d(loss_scale * loss)/d(param) into `grads`.

        After a forward with labels, the gradient of its loss; or, with `dlogits` (B, C), the gradient of any
        loss whose derivative w.r.t. the logits is given (distillation, custom losses).
        """
        if self._cache is None:
            raise needs_forward()
        drop_mask, c_lin, c_loss, c_pool, shape = self._cache
        if dlogits is None:
            if c_loss is None:
                raise ValueError("backward() needs a forward() with labels, or dlogits")
            dlogits = self._loss_backward(c_loss, loss_scale)  # (B, C)
        else:
            dlogits = check_grad("dlogits", dlogits, shape).astype(self.dtype, copy=False) * loss_scale  # (B, C)
        dx = linear_backward(dlogits, c_lin, self.params["classifier.weight"], self.grads["classifier.weight"],
                             self.grads["classifier.bias"])  # (B, H)
        dpooled = dropout_backward(dx, drop_mask)  # (B, H)
        self._pool_backward(dpooled, c_pool)
        self._cache = None

    def _pool_forward(self, out):
        """The vector the classifier reads, (B, H), and a cache: BERT's pooler output."""
        return out.pooler_output, None

    def _pool_backward(self, dpooled, cache):
        self.bert.backward(None, dpooled)

    def _cls_backward(self, d_cls, shape):
        """The body's backward from the gradient at [CLS] (B, H), for a head that reads [CLS] alone; `shape` is
        the body's output shape: (B, H) when its last layer ran at [CLS] only."""
        if len(shape) == 2:
            self.bert.backward(d_cls, None)
            return
        dh = np.zeros(shape, dtype=self.dtype)  # (B, T, H): only [CLS] feeds the head
        dh[:, 0] = d_cls
        self.bert.backward(dh, None)

    # ---------------------------------------------------------------- losses
    def _loss_forward(self, logits, labels):
        B, C = logits.shape
        kind = self._resolve_problem_type(labels)
        if kind == "single_label_classification":
            labels = check_labels(labels.reshape(-1) if labels.size == B else labels, (B,), C, "labels")
            loss, c = cross_entropy_forward(logits, labels)
            return loss, (kind, c)
        target = fit_shape(labels, (B, C), f"labels for {kind} (batch {B} x {C} classes)").astype(self.dtype)
        if kind == "regression":
            diff = logits - target  # (B, C)
            return float(np.mean(diff * diff)), (kind, diff)
        # multi-label: mean over B*C of BCE(sigmoid(z), y) = softplus(z) - y z, written to never overflow:
        # softplus(z) = max(z, 0) + log(1 + exp(-|z|))
        loss = np.maximum(logits, 0) - logits * target + np.log1p(np.exp(-np.abs(logits)))  # (B, C)
        sigmoid = 1.0 / (1.0 + np.exp(-logits))  # (B, C)
        return float(loss.mean()), (kind, (sigmoid, target))

    def _loss_backward(self, c_loss, loss_scale):
        kind, c = c_loss
        if kind == "single_label_classification":
            return cross_entropy_backward(c, loss_scale)
        if kind == "regression":
            diff = c
            return (diff * (2.0 * loss_scale / diff.size)).astype(self.dtype)  # d mean(d^2) / d logits
        sigmoid, target = c
        return ((sigmoid - target) * (loss_scale / sigmoid.size)).astype(self.dtype)  # d mean(BCE) / d logits
