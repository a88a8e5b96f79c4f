"""Every setting of a distillation run: the pre-training settings (data, optimisation, run folder: the same
machinery runs it) plus the teacher, the student's layers and the loss weights. Saved in the run folder and
every checkpoint; `--resume` reads them back. Below the class: what the teacher decides (check_teacher) and the
model the pre-training loop trains (build_distiller)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from minibert.distill.distiller import DEFAULT_WEIGHTS, MODES, WEIGHTS, Distiller, check_weights
from minibert.distill.student import (check_teacher_layers, default_teacher_layers, has_mlm_head, load_teacher,
                                      student_from_teacher)
from minibert.io.model_folder import resolve_model_and_tokenizer
from minibert.training.settings import PretrainSettings, option


@dataclass
class DistillSettings(PretrainSettings):
    COMMAND: ClassVar[str] = "distill"  # the command that resumes a run (in messages)
    PATH_FIELDS: ClassVar[tuple[str, ...]] = PretrainSettings.PATH_FIELDS + ("teacher",)
    NUMBER_FIELDS: ClassVar[tuple[str, ...]] = PretrainSettings.NUMBER_FIELDS + ("temperature",) + WEIGHTS
    teacher: str = "minilm"              # a BERT folder, a run folder, or "minilm"
    student_layers: int | None = None    # None: half the teacher's (rounded up)
    teacher_layers: list[int] | None = None  # which teacher layers initialise the student; None: spread evenly
    mode: str | None = None              # "mlm" or "hidden"; None: "mlm" when the teacher has an MLM head
    temperature: float = 2.0
    alpha_ce: float | None = None        # None: the mode's default (distiller.DEFAULT_WEIGHTS)
    alpha_mlm: float | None = None
    alpha_cos: float | None = None
    alpha_mse: float | None = None
    alpha_pool: float | None = None
    config: str | None = None            # no --config: the student's size comes from its teacher
    # pre-training defaults that differ: the student starts from trained weights, so a small learning rate;
    # BERT's 15% masking (DistilBERT's)
    lr: float = 1e-4
    mask_prob: float = 0.15
    output_bias: str = "zero"

    def validate(self) -> None:
        super().validate()
        if self.objective != "mlm":
            raise ValueError(f"distillation uses {option('objective')} mlm (no next-sentence head), got "
                             f"{self.objective!r}")
        if self.student_layers is not None and (not isinstance(self.student_layers, int) or self.student_layers < 1):
            raise ValueError(f"{option('student_layers')} must be a positive integer, got {self.student_layers!r}")
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"{option('mode')} must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.temperature > 0:
            raise ValueError(f"{option('temperature')} must be positive, got {self.temperature!r}")
        for name in WEIGHTS:
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"{option(name)} must be >= 0, got {value!r}")

    def check_config(self) -> None:
        """No --config: the student's size comes from the teacher (check_model)."""

    def check_model(self, resume_checkpoint=None) -> None:
        """The teacher, and what it decides (training.pretrain.check_before_data calls this before any data work)."""
        check_teacher(self, resume_checkpoint)

    def default_name(self, corpus_name: str) -> str:
        """The run folder's name when `name` is not given: distil-<teacher>-L<layers>-<corpus>-<date>-<time>, the
        corpus named by its files (corpus_name, the loaded corpus's, is not used)."""
        from minibert.training.run_dir import default_run_name
        teacher = Path(self.teacher).name or "teacher"
        corpus = "+".join(Path(c).stem for c in self.corpus)
        return default_run_name(f"distil-{teacher}-L{self.student_layers}", corpus)

    def describe_config(self) -> str:
        return f"a student of {self.teacher}"

    def build_model(self, checkpoint=None):
        """The model the pre-training loop trains for this run (training/objectives.build_model calls it): a
        Distiller whose student is new (from the teacher) or resumed from `checkpoint`."""
        return build_distiller(self, checkpoint)

    def weights(self) -> dict:
        """The loss weights that were given (the others take the mode's defaults)."""
        return {name: getattr(self, name) for name in WEIGHTS if getattr(self, name) is not None}


# ---- what the teacher decides, and the model the pre-training loop trains
def teacher_source(settings: DistillSettings) -> tuple[Path, Path]:
    """(teacher checkpoint folder, its tokenizer folder); fails before any data work when there is none."""
    return resolve_model_and_tokenizer(settings.teacher, option="--teacher")  # (named as every command names --model)


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
