"""Every setting of a distillation run: the pre-training settings (data, optimisation, run folder: the same
machinery runs it) plus the teacher, the student's layers and the loss weights. Saved in the run folder and
every checkpoint; `--resume` reads them back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from minibert.distill.distiller import MODES, WEIGHTS
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
        from minibert.distill.run import check_teacher
        check_teacher(self, resume_checkpoint)

    def default_name(self, corpus_name: str) -> str:
        """The run folder's name when `name` is not given: distil-<teacher>-L<layers>-<corpus>-<date>-<time>, the
        corpus named by its files (corpus_name, the loaded corpus's, is not used)."""
        from pathlib import Path

        from minibert.training.run_dir import default_run_name
        teacher = Path(self.teacher).name or "teacher"
        corpus = "+".join(Path(c).stem for c in self.corpus)
        return default_run_name(f"distil-{teacher}-L{self.student_layers}", corpus)

    def describe_config(self) -> str:
        return f"a student of {self.teacher}"

    def build_model(self, checkpoint=None):
        """The model the pre-training loop trains for this run (training/objectives.build_model calls it): a
        Distiller whose student is new (from the teacher) or resumed from `checkpoint`."""
        from minibert.distill.run import build_distiller
        return build_distiller(self, checkpoint)

    def weights(self) -> dict:
        """The loss weights that were given (the others take the mode's defaults)."""
        return {name: getattr(self, name) for name in WEIGHTS if getattr(self, name) is not None}
