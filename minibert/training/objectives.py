"""What the pre-training objectives change in training/pretrain.py's one loop: which model is trained and what
is counted. The loop itself is the same for all: masked batch -> model.forward -> model.backward -> AdamW.

- mlm, mlm+nsp: BertForPreTraining (masked LM, with or without next-sentence prediction); a DeBERTa config
  (model_type deberta-v2): DebertaV2ForMaskedLM, mlm only.
- electra: ElectraPretrainer (models/electra_pretraining.py): the generator is trained on the masked batch as an
  MLM, the discriminator on replaced-token detection over every token. Its output has the MLM fields the loop
  already counts (the generator's) plus rtd_logits / rtd_labels, counted here.
- a run whose settings bring their own model (`minibert distill`: DistillSettings.build_model, a DistilBERT
  student and its teacher, minibert.distill): the same masked batches; its output adds `.parts` (its separate
  losses, logged) and its `.loss` is the total trained.

forward_backward is that common part of a step: for each micro-batch, take examples, pad and mask them, forward
this rank's share, count what the logs report (STEP_SUMS, weighted so that the sum over ranks is the
single-process number), backward. The optimizer step, logging and checkpoints are the loop's (pretrain.py).
"""

from __future__ import annotations

import numpy as np

from minibert.config import BertConfig
from minibert.data.examples import PAIR_OBJECTIVES, collate
from minibert.data.masking import Masker
from minibert.layers.loss import IGNORE_INDEX
from minibert.models import BertForPreTraining
from minibert.models.deberta import DebertaV2ForMaskedLM
from minibert.models.electra import generator_config
from minibert.models.electra_pretraining import ElectraPretrainer, batch_draws
from minibert.training.distributed import rank_share
from minibert.training.metrics import Window

MLM_OUTPUT_BIAS = "cls.predictions.bias"
MASKING_STREAM = 2  # random streams of one seed: 1 = examples, 2 = masking (the model's dropout has its own)
DROPOUT_STREAM = 3  # several ranks: each rank's dropout generator, a function of (seed, step, rank)
SAMPLE_STREAM = 4  # ELECTRA: the generator's samples of a step, the same on every rank (electra_pretraining.py)
# The sums of a step that the ranks add up (one small Allreduce per step), in this order.
STEP_SUMS = ("loss", "mlm_loss", "nsp_loss", "correct", "masked", "tokens", "nsp_correct", "pairs", "rtd_loss",
             "rtd_correct", "rtd_tokens", "over_budget")


def build_model(settings, config=None, checkpoint=None):
    """The model a run trains: new from `config` (the --config one), or resumed from `checkpoint` (config unused).
    The one hook for every kind of run: settings with a build_model(checkpoint) method (DistillSettings) build
    their own; otherwise the objective picks BERT's or ELECTRA's models."""
    if hasattr(settings, "build_model"):
        return settings.build_model(checkpoint)
    if checkpoint is not None:
        cls = ElectraPretrainer if settings.objective == "electra" else BertForPreTraining
        if BertConfig.from_json_file(checkpoint).model_type == "deberta-v2":
            cls = DebertaV2ForMaskedLM
        return cls.from_pretrained(checkpoint, seed=settings.seed)
    if config.model_type == "deberta-v2":
        check_objective(settings, config)
        return DebertaV2ForMaskedLM(config, seed=settings.seed)
    if settings.objective == "electra":
        if config.model_type not in ("bert", "electra"):
            raise ValueError(f"--objective electra builds ELECTRA's models from a BERT config; --config "
                             f"{settings.config} has model_type {config.model_type!r} (use mini, tiny, ... or a "
                             f"config.json with model_type bert and, if wanted, embedding_size)")
        return ElectraPretrainer(config, generator_config(config, settings.generator_size), seed=settings.seed)
    return BertForPreTraining(config, seed=settings.seed)


def check_objective(settings, config) -> None:
    """A one-line ValueError for an objective the config's model cannot train: DeBERTa has no sentence-pair head
    (masked LM only)."""
    if config.model_type == "deberta-v2" and settings.objective != "mlm":
        raise ValueError(f"--config {settings.config} is a DeBERTa (model_type deberta-v2), which pre-trains with "
                         f"objective (--objective) mlm only, got {settings.objective!r}")


