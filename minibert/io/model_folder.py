"""Which model folder a user's `--model X` (or `--teacher X`, or an API argument) means: one rule for every command.

X may be
- a model folder: it holds config.json (a checkpoint, a Hugging Face folder): itself;
- a run folder of `pretrain` or `distill` (it holds checkpoints/): its latest checkpoint;
- a checkpoints folder (RUN/checkpoints, or any folder holding a `latest` file): its latest checkpoint;
- "minilm", in any case: the built-in all-MiniLM-L6-v2 (minibert.io.builtin.minilm_dir), unless a model or
  run folder of that name is in the current folder: a path the user can see wins over the built-in, and a folder
  that could not be loaded anyway (say, one of plots named minilm) does not hide the built-in.
The latest checkpoint is the sub-folder the `latest` file names, else the highest-numbered one (step-000500,
Hugging Face's checkpoint-500): newest_checkpoint, the rule training's resume follows too, except that resume
knows only step-N folders (a run folder holding other numbered folders could resume from another one).
Half-written folders (hidden names: checkpointing.py writes .step-N.<pid>.<hex>.tmp first) never count.

Errors are one line that names the option and the value and says what was expected: FileNotFoundError when
nothing is there (no such path, a run with no complete checkpoint yet, the built-in's package not installed),
ValueError when something is there but is not a model (a file, a folder of something else).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from minibert.io import builtin

CONFIG = "config.json"
VOCAB = "vocab.txt"
TOKENIZER_FILES = (VOCAB, "tokenizer.json")  # either makes a folder a tokenizer (WordPieceTokenizer.from_pretrained)
BUILTIN_MODELS = ("minilm",)  # names accepted in place of a folder
EXPECTED = "expected a model folder with config.json, a run folder with checkpoints/, or 'minilm'"
EXPECTED_TOKENIZER = "expected a folder with vocab.txt, a vocab.txt file, a run folder, or 'minilm'"
# A run folder's checkpoints (training/run_dir.py writes them; every command reads them through this module)
CHECKPOINTS = "checkpoints"
LATEST = "latest"
STEP_FOLDER = re.compile(r"step-(\d+)")  # minibert's own checkpoint folders: all resume takes


def resolve_model_folder(value: str | os.PathLike, option: str | None = "--model") -> Path:
    """The folder with config.json that `value` (given as `option`; None for an API argument) stands for."""
    path = Path(value)
    if _means_builtin(value, _is_model_or_run):
        return _builtin(value, option)
    if not path.exists():
        raise FileNotFoundError(f"{_named(option, value)}: no such run or model folder ({EXPECTED})")
    if not path.is_dir():
        raise ValueError(f"{_named(option, value)}: is a file ({EXPECTED})")
    if (path / CONFIG).is_file():
        return path
    checkpoints = checkpoints_folder(path)
    if checkpoints is None:
        raise ValueError(f"{_named(option, value)}: no {CONFIG} in it and no {CHECKPOINTS}/ sub-folder ({EXPECTED})")
    latest = newest_checkpoint(checkpoints, _NUMBERED)
    if latest is None:
        raise FileNotFoundError(f"{_named(option, value)}: the run has no complete checkpoint yet (no "
                                f"{checkpoints}/step-N/{CONFIG})")
    return latest


def resolve_tokenizer_folder(value: str | os.PathLike, option: str | None = "--tokenizer") -> Path:
    """The tokenizer `value` means: a folder with vocab.txt or tokenizer.json, a vocab.txt file, or whatever
    resolve_model_folder accepts (a run folder: its latest checkpoint's vocabulary; "minilm")."""
    path = Path(value)
    if _means_builtin(value, lambda p: _is_tokenizer(p) or _is_model_or_run(p)):
        return _builtin(value, option)
    if not path.exists():
        raise FileNotFoundError(f"{_named(option, value)}: tokenizer folder not found ({EXPECTED_TOKENIZER})")
    if _is_tokenizer(path):
        return path
    if checkpoints_folder(path) is not None:  # a run folder: the vocabulary saved with its latest checkpoint
        checkpoint = resolve_model_folder(path, option)
        return find_tokenizer_dir(checkpoint, top=path, option=option)
    raise FileNotFoundError(f"{_named(option, value)}: no vocab.txt or tokenizer.json in this folder "
                            f"({EXPECTED_TOKENIZER})")


def resolve_model_and_tokenizer(value: str | os.PathLike, option: str | None = "--model") -> tuple[Path, Path]:
    """(model folder, tokenizer folder) for `value`: the tokenizer is looked for in the model folder, then in
    the folders above it up to the one given, since a run may keep one tokenizer for all its checkpoints."""
    checkpoint = resolve_model_folder(value, option)
    given = Path(value).resolve()
    # The built-in (or any folder outside the one given) has its tokenizer beside it: look nowhere else.
    top = Path(value) if given == checkpoint.resolve() or given in checkpoint.resolve().parents else checkpoint
    return checkpoint, find_tokenizer_dir(checkpoint, top, option)


def find_tokenizer_dir(checkpoint: Path, top: Path | None = None, option: str | None = None) -> Path:
    """The nearest folder, from the checkpoint up to `top`, that holds vocab.txt."""
    top = Path(top or checkpoint).resolve()
    folder = Path(checkpoint).resolve()
    while True:
        if (folder / VOCAB).is_file():
            return folder
        if folder == top or folder.parent == folder or top not in folder.parents:
            break
        folder = folder.parent
    where = f"{option} {checkpoint}" if option else str(checkpoint)
    above = f" or above it up to {top}" if top != Path(checkpoint).resolve() else ""
    raise FileNotFoundError(f"{where}: no {VOCAB} in the checkpoint folder{above}; the tokenizer must be saved "
                            f"with the model")


def checkpoints_folder(path: Path) -> Path | None:
    """The folder of checkpoints `path` stands for: RUN/checkpoints for a run folder, `path` itself when it is
    one (named checkpoints, or holding a `latest` file); None for any other folder."""
    if (path / CHECKPOINTS).is_dir():
        return path / CHECKPOINTS
    if path.is_dir() and (path.name == CHECKPOINTS or (path / LATEST).is_file()):
        return path
    return None


# The numbered folders a model may be loaded from: step-000500 and Hugging Face's checkpoint-500 (resume takes only
# the first); never a hidden (half-written) folder.
_NUMBERED = re.compile(r"[^.].*?(\d+)")


def _means_builtin(value, usable_as_path) -> bool:
    """Whether `value` is the built-in's name and no usable folder of that name is here to take precedence."""
    return str(value).lower() in BUILTIN_MODELS and not (Path(value).is_dir() and usable_as_path(Path(value)))


def _builtin(value, option: str | None) -> Path:
    try:
        return builtin.minilm_dir()
    except FileNotFoundError as e:  # the pip package is missing: say which option asked for it
        raise FileNotFoundError(f"{_named(option, value)}: {e}") from None


def _is_model_or_run(path: Path) -> bool:
    return (path / CONFIG).is_file() or checkpoints_folder(path) is not None


def _is_tokenizer(path: Path) -> bool:
    return path.is_file() or any((path / name).is_file() for name in TOKENIZER_FILES)


def _named(option: str | None, value) -> str:
    return f"{option} {value}" if option else str(value)


def newest_checkpoint(checkpoints: Path, numbered: re.Pattern = STEP_FOLDER) -> Path | None:
    """The checkpoint the `latest` file in `checkpoints` names if it is complete (has config.json), else the
    highest-numbered complete folder whose whole name `numbered` matches (its group 1: the number); None if there
    is none. (A `latest` naming a deleted folder falls back: resume takes the newest checkpoint that is left.)"""
    if not checkpoints.is_dir():
        return None
    pointer = checkpoints / LATEST
    if pointer.is_file():
        name = pointer.read_text(encoding="utf-8").strip()
        if name and (checkpoints / name / "config.json").is_file():
            return checkpoints / name
    found = [(int(m.group(1)), d.name) for d in checkpoints.iterdir()
             if (m := numbered.fullmatch(d.name)) and (d / "config.json").is_file()]
    return checkpoints / max(found)[1] if found else None
