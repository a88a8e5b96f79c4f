"""Find the checkpoint folder (and its tokenizer) that `--model` names.

`--model` takes what every command takes (minibert.io.model_folder): a checkpoint folder (config.json), a
pre-training or distillation run folder or its checkpoints/ folder (the latest checkpoint), or `minilm` (the
built-in all-MiniLM-L6-v2). The tokenizer (vocab.txt) is looked for in the checkpoint folder and then in the
folders above it up to the one given, because a run may keep one tokenizer for all its checkpoints.
"""

from __future__ import annotations

from pathlib import Path

from minibert.io.model_folder import resolve_model_and_tokenizer, resolve_model_folder



def resolve_checkpoint(spec: str, option: str = "--model") -> Path:
    """The folder with config.json that `spec` (given as `option`) stands for; a one-line error when there is
    none."""
    return resolve_model_folder(spec, option)


def resolve_model(spec: str, option: str = "--model") -> tuple[Path, Path]:
    """(checkpoint folder, tokenizer folder) for a --model argument (or another option naming a model)."""
    return resolve_model_and_tokenizer(spec, option)