def brings_own_model(settings) -> bool:
    """A run that trains another model through the same loop (minibert distill)."""
    return hasattr(settings, "build_model")


def output_bias_name(model) -> str:
    """The MLM decoder's output bias (the generator's in ELECTRA), which may start at the unigram log-frequencies."""
    return getattr(model, "mlm_bias_name", MLM_OUTPUT_BIAS)


def rtd_counts(out, attention_mask) -> tuple[int, int, int]:
    """(correct, tokens, replaced) of replaced-token detection over the non-padding tokens; zeros for an output
    without it (BERT's objectives). A logit > 0 means "replaced"."""
    if getattr(out, "rtd_logits", None) is None:
        return 0, 0, 0
    active = np.asarray(attention_mask) == 1  # (B, T)
    guess = out.rtd_logits > 0
    truth = out.rtd_labels == 1
    return int((guess == truth)[active].sum()), int(active.sum()), int(truth[active].sum())


def masking_rate(settings, step: int, total_steps: int) -> float:
    """--mask-prob, or with --mask-prob-end a rate falling linearly from one to the other over the run (high
    early: more targets per step while the model learns the basics; lower late: more context per target, as
    the held-out 15% gives)."""
    if settings.mask_prob_end is None:
        return settings.mask_prob
    return settings.mask_prob + (settings.mask_prob_end - settings.mask_prob) * step / max(1, total_steps - 1)


def masked_batch(examples: list, masker: Masker, pad_id: int, rng) -> dict:
    """Pad the examples into a batch and mask it (a fresh mask each call: dynamic masking)."""
    batch = collate(examples, pad_id)
    batch["input_ids"], batch["labels"] = masker(batch["input_ids"], rng)
    return batch


def forward_backward(model, settings, masker: Masker, stream, pad_id: int, step: int, total_steps: int, comm,
                     over_budget) -> tuple[np.ndarray, list[str], int]:
    """Step `step`'s gradient, summed over its --grad-accum micro-batches, into model.grads (this rank's share of
    each batch). Returns (this rank's STEP_SUMS then a distillation's separate losses, those losses' names, the
    step's real tokens). over_budget(): whether the run is far over its time (checked after the backward)."""
    distilling = brings_own_model(settings)  # minibert distill: a Distiller, several losses weighted apart
    electra = settings.objective == "electra"  # a generator's samples, and a loss over every real token
    use_nsp = settings.objective in PAIR_OBJECTIVES  # the pooled [CLS] head: NSP, or ALBERT's SOP
    model.zero_grad()
    if comm.size > 1:  # each rank its own dropout masks, reproducible on resume (any number of ranks)
        model.rng = np.random.default_rng([settings.seed, DROPOUT_STREAM, step, comm.rank])
    sums = np.zeros(len(STEP_SUMS))  # this rank's part of the step's loss, accuracy and token counts
    step_parts = {}  # a distillation's separate losses, this rank's part
    for micro in range(settings.grad_accum):
        out = batch = part = None  # the last micro-batch's logits are not kept alive through this forward
        rng = np.random.default_rng([settings.seed, MASKING_STREAM, step, micro])
        masker.mlm_probability = masking_rate(settings, step, total_steps)
        batch = masked_batch(stream.take(settings.batch_size), masker, pad_id, rng)
        part = rank_share(batch, comm.rank, comm.size)  # the whole batch when there is one rank
        # Weights that make the sum over ranks the single-process loss (all 1.0 for one rank): the
        # rank's share of the batch's masked tokens, sequences and (a distillation's) real tokens.
        shares = {"masked": _masked(part) / max(1, _masked(batch)), "sequences": 1.0 / comm.size,
                  "tokens": part["attention_mask"].sum() / max(1, batch["attention_mask"].sum())}
        sampling = {}  # ELECTRA: the generator's samples, drawn for the whole batch, this rank's share
        if electra:
            sampling["sample_rng"] = batch_draws([settings.seed, SAMPLE_STREAM, step, micro], batch["labels"],
                                                 comm.rank, comm.size)
        out = model.forward(part["input_ids"], token_type_ids=part["token_type_ids"],
                            attention_mask=part["attention_mask"], labels=part["labels"],
                            next_sentence_label=part["next_sentence_label"] if use_nsp else None, **sampling)
        # a distillation: (its loss, its separate losses), each weighted as its gradient
        weighted = model.weighted_losses(out, shares) if distilling else None
        sums += step_sums(out, part, use_nsp, shares, settings.grad_accum, model if comm.size > 1 else None,
                          weighted)
        if distilling:  # its separate losses (summed over the ranks by the caller)
            for name, value in weighted[1].items():
                step_parts[name] = step_parts.get(name, 0.0) + value / settings.grad_accum
        out = None  # (counted above) the (M, V) logits are not kept alive through the backward
        if comm.size == 1:  # (every model's backward takes loss_scale)
            model.backward(loss_scale=1.0 / settings.grad_accum)
        else:
            scales = {"loss_scale": shares["sequences"], "mlm_scale": shares["masked"]}
            if distilling or electra:  # (their token-level losses: a mean over real tokens)
                scales["token_scale"] = shares["tokens"]
            model.backward(**{k: v / settings.grad_accum for k, v in scales.items()})
    sums[STEP_SUMS.index("over_budget")] = comm.is_root and over_budget()
    names = sorted(model.part_names) if distilling else []  # (the same on every rank)
    sums = np.concatenate([sums, [step_parts.get(name, 0.0) for name in names]])
    return sums, names, int(batch["attention_mask"].sum()) * settings.grad_accum


