"""Distiller: the student and its teacher behind the interface the pre-training loop trains
(`forward(input_ids, token_type_ids, attention_mask, labels=...)` -> .loss, `backward(loss_scale)`, `params`,
`grads`, `rng`, `save_pretrained`), so `minibert distill` runs on minibert.training.pretrain unchanged.

Two modes, chosen by the teacher:
- "mlm" (the teacher has an MLM head; DistilBERT's recipe): teacher and student read the same masked batch;
      loss = alpha_ce x soft-target KL at temperature T on the masked positions (teacher's MLM distribution)
           + alpha_mlm x the student's own MLM loss
           + alpha_cos x token cosine loss on the last hidden states (+ alpha_mse x MSE, alpha_pool x pooled cosine)
- "hidden" (no MLM head, e.g. all-MiniLM-L6-v2, a sentence-embedding model): the batch's masked tokens are put
      back (there is no MLM to learn) and the student matches the teacher's last hidden states:
      loss = alpha_cos x token cosine + alpha_mse x token MSE + alpha_pool x cosine of the mean-pooled sentence
      embeddings.
The teacher only runs forward; its weights get no gradient and stay in eval mode (no dropout).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from minibert.distill import losses as L
from minibert.layers.loss import IGNORE_INDEX
from minibert.models.outputs import ModelOutput

MODES = ("mlm", "hidden")
WEIGHTS = ("alpha_ce", "alpha_mlm", "alpha_cos", "alpha_mse", "alpha_pool")
DEFAULT_WEIGHTS = {  # DistilBERT's published run used ce 5, mlm 2, cos 1 (and temperature 2)
    "mlm": {"alpha_ce": 5.0, "alpha_mlm": 2.0, "alpha_cos": 1.0, "alpha_mse": 0.0, "alpha_pool": 0.0},
    "hidden": {"alpha_ce": 0.0, "alpha_mlm": 0.0, "alpha_cos": 1.0, "alpha_mse": 0.0, "alpha_pool": 1.0},
}
HIDDEN_LOSSES = (("cos_loss", "alpha_cos", L.token_cosine_forward, L.token_cosine_backward),
                 ("mse_loss", "alpha_mse", L.token_mse_forward, L.token_mse_backward),
                 ("pool_loss", "alpha_pool", L.pooled_cosine_forward, L.pooled_cosine_backward))
WEIGHT_OF = {"kd_loss": "alpha_ce", **{part: weight for part, weight, _, _ in HIDDEN_LOSSES}}
# What each loss is a mean over. Data-parallel ranks (training/pretrain.py) each hold part of a batch, and scale
# each loss by their share of its terms, so that the sum over the ranks is the whole batch's loss and gradient.
MEAN_OVER = {"kd_loss": "masked", "cos_loss": "tokens", "mse_loss": "tokens", "pool_loss": "sequences"}


def check_weights(mode: str, weights: dict) -> None:
    for name in WEIGHTS:
        if not weights[name] >= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 0, got {weights[name]!r}")
    if mode == "hidden" and (weights["alpha_ce"] or weights["alpha_mlm"]):
        raise ValueError("--alpha-ce and --alpha-mlm need a teacher with an MLM head; this teacher has none "
                         "(distil its hidden states with --alpha-cos, --alpha-mse, --alpha-pool)")
    if not any(weights[n] for n in WEIGHTS):
        raise ValueError("every loss weight is 0: nothing to train")


def _body(model):
    return model.bert if hasattr(model, "bert") else model.encoder


class Distiller:
    def __init__(self, student, teacher, mode: str, temperature: float = 2.0, **weights):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if student.config.hidden_size != teacher.config.hidden_size:
            raise ValueError(f"the student's hidden size {student.config.hidden_size} differs from the teacher's "
                             f"{teacher.config.hidden_size}: the hidden-state losses compare them directly")
        self.weights = {**DEFAULT_WEIGHTS[mode], **weights}
        check_weights(mode, self.weights)
        self.student, self.teacher, self.mode, self.temperature = student, teacher.eval(), mode, temperature
        self.teacher.set_recompute(True)  # never backpropagated: its layers need not keep their activations
        self.params, self.grads, self.config = student.params, student.grads, student.config
        self._cache = None

    # ---- what the training loop uses of a model
    @property
    def rng(self):
        return self.student.rng

    @rng.setter
    def rng(self, generator):  # (several ranks: each its own dropout masks)
        self.student.rng = generator

    @property
    def training(self):
        return self.student.training

    def train(self, mode=True):
        self.student.train(mode)  # the teacher stays in eval mode
        return self

    def eval(self):
        return self.train(False)

    def after_sharing(self, comm):
        """(training/pretrain.py, several ranks: the student's buffers are in shared memory.) The teacher's weights
        go there too, one read-only copy for all ranks of `--procs N` instead of one per rank."""
        comm.share_frozen(self.teacher.params)

    def zero_grad(self):
        self.student.zero_grad()

    @property
    def recompute(self):
        return self.student.recompute

    def set_recompute(self, on=True):
        self.student.set_recompute(on)  # the teacher runs with recompute always (forward only)
        return self

    def num_parameters(self):
        return self.student.num_parameters()

    def save_pretrained(self, path):
        """The student; with a sentence-transformers teacher also its sentence_bert_config.json, so the student
        embeds with the teacher's max_seq_length (checkpoint folders are written whole, then renamed)."""
        self.student.save_pretrained(path)
        settings = Path(getattr(self.teacher, "name_or_path", "") or ".") / "sentence_bert_config.json"
        if settings.is_file():
            shutil.copyfile(settings, Path(path) / settings.name)

    # ---- the losses
    def _teacher(self, input_ids, attention_mask, labels):
        out = self.teacher.forward(input_ids, attention_mask=attention_mask, output_hidden_states=True,
                                   **({"labels": labels} if self.mode == "mlm" else {}))
        self.teacher._cache = None  # never backpropagated: drop the activations at once
        _body(self.teacher)._cache = None
        return out

    def forward(self, input_ids, *, token_type_ids=None, attention_mask=None, labels=None, next_sentence_label=None):
        """Token types are not used (the student has none; the teacher sees type 0, as the student was folded)."""
        if next_sentence_label is not None:
            raise ValueError("distillation has no next-sentence objective (use --objective mlm)")
        self._cache = None
        input_ids = np.asarray(input_ids)
        mask = np.ones_like(input_ids) if attention_mask is None else np.asarray(attention_mask)
        w = self.weights
        logits = positions = c_kd = None
        mlm_loss, parts = 0.0, {}
        if self.mode == "hidden":
            if labels is not None:  # put the masked tokens back: this objective learns no MLM
                input_ids = np.where(labels != IGNORE_INDEX, labels, input_ids)
            t_out = self._teacher(input_ids, mask, None)
            s_hidden = self.student.forward(input_ids, attention_mask=mask).last_hidden_state  # (B, T, H)
        else:
            if labels is None:
                raise ValueError("the mlm distillation needs labels (the masked positions)")
            t_out = self._teacher(input_ids, mask, labels)
            s_out = self.student.forward(input_ids, attention_mask=mask, labels=labels, output_hidden_states=True)
            s_hidden, mlm_loss = s_out.hidden_states[-1], float(s_out.loss)  # (B, T, H)
            logits, positions = s_out.prediction_logits, s_out.masked_positions  # (M, V), (M,)
            parts["kd_loss"], c_kd = L.soft_target_forward(logits, t_out.prediction_logits, self.temperature)
        t_hidden = t_out.hidden_states[-1]  # (B, T, H)
        caches = {}
        for part, weight, forward, _ in HIDDEN_LOSSES:
            if w[weight] or part == "cos_loss":  # the cosine is always reported: it says how close the two are
                parts[part], caches[part] = forward(s_hidden, t_hidden, mask)
        loss = w["alpha_ce"] * parts.get("kd_loss", 0.0) + w["alpha_mlm"] * mlm_loss + sum(
            w[weight] * parts[part] for part, weight, _, _ in HIDDEN_LOSSES if part in parts)
        self._cache = (c_kd, caches, s_hidden.shape)
        V = self.config.vocab_size
        return ModelOutput(loss=loss, mlm_loss=mlm_loss, parts=parts,
                           prediction_logits=logits if logits is not None else np.zeros((0, V), np.float32),
                           masked_positions=positions if positions is not None else np.zeros(0, np.int64))

    @property
    def predicts_masked_tokens(self) -> bool:
        """Whether the student learns (and is scored on) masked-token prediction: mode "mlm" only. A hidden-state
        distillation has no MLM, so its logs and summary carry no MLM loss, perplexity, accuracy or
        most-frequent-token baseline (training/pretrain.py leaves them out; they would read 0, 1 and 0)."""
        return self.mode == "mlm"

    @property
    def objective_description(self) -> str:
        """What is trained, for the run's start-up line: the losses and their weights, e.g. "hidden-state
        distillation, loss 1 x cos_loss + 1 x pool_loss (no masked-token prediction)"."""
        pairs = (("kd_loss", "alpha_ce"), ("mlm_loss", "alpha_mlm"), *((p, w) for p, w, _, _ in HIDDEN_LOSSES))
        terms = [(self.weights[weight], part) for part, weight in pairs if self.weights[weight]]
        loss = " + ".join(f"{w:g} x {part}" for w, part in terms)
        if self.mode == "hidden":
            return f"hidden-state distillation, loss {loss} (no masked-token prediction)"
        return f"objective mlm (DistilBERT's distillation), loss {loss}"

    @property
    def part_names(self) -> list[str]:
        """The losses `forward` reports in `.parts` (fixed by the mode and the weights)."""
        return (["kd_loss"] if self.mode == "mlm" else []) + [
            part for part, weight, _, _ in HIDDEN_LOSSES if self.weights[weight] or part == "cos_loss"]

    def weighted_losses(self, out, shares: dict) -> tuple[float, dict]:
        """(total loss, each part) of a forward's output with each loss scaled by this rank's share of what it is a
        mean over: shares["masked"], ["tokens"], ["sequences"] (MEAN_OVER; the student's MLM loss is over the
        masked tokens). Added up over the ranks, these are the whole batch's numbers."""
        parts = {name: shares[MEAN_OVER[name]] * value for name, value in out.parts.items()}
        w = self.weights
        loss = w["alpha_mlm"] * shares["masked"] * out.mlm_loss + sum(
            w[WEIGHT_OF[name]] * value for name, value in parts.items())
        return loss, parts

    def backward(self, loss_scale=1.0, mlm_scale=None, token_scale=None):
        """Gradients of loss_scale x the loss. Several ranks give each loss its own scale, the rank's share of
        what the loss is a mean over: mlm_scale for the soft targets and the MLM loss (masked tokens),
        token_scale for the token cosine and MSE (real tokens), loss_scale for the pooled cosine (sequences)."""
        if self._cache is None:
            raise ValueError("backward() called before forward()")
        c_kd, caches, shape = self._cache
        self._cache = None
        w, dtype = self.weights, self.student.dtype
        scale = {"masked": loss_scale if mlm_scale is None else mlm_scale,
                 "tokens": loss_scale if token_scale is None else token_scale, "sequences": loss_scale}
        d_hidden = np.zeros(shape, dtype=dtype)  # (B, T, H)
        for part, weight, _, backward in HIDDEN_LOSSES:
            if w[weight] and part in caches:
                d_hidden += backward(caches[part], scale[MEAN_OVER[part]] * w[weight])
        if self.mode == "hidden":
            self.student.backward(d_hidden)
            return
        d_logits = None
        if c_kd is not None and w["alpha_ce"]:
            d_logits = L.soft_target_backward(c_kd, scale["masked"] * w["alpha_ce"], dtype)  # (M, V)
        self.student.backward(scale["masked"] * w["alpha_mlm"], d_logits=d_logits, d_last_hidden_state=d_hidden)
