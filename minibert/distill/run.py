"""`distill(settings)`: a distillation run on the pre-training loop (minibert.training.pretrain), which it hands a
`Distiller` (student + teacher) to train instead of a BertForPreTraining. Run folder, budget (--steps or
--minutes), checkpoints (the student, in Hugging Face's DistilBERT format, with the teacher's tokenizer), exact
resume, metrics.jsonl and the progress bar are the pre-training loop's."""

from __future__ import annotations

from pathlib import Path

from minibert.distill.settings import DistillSettings


def distill(settings: DistillSettings, resume_checkpoint: Path | None = None, run_dir: Path | None = None,
            log=print, comm=None) -> dict:
    """Run (or resume) a distillation; returns the summary (also RUN_DIR/summary.json). The pre-training loop
    trains the model DistillSettings.build_model builds, on one process or several, after checking the teacher
    (check_teacher, through DistillSettings.check_model). As for `pretrain`, `settings` is not changed: what the
    teacher decides (tokenizer, layers, mode, loss weights) and the run's name are filled into a copy, which the
    run folder's settings.json records."""
    from minibert.training.pretrain import pretrain
    return pretrain(settings, resume_checkpoint=resume_checkpoint, run_dir=run_dir, log=log, comm=comm)
