"""Checkpoints of a pre-training run: a Hugging Face model folder plus everything needed to resume exactly.

    step-000500/
        config.json, model.safetensors        BertForPreTraining (transformers loads it with from_pretrained)
        vocab.txt, tokenizer.json,            the tokenizer
        tokenizer_config.json
        training_state/
            optimizer.safetensors             AdamW moments m.<param>, v.<param> and its step count
            state.json                        step, total steps, data position, RNG states, settings, ...

The folder is written under a temporary name and renamed when complete, and only then does `latest` point to
it: a crash while saving leaves the previous checkpoint untouched and still `latest`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

from minibert.io.atomic import atomic_write_text
from minibert.io.safetensors_io import load_safetensors, save_safetensors
from minibert.training.run_dir import (CHECKPOINTS, STATE_DIR, checkpoint_name, checkpoint_steps, read_training_state,
                                       write_latest)



def save_checkpoint(run: Path, step: int, model, tokenizer, optimizer_state: dict, state: dict, keep: int = 0) -> Path:
    """Write checkpoint `step` of `run` atomically, point `latest` at it, and keep only the newest `keep`.
    optimizer_state: the optimizer's `state_dict()` (AdamW's moments and step count)."""
    target = Path(run) / CHECKPOINTS / checkpoint_name(step)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / STATE_DIR).mkdir()
        save_safetensors({k: _contiguous(v) for k, v in optimizer_state.items()},
                         tmp / STATE_DIR / "optimizer.safetensors")
        atomic_write_text(tmp / STATE_DIR / "state.json", json.dumps(state, indent=1) + "\n")
        if target.exists():  # the same step saved again (a resumed run): swap the old folder out first
            old = target.with_name(tmp.name + ".old")
            os.rename(target, old)
            os.rename(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    write_latest(run, step)
    if keep:
        for old_step in checkpoint_steps(run)[:-keep]:
            if old_step != step:
                shutil.rmtree(Path(run) / CHECKPOINTS / checkpoint_name(old_step), ignore_errors=True)
    return target


def _contiguous(a):
    import numpy as np
    return np.ascontiguousarray(a)  # safetensors 0.8.0 writes non-contiguous arrays wrongly


def load_training_state(checkpoint: Path) -> tuple[dict, dict]:
    """(state.json as a dict, optimizer arrays) of a checkpoint folder."""
    state = read_training_state(checkpoint)
    return state, load_safetensors(Path(checkpoint) / STATE_DIR / "optimizer.safetensors")
