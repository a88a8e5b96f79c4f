"""Run folders: where a pre-training run keeps everything, and how to find its latest checkpoint.

    runs/<name>/
        settings.json            the run's settings (PretrainSettings)
        metrics.jsonl            one JSON object per line: train and eval metrics
        training.png             loss and accuracy curves (when matplotlib is installed)
        summary.json             final held-out numbers, wall time, tokens/s
        checkpoints/
            step-000500/         a Hugging Face folder + training_state/ (see checkpointing.py)
            step-001000/
            latest               the name of the newest complete checkpoint folder ("step-001000")
"""

from __future__ import annotations

import time
from pathlib import Path

from minibert.io.atomic import atomic_write_text

CHECKPOINTS = "checkpoints"
LATEST = "latest"


def default_run_name(config: str, corpus_name: str) -> str:
    config = Path(config).stem if config.endswith(".json") else config
    return f"{config}-{corpus_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def create_run_dir(runs_dir: str | Path, name: str) -> Path:
    """A new, empty run folder; refuses to reuse one that holds a run already (use --resume for that)."""
    run = Path(runs_dir) / name
    if (run / "settings.json").exists() or (run / CHECKPOINTS).exists():
        raise FileExistsError(f"run folder {run} already holds a run; resume it with --resume {run} or pick "
                              f"another --name")
    (run / CHECKPOINTS).mkdir(parents=True, exist_ok=True)
    return run


def checkpoint_name(step: int) -> str:
    return f"step-{step:06d}"


def checkpoint_steps(run: Path) -> list[int]:
    """Steps of the complete checkpoint folders of a run, oldest first."""
    folder = Path(run) / CHECKPOINTS
    steps = []
    for p in folder.glob("step-*") if folder.is_dir() else ():
        if p.is_dir() and p.name[5:].isdigit() and (p / "config.json").exists():
            steps.append(int(p.name[5:]))
    return sorted(steps)


def write_latest(run: Path, step: int) -> None:
    atomic_write_text(Path(run) / CHECKPOINTS / LATEST, checkpoint_name(step) + "\n")


def latest_checkpoint(run: str | Path) -> Path | None:
    """The checkpoint the `latest` file names (or the highest-numbered one); None if the run has none."""
    run = Path(run)
    pointer = run / CHECKPOINTS / LATEST
    if pointer.exists():
        folder = run / CHECKPOINTS / pointer.read_text(encoding="utf-8").strip()
        if (folder / "config.json").exists():
            return folder
    steps = checkpoint_steps(run)
    return run / CHECKPOINTS / checkpoint_name(steps[-1]) if steps else None


def resolve_model_dir(path: str | Path) -> Path:
    """A model folder from a run folder (its latest checkpoint) or a checkpoint/Hugging Face folder (itself)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run or model folder")
    if (path / "config.json").exists():
        return path
    if (path / CHECKPOINTS).is_dir():
        latest = latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"run {path} has no complete checkpoint yet")
        return latest
    raise FileNotFoundError(f"{path} is neither a model folder (config.json + model.safetensors) nor a run folder "
                            f"(with {CHECKPOINTS}/)")
