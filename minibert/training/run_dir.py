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
import os
import re
import shutil
import time
from pathlib import Path

from minibert._plural import counted
from minibert.io.atomic import atomic_write_text, check_folder_path
from minibert.io.model_folder import CHECKPOINTS, LATEST, STEP_FOLDER, newest_checkpoint, resolve_model_folder

STATE_DIR = "training_state"  # in each checkpoint: what resuming needs besides the model (checkpointing.py)
RUN_FILES = ("settings.json", "metrics.jsonl", "summary.json", "training.png")  # what a run writes beside checkpoints/


def default_run_name(config, corpus_name: str) -> str:
    """<config>-<corpus>-<date>-<time>; `config`: a preset name, a config.json path (its file name's stem) or a
    BertConfig (its model_type, layers and hidden size: bert-L2-H128)."""
    if not isinstance(config, str):
        config = f"{config.model_type}-L{config.num_hidden_layers}-H{config.hidden_size}"
    elif config.endswith(".json"):
        config = Path(config).stem
    return f"{config}-{corpus_name}-{time.strftime('%Y%m%d-%H%M%S')}"


def init_run_stem(init: str) -> str:
    """What a continued run's default name starts with: the folder it starts from (a run's, for a checkpoint
    folder step-N inside one)."""
    path = Path(init).resolve()
    if re.fullmatch(r"(step|checkpoint)-\d+", path.name) and path.parent.name == "checkpoints":
        path = path.parent.parent
    return path.name


def free_run_name(runs_dir: str | Path, name: str) -> str:
    """`name`, or name-2, name-3, ... when a folder of that name is already there: a default name (it has the
    time to the second) must not land on a run started in the same second, say by a loop over seeds."""
    candidate, n = name, 1
    while (Path(runs_dir) / candidate).exists():
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def resume_advice(run: str | Path) -> str:
    """How to resume `run`, from the command line and from Python: the settings are shared by both."""
    return f"--resume {run} (in Python: resume=\"{run}\" in the settings)"


def check_new_run_dir(runs_dir: str | Path, name: str | None = None) -> None:
    """Refuse, before any data work, a runs_dir (--runs-dir) that cannot hold folders, or a name (--name) whose
    folder holds a run that can be resumed (one with a checkpoint)."""
    runs = Path(runs_dir)
    check_folder_path(runs, "runs_dir (--runs-dir)")
    if name is None:
        return
    run = runs / name
    if run.exists() and not run.is_dir():
        raise FileExistsError(f"name (--name) {name}: {run} is a file; pick another name")
    if latest_checkpoint(run) is not None:
        raise FileExistsError(f"run folder {run} already holds a run; resume it with {resume_advice(run)} or pick "
                              f"another name (--name)")


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
                                      f"finish (or, for a new run, pick another name: --name)") from None
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


def create_run_dir(runs_dir: str | Path, name: str, log=None, made: list | None = None) -> Path:
    """A new, empty run folder; refuses to reuse one that holds a run with a checkpoint (resume that instead)
    or one that another process is training. A run stopped before its first checkpoint cannot be resumed, so
    its folder is emptied and reused (said on `log`). `made`: a list this appends the folders it made to, the run
    folder first (what remove_unstarted_run may remove)."""
    check_folder_path(runs_dir, "runs_dir (--runs-dir)")
    run = Path(runs_dir) / name
    missing, folder = [], run.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    run.parent.mkdir(parents=True, exist_ok=True)
    try:
        run.mkdir()  # (made here, by this process: another one starting the same name at once gets the error)
        created = True
    except FileExistsError:
        created = False
    hold_run_dir(run)  # first: a run still going that has not saved a checkpoint yet must not be emptied
    if created and made is not None:  # made and held by this call: it may remove them again (those above if empty)
        made.extend([run] + missing)
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
    return sorted(int(m.group(1)) for p in (folder.iterdir() if folder.is_dir() else ())
                  if (m := STEP_FOLDER.fullmatch(p.name)) and (p / "config.json").is_file())


def write_latest(run: Path, step: int) -> None:
    atomic_write_text(Path(run) / CHECKPOINTS / LATEST, checkpoint_name(step) + "\n")


def latest_checkpoint(run: str | Path) -> Path | None:
    """The checkpoint `run` resumes from: newest_checkpoint of its checkpoints/ among minibert's own step-N
    folders; None if the run has none."""
    return newest_checkpoint(Path(run) / CHECKPOINTS)


