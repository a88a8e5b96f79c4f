"""The untrained twin of a model: the same architecture and tokenizer, freshly initialised weights (seed 0).
Fine-tuned with the same recipe beside the pre-trained model, it shows what the pre-training is worth."""

from __future__ import annotations

import shutil
from pathlib import Path

FILES = ("config.json", "model.safetensors", "vocab.txt")  # what a finished twin holds


def untrained_copy(model: str, folder: Path) -> Path:
    """Write `model`'s config and tokenizer with new weights (seed 0) into `folder` (kept if already made) and return
    it. Written beside it and renamed, so that an interrupted copy is never taken for a finished one."""
    from minibert.config import BertConfig
    from minibert.io.model_folder import resolve_model_and_tokenizer
    from minibert.models import BertForPreTraining
    from minibert.tokenizer import WordPieceTokenizer

    folder = Path(folder)
    if all((folder / name).is_file() for name in FILES):
        return folder
    checkpoint, tokenizer_dir = resolve_model_and_tokenizer(model, "--model")
    config = BertConfig.from_json_file(Path(checkpoint) / "config.json")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    BertForPreTraining(config, seed=0).save_pretrained(partial)
    WordPieceTokenizer.from_pretrained(tokenizer_dir).save_pretrained(partial)
    shutil.rmtree(folder, ignore_errors=True)  # (an unfinished copy made in place)
    partial.rename(folder)
    return folder
