"""The untrained twin of a model: the same architecture and tokenizer, freshly initialised weights (seed 0).
Fine-tuned with the same recipe beside the pre-trained model, it shows what the pre-training is worth."""

from __future__ import annotations

import shutil
from pathlib import Path


def untrained_copy(model: str, folder: Path) -> Path:
    """Write `model`'s config and tokenizer with new weights (seed 0) into `folder` (kept if already made) and return
    it. Written beside it and renamed, so that an interrupted copy is never taken for a finished one."""
    from minibert.io.model_folder import resolve_model_and_tokenizer
    from minibert.models import BertForPreTraining
    from minibert.tokenizer import WordPieceTokenizer

    folder = Path(folder)
    if (folder / "config.json").exists():
        return folder
    checkpoint, tokenizer_dir = resolve_model_and_tokenizer(model, "--model")
    config = BertForPreTraining.from_pretrained(checkpoint).config
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    BertForPreTraining(config, seed=0).save_pretrained(partial)
    WordPieceTokenizer.from_pretrained(tokenizer_dir).save_pretrained(partial)
    partial.rename(folder)
    return folder