def _masked(batch: dict) -> int:
    return int((batch["labels"] != IGNORE_INDEX).sum())


def step_sums(out, part: dict, use_nsp: bool, shares: dict, grad_accum: int, model=None,
              weighted=None) -> np.ndarray:
    """This rank's contribution to the step's STEP_SUMS (weighted like its gradient: the sum over ranks is the
    single-process value). A distillation passes `weighted`, its Distiller.weighted_losses(out, shares)."""
    mlm_weight, nsp_weight = shares["masked"], shares["sequences"]
    targets = part["labels"].reshape(-1)[out.masked_positions]  # (M,)
    nsp_loss = nsp_weight * float(out.nsp_loss) if use_nsp else 0.0
    sums = {"loss": (mlm_weight * float(out.mlm_loss) + nsp_loss) / grad_accum,
            "mlm_loss": mlm_weight * float(out.mlm_loss) / grad_accum,
            "correct": int((out.prediction_logits.argmax(axis=-1) == targets).sum()), "masked": len(targets),
            "tokens": int(part["attention_mask"].sum())}
    correct, tokens, _ = rtd_counts(out, part["attention_mask"])  # ELECTRA's discriminator; zeros otherwise
    if tokens:  # its loss also holds lambda x the RTD loss (several ranks, `model` given: each weighted apart)
        loss, rtd_loss = (float(out.loss), float(out.rtd_loss)) if model is None else model.weighted_loss(out, shares)
        sums.update(loss=loss / grad_accum, rtd_loss=rtd_loss / grad_accum, rtd_correct=correct, rtd_tokens=tokens)
    if weighted is not None:  # a distillation: its loss is the weighted total of its losses (several ranks,
        # `model` given: each loss weighted by the rank's share of what it is a mean over)
        sums["loss"] = (float(out.loss) if model is None else weighted[0]) / grad_accum
    if use_nsp:
        nsl = part["next_sentence_label"]
        sums.update(nsp_loss=nsp_loss / grad_accum, pairs=len(nsl),
                    nsp_correct=int((out.seq_relationship_logits.argmax(axis=-1) == nsl).sum()))
    return np.array([sums.get(name, 0.0) for name in STEP_SUMS])


def add_to_window(window: Window, sums: np.ndarray, names: list[str]) -> float:
    """Add a step's sums (summed over the ranks: STEP_SUMS, then the losses `names`) to the log window; returns
    the step's loss."""
    for name, value in zip(names, sums[len(STEP_SUMS):]):
        window.parts[name] = window.parts.get(name, 0.0) + float(value)
    for name, value in zip(STEP_SUMS, sums[:len(STEP_SUMS)]):
        if name in ("loss", "mlm_loss", "nsp_loss", "rtd_loss"):
            setattr(window, name, getattr(window, name) + float(value))
        elif name != "over_budget":  # counts: integers, exactly, whatever the number of ranks
            setattr(window, name, getattr(window, name) + int(round(value)))
    return float(sums[STEP_SUMS.index("loss")])