def resolve_model_dir(path: str | Path, option: str | None = None) -> Path:
    """A model folder from a run folder or its checkpoints/ folder (the latest checkpoint), a checkpoint/Hugging
    Face folder (itself), or "minilm": minibert.io.model_folder.resolve_model_folder, the rule every command
    shares (errors name `option` when given)."""
    return resolve_model_folder(path, option)


def finished_run(run_dir: Path, checkpoint: Path) -> dict | None:
    """The saved summary of a run that already did all its steps (its latest checkpoint, `checkpoint`, is at its
    plan's last step and its summary.json is written), or None: there is something to resume. (A run whose last
    checkpoint was written but not its summary, say a crash while plotting, resumes to write its end.)"""
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
    return (f"run {run_dir} already finished its {counted(summary['steps'], 'step')}; nothing to resume (its "
            f"numbers: {run_dir / 'summary.json'})")


def remove_unstarted_run(made: list[Path]) -> None:
    """Remove the folders in `made` (create_run_dir's: the run folder, then any missing folders above it that this
    process made for it, innermost first) after a failure before the first training step: they hold nothing worth
    keeping (no checkpoint) and would otherwise stay behind. A folder above the run is removed only if it is empty
    then (it may have received another run meanwhile)."""
    shutil.rmtree(made[0], ignore_errors=True)  # first, lock held: a process waiting for the name finds no folder
    release_run_dirs()
    for folder in made[1:]:
        try:
            os.rmdir(folder)
        except OSError:
            break


def resume_settings(run_dir: Path, given: dict, settings_class):
    """(the settings to continue the run in `run_dir` with, its latest checkpoint, run_dir), as `--resume` and
    `pretrain(PretrainSettings(resume=...))` continue it: its saved settings, refused when `given` (the settings
    the user set) differ from them or when the folder holds another command's run or no checkpoint yet.
    settings_class: PretrainSettings or DistillSettings."""
    settings_file = run_dir / "settings.json"
    if not settings_file.exists():
        raise FileNotFoundError(f"--resume {run_dir}: not a run folder (no settings.json)")
    command = getattr(settings_class, "COMMAND", "pretrain")
    written_by = "distill" if "teacher" in read_run_settings(settings_file) else "pretrain"  # (a distillation's
    # settings have a teacher)
    if written_by != command:
        raise ValueError(f"--resume {run_dir}: a minibert {written_by} run, not a {command} run; continue it with "
                         f"minibert {written_by} --resume {run_dir}")
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is None:  # (starting again with the same --name replaces it: training/run_dir.create_run_dir)
        raise FileNotFoundError(f"--resume {run_dir}: the run stopped before its first checkpoint, so there is "
                                f"nothing to resume; start it again with --runs-dir {run_dir.parent} --name "
                                f"{run_dir.name}, which replaces it")
    state = read_training_state(checkpoint)  # the settings only: the optimizer's arrays are read by the training
    saved = settings_class.from_dict(state["settings"], source=str(checkpoint))
    requested = settings_class.from_dict({**saved.to_dict(), **given})
    changed = requested.differences(saved)
    if changed:
        listing = ", ".join(f"--{n.replace('_', '-')} {getattr(requested, n)!r} (run has {getattr(saved, n)!r})"
                            for n in changed)
        raise ValueError(f"--resume continues {run_dir} with its saved settings, but these differ: {listing}; "
                         f"drop them, or start a new run")
    requested.resume = str(run_dir)
    return requested, checkpoint, run_dir


def read_run_settings(path: Path) -> dict:
    """A run's settings.json as a dict; a one-line error when it is not one."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: unreadable ({e}); expected the settings.json a run writes") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path}: expected a JSON object (the settings.json a run writes)")
    return saved


def read_training_state(checkpoint: Path) -> dict:
    """state.json of a checkpoint folder (settings, step, data position...), after checking that the folder can
    be resumed from."""
    folder = Path(checkpoint) / STATE_DIR
    if not (folder / "state.json").exists() or not (folder / "optimizer.safetensors").exists():
        raise FileNotFoundError(f"{checkpoint} has no {STATE_DIR}/state.json and optimizer.safetensors: it is a "
                                f"model folder, not a resumable pre-training checkpoint")
    try:
        return json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{folder / 'state.json'}: not valid JSON ({e})") from None
