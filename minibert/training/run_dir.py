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
        .lock                    held by the process training the run (hold_run_dir), empty
"""

from __future__ import annotations

import errno
import json
import shutil
import time
from pathlib import Path

from minibert.io.atomic import atomic_write_text, check_folder_path

CHECKPOINTS = "checkpoints"
LATEST = "latest"
RUN_FILES = ("settings.json", "metrics.jsonl", "summary.json", "training.png")  # what a run writes beside checkpoints/


def default_run_name(config: str, corpus_name: str) -> str:
    config = Path(config).stem if config.endswith(".json") else config
    return f"{config}-{corpus_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def check_new_run_dir(runs_dir: str | Path, name: str | None = None) -> None:
    """Refuse, before any data work, a --runs-dir that cannot hold folders, or a --name whose folder holds a run
    that can be resumed (one with a checkpoint)."""
    runs = Path(runs_dir)
    check_folder_path(runs, "--runs-dir")
    if name is None:
        return
    run = runs / name
    if run.exists() and not run.is_dir():
        raise FileExistsError(f"--name {name}: {run} is a file; pick another --name")
    if latest_checkpoint(run) is not None:
        raise FileExistsError(f"run folder {run} already holds a run; resume it with --resume {run} or pick "
                              f"another --name")


_held = {}  # run folder (resolved) -> its open lock file, while this process trains it
# How long a held lock is waited for before the run counts as taken: the processes of a job that was just killed
# (mpiexec after MPI_Abort) may still hold it for a moment after the launcher has returned.
LOCK_GRACE_SECONDS = 3.0


def hold_run_dir(run: Path) -> None:
    """Mark `run` as trained by this process until release_run_dirs(), or refuse it if another live process is
    training it: an advisory lock on run/.lock, which the kernel also releases when the process ends, however it
    ends. Where the file system has no locks (some network file systems), runs go unguarded."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return
    key = str(Path(run).resolve())
    if key in _held:
        return
    f = open(run / ".lock", "a")
    give_up = time.monotonic() + LOCK_GRACE_SECONDS
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN) and time.monotonic() < give_up:
                time.sleep(0.1)  # a process that is ending (a job just killed) lets go of it in a moment
                continue
            f.close()
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise FileExistsError(f"run folder {run} is being trained by another process right now; let it "
                                      f"finish (or, for a new run, pick another --name)") from None
            return  # (ENOSYS, ENOLCK: no locking here)
    _held[key] = f


def check_not_being_trained(run: Path) -> None:
    """Refuse `run` if another live process is training it (holds its lock past hold_run_dir's grace period),
    without holding it: the early check of --resume, before any data is prepared; the training then takes the
    lock itself."""
    key = str(Path(run).resolve())
    if key in _held:
        return
    hold_run_dir(run)  # (raises if another process holds it)
    held = _held.pop(key, None)
    if held is not None:
        held.close()


def release_run_dirs() -> None:
    """Let other processes start or resume the runs this process held (the end of a `pretrain` call)."""
    while _held:
        _held.popitem()[1].close()


def create_run_dir(runs_dir: str | Path, name: str, log=None) -> Path:
    """A new, empty run folder; refuses to reuse one that holds a run with a checkpoint (use --resume for that)
    or one that another process is training. A run stopped before its first checkpoint cannot be resumed, so
    its folder is emptied and reused (said on `log`)."""
    check_folder_path(runs_dir, "--runs-dir")
    run = Path(runs_dir) / name
    run.mkdir(parents=True, exist_ok=True)
    hold_run_dir(run)  # first: a run still going that has not saved a checkpoint yet must not be emptied
    check_new_run_dir(runs_dir, name)  # (after the lock: the run may have saved its first checkpoint meanwhile)
    if (run / "settings.json").exists() or (run / CHECKPOINTS).exists():
        shutil.rmtree(run / CHECKPOINTS, ignore_errors=True)
        for leftover in RUN_FILES:
            (run / leftover).unlink(missing_ok=True)
        if log is not None:
            log(f"note: {run} held a run stopped before its first checkpoint; this run replaces it")
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
    """A model folder from a run folder or its checkpoints/ folder (the latest checkpoint), or a checkpoint/Hugging
    Face folder (itself)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run or model folder")
    if (path / "config.json").exists():
        return path
    if path.name == CHECKPOINTS and not (path / CHECKPOINTS).is_dir():  # RUN/checkpoints: the run's latest
        path = path.parent
    if (path / CHECKPOINTS).is_dir():
        latest = latest_checkpoint(path)
        if latest is None:
            raise FileNotFoundError(f"run {path} has no complete checkpoint yet")
        return latest
    raise FileNotFoundError(f"{path} is neither a model folder (config.json + model.safetensors) nor a run folder "
                            f"(with {CHECKPOINTS}/)")


def finished_run(run_dir: Path, checkpoint: Path) -> dict | None:
    """The saved summary of a run that already did all its steps (its latest checkpoint, `checkpoint`, is at its
    plan's last step and its summary.json is written), or None: there is something to resume. (A run whose last
    checkpoint was written but not its summary, say a crash while plotting, resumes to write its end.)"""
    from minibert.training.checkpointing import read_training_state
    state = read_training_state(checkpoint)
    total = (state.get("plan") or {}).get("total_steps")
    if not isinstance(total, int) or state.get("step", 0) < total:
        return None
    try:
        summary = json.loads((Path(run_dir) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return summary if isinstance(summary, dict) and summary.get("steps") == state["step"] else None


def nothing_to_resume(run_dir: Path, summary: dict) -> str:
    """The one line `--resume` of a finished run says (`summary`: what finished_run returned)."""
    run_dir = Path(run_dir).resolve()
    return (f"run {run_dir} already finished its {summary['steps']:,} steps; nothing to resume (its numbers: "
            f"{run_dir / 'summary.json'})")
