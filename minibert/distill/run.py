"""`distill(settings)`: a distillation run on the pre-training loop (minibert.training.pretrain), which it hands a
`Distiller` (student + teacher) to train instead of a BertForPreTraining. Run folder, budget (--steps or
--minutes), checkpoints (the student, in Hugging Face's DistilBERT format, with the teacher's tokenizer), exact
resume, metrics.jsonl and the progress bar are the pre-training loop's."""

from __future__ import annotations

import math
from pathlib import Path

from minibert.distill.distiller import DEFAULT_WEIGHTS, WEIGHTS, Distiller, check_weights
from minibert.distill.settings import DistillSettings
from minibert.distill.student import (check_teacher_layers, default_teacher_layers, has_mlm_head, load_teacher,
                                      student_from_teacher)
from minibert.finetune.model_source import resolve_model
from minibert.training.settings import option


def teacher_source(settings: DistillSettings) -> tuple[Path, Path]:
    """(teacher checkpoint folder, its tokenizer folder); fails before any data work when there is none."""
    return resolve_model(settings.teacher, option="--teacher")  # (named as every command names --model)


def check_teacher(settings: DistillSettings, resume_checkpoint: Path | None = None) -> None:
    """The teacher, seq_len (--seq-len) against its max_position_embeddings (the student's), and for a new run the
    settings it decides (resolve_settings) and its tokenizer, filled into `settings`: before any data work, in the
    command's process (DistillSettings.check_model), and again in `distill`/`pretrain` on their copy of the
    settings (the caller's object is left alone)."""
    from minibert.config import BertConfig
    from minibert.training.pretrain import sequence_length
    checkpoint, tokenizer_dir = teacher_source(settings)
    teacher_config = BertConfig.from_json_file(checkpoint / "config.json")
    sequence_length(settings, teacher_config, whose="the teacher's")
    if resume_checkpoint:
        return
    resolve_settings(settings, checkpoint, teacher_config.num_hidden_layers)
    settings.tokenizer = str(tokenizer_dir)  # the student reads text exactly as its teacher does


def resolve_settings(settings: DistillSettings, teacher_checkpoint: Path, teacher_layers: int) -> None:
    """Fill in what was left to defaults (mode, layers, loss weights), so settings.json says what ran."""
    mlm = has_mlm_head(teacher_checkpoint)
    asked = [name for name in ("alpha_ce", "alpha_mlm") if getattr(settings, name)]
    if settings.mode == "hidden" and mlm and asked:  # (a teacher without the head: distiller.check_weights says so)
        raise ValueError(f"{option(asked[0])} weighs a loss on the teacher's MLM predictions, which mode (--mode) "
                         f"hidden does not use; drop it or use mode 'mlm'")
    if settings.mode is None:
        settings.mode = "mlm" if mlm else "hidden"
    if settings.mode == "mlm" and not mlm:
        raise ValueError(f"mode (--mode) mlm needs a teacher with an MLM head; {teacher_checkpoint} has none "
                         f"(use mode 'hidden')")
    if settings.teacher_layers is None:
        k = settings.student_layers or math.ceil(teacher_layers / 2)
        settings.teacher_layers = default_teacher_layers(teacher_layers, k)
    settings.teacher_layers = check_teacher_layers(settings.teacher_layers, teacher_layers)
    if settings.student_layers is None:
        settings.student_layers = len(settings.teacher_layers)
    if settings.student_layers != len(settings.teacher_layers):
        raise ValueError(f"{option('student_layers')} {settings.student_layers} but {option('teacher_layers')} "
                         f"names {len(settings.teacher_layers)} layers {settings.teacher_layers}")
    for name in WEIGHTS:
        if getattr(settings, name) is None:
            setattr(settings, name, DEFAULT_WEIGHTS[settings.mode][name])
    check_weights(settings.mode, settings.weights())


def build_distiller(settings: DistillSettings, resume_checkpoint: Path | None):
    """The model `pretrain` trains (through DistillSettings.build_model): a Distiller whose student is new (from
    the teacher) or resumed."""
    checkpoint, _ = teacher_source(settings)
    teacher = load_teacher(checkpoint, mlm_head=settings.mode == "mlm")
    if resume_checkpoint:
        from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
        cls = DistilBertForMaskedLM if settings.mode == "mlm" else DistilBertModel
        student = cls.from_pretrained(resume_checkpoint, seed=settings.seed)
    else:
        student = student_from_teacher(teacher, settings.teacher_layers, settings.mode == "mlm", seed=settings.seed,
                                       dropout=settings.dropout)
    distiller = Distiller(student, teacher, settings.mode, settings.temperature, **settings.weights())
    distiller.description = (f"DistilBERT student of {settings.teacher} ({len(settings.teacher_layers)} of its "
                             f"{teacher.config.num_hidden_layers} layers: {settings.teacher_layers})")
    # (the start-up line then says what is trained: Distiller.objective_description, the mode and its losses)
    return distiller


def distill(settings: DistillSettings, resume_checkpoint: Path | None = None, run_dir: Path | None = None,
            log=print, comm=None) -> dict:
    """Run (or resume) a distillation; returns the summary (also RUN_DIR/summary.json). The pre-training loop
    trains the model DistillSettings.build_model builds, on one process or several, after checking the teacher
    (check_teacher, through DistillSettings.check_model). As for `pretrain`, `settings` is not changed: what the
    teacher decides (tokenizer, layers, mode, loss weights) and the run's name are filled into a copy, which the
    run folder's settings.json records."""
    from minibert.training.pretrain import pretrain
    return pretrain(settings, resume_checkpoint=resume_checkpoint, run_dir=run_dir, log=log, comm=comm)
