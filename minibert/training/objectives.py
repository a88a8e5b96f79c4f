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
"""

from __future__ import annotations

import numpy as np

from minibert.config import BertConfig
from minibert.models import BertForPreTraining
from minibert.models.deberta import DebertaV2ForMaskedLM
from minibert.models.electra import generator_config
from minibert.models.electra_pretraining import ElectraPretrainer

MLM_OUTPUT_BIAS = "cls.predictions.bias"


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
