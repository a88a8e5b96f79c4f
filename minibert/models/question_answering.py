"""BertForQuestionAnswering: extractive QA, BERT + one linear layer giving each token a start and an end score.

    [start, end] = h W^T + b          h (B, T, H), W "qa_outputs.weight" (2, H), b "qa_outputs.bias" (2,)

The answer is the span [s, e] with the highest start_logits[s] + end_logits[e] (finetune/qa_predict.py).
The loss is Hugging Face's: positions are clipped to [0, T], T meaning "ignored" (an answer cut off by the
window), and loss = (CE(start_logits, start) + CE(end_logits, end)) / 2. As in Hugging Face there is no pooler
and no dropout in the head; the names match `transformers.BertForQuestionAnswering`.
"""

from __future__ import annotations

import copy

import numpy as np

from minibert.layers.linear import linear_backward, linear_forward
from minibert.layers.loss import cross_entropy_backward, cross_entropy_forward
from minibert.models.base import Model, check_grad, needs_forward
from minibert.models.bert import BertEncoder, bert_param_shapes
from minibert.models.outputs import ModelOutput


def clipped_positions(positions, B, T, name):
    """(B,) int positions clipped to [0, T] as Hugging Face does; T then means "ignored"."""
    positions = np.asarray(positions)
    if positions.size != B or positions.ndim > 2:
        raise ValueError(f"{name} must hold one position per sequence ({B}), got shape {positions.shape}")
    if not np.issubdtype(positions.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {positions.dtype}")
    return np.clip(positions.reshape(B).astype(np.int64), 0, T)


class BertForQuestionAnswering(Model):
    """Extractive QA: BERT + a linear layer giving each token a start and an end score, `.start_logits` and
    `.end_logits` (B, T), over a question + context pair (transformers' BertForQuestionAnswering, same names)."""

    base_prefix = "bert."
    num_outputs = 2  # start and end (Hugging Face's config.num_labels, which is 2 for QA)
    head_names = ("qa_outputs.weight", "qa_outputs.bias")  # the task head: new when fine-tuning a body

    def __init__(self, config, seed=0, dtype=np.float32, init_weights=True):
        config = copy.deepcopy(config)
        for key in ("id2label", "label2id", "num_labels"):  # a tagger's class names would make HF build C outputs
            config.extra.pop(key, None)
        config.extra["architectures"] = [type(self).__name__]
        super().__init__(config, seed=seed, dtype=dtype, init_weights=init_weights)
        self.bert = BertEncoder(self, "bert.", pooler=False)
        self._cache = None

    def param_shapes(self):
        shapes = bert_param_shapes(self.config, "bert.", pooler=False)
        shapes["qa_outputs.weight"] = (self.num_outputs, self.config.hidden_size)
        shapes["qa_outputs.bias"] = (self.num_outputs,)
        return shapes

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, start_positions=None,
                end_positions=None, output_attentions=False, output_hidden_states=False):
        """`.start_logits`, `.end_logits` (B, T); with both positions (B,), `.loss`.

        input_ids (B, T), token_type_ids (0 for the question, 1 for the context), attention_mask (B, T) as
        BertModel.forward; start_positions, end_positions (B,) token indices of the answer span (clipped to [0, T];
        T = none in this window)."""
        self._cache = None
        if (start_positions is None) != (end_positions is None):
            raise ValueError("give both start_positions and end_positions, or neither")
        out = self.bert.forward(input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                                output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        h = out.last_hidden_state  # (B, T, H)
        B, T, _ = h.shape
        if start_positions is not None:
            start_positions = clipped_positions(start_positions, B, T, "start_positions")
            end_positions = clipped_positions(end_positions, B, T, "end_positions")
        logits, c_lin = linear_forward(h, self.params["qa_outputs.weight"], self.params["qa_outputs.bias"])  # (B, T, 2)
        start_logits = np.ascontiguousarray(logits[..., 0])  # (B, T)
        end_logits = np.ascontiguousarray(logits[..., 1])  # (B, T)
        loss, c_loss = None, None
        if start_positions is not None:
            # T is the ignore index: the rows of an answer outside the window add nothing.
            start_loss, c_start = cross_entropy_forward(start_logits, start_positions, ignore_index=T)
            end_loss, c_end = cross_entropy_forward(end_logits, end_positions, ignore_index=T)
            loss, c_loss = (start_loss + end_loss) / 2, (c_start, c_end)
        self._cache = (c_lin, c_loss, logits.shape)
        return ModelOutput(loss=loss, start_logits=start_logits, end_logits=end_logits, attentions=out.attentions,
                           hidden_states=out.hidden_states)

    __call__ = forward

    def backward(self, loss_scale=1.0, dstart_logits=None, dend_logits=None):
        """Accumulate d(loss_scale * loss)/d(param) into `grads` (or, with dstart_logits and dend_logits (B, T),
        the gradient of any loss whose derivatives w.r.t. the logits are given)."""
        if self._cache is None:
            raise needs_forward()
        c_lin, c_loss, shape = self._cache
        if dstart_logits is not None:  # (B, T), as start_logits; checked before anything is accumulated
            dstart_logits = check_grad("dstart_logits", dstart_logits, shape[:2])
        if dend_logits is not None:
            dend_logits = check_grad("dend_logits", dend_logits, shape[:2])
        dlogits = np.empty(shape, dtype=self.dtype)  # (B, T, 2)
        if dstart_logits is None and dend_logits is None:
            if c_loss is None:
                raise ValueError("backward() needs a forward() with start/end positions, or dstart/dend_logits")
            dlogits[..., 0] = cross_entropy_backward(c_loss[0], 0.5 * loss_scale)  # the loss is the mean of two
            dlogits[..., 1] = cross_entropy_backward(c_loss[1], 0.5 * loss_scale)
        else:
            zero = np.zeros(shape[:2], dtype=self.dtype)
            dlogits[..., 0] = (zero if dstart_logits is None else dstart_logits) * loss_scale
            dlogits[..., 1] = (zero if dend_logits is None else dend_logits) * loss_scale
        dh = linear_backward(dlogits, c_lin, self.params["qa_outputs.weight"], self.grads["qa_outputs.weight"],
                             self.grads["qa_outputs.bias"])  # (B, T, H)
        self.bert.backward(dh)
        self._cache = None
