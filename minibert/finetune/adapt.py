"""Task-adaptive pre-training (Gururangan et al., 2020): before fine-tuning, go on with the masked-LM objective
on the task's own training texts, without their labels, so that a model pre-trained on other text learns the
task's words and style first.

    windows of the training texts -> dynamic masking -> BertForPreTraining.forward -> backward -> AdamW

The texts are cut into windows of the run's max length (windows.py); each step masks a fresh 15% of a batch of
them (data/masking.py), as pre-training does. The learning rate warms up over the first tenth of the steps and
decays linearly to 0. The adapted model, masked-LM head included, is written to a folder that fine-tuning then
starts from. Only a checkpoint with its masked-LM head can be adapted (a `minibert pretrain` run, not
all-MiniLM-L6-v2, whose head was not published).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from minibert.data.masking import Masker, continuation_mask
from minibert.finetune.train import collate
from minibert.finetune.windows import encode_windows
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay

MLM_HEAD = "cls.predictions.transform.dense.weight"  # present in a checkpoint with its masked-LM head


def check_adaptable(checkpoint: Path) -> None:
    """A one-line error before any work when the checkpoint has no masked-LM head to go on training."""
    from safetensors import safe_open

    with safe_open(str(checkpoint / "model.safetensors"), "np") as f:
        if MLM_HEAD not in f.keys():
            raise ValueError(f"--adapt-steps: {checkpoint / 'model.safetensors'} has no masked-LM head ({MLM_HEAD}) "
                             f"to go on pre-training; drop --adapt-steps")


def adapt(checkpoint: Path, tokenizer, texts, max_length: int, steps: int, lr: float, out: Path, batch_size: int = 32,
          seed: int = 0, log=print, progress: bool = True) -> Path:
    """Continue masked-LM training of `checkpoint` for `steps` steps on `texts`; save it (and the tokenizer) to
    `out` and return `out`. The log gets the mean masked-LM loss of the first and last tenth of the steps."""
    from tqdm import tqdm

    from minibert.finetune.data import Examples
    from minibert.models import BertForPreTraining

    model = BertForPreTraining.from_pretrained(checkpoint, seed=seed)
    model.train()
    windows, _ = encode_windows(tokenizer, Examples(list(texts)), max_length, overlap=0)
    V = model.config.vocab_size
    masker = Masker(V, tokenizer.mask_token_id, sorted(set(tokenizer.all_special_ids)),
                    continuation_mask(tokenizer.ids_to_tokens))
    optimizer = AdamW(model.params, model.grads, lr=lr, weight_decay=0.01)
    rng = np.random.default_rng([seed, 11])
    warmup = max(1, steps // 10)
    order, position, losses = rng.permutation(len(windows)), 0, []
    log(f"adapting to the task's texts: {steps} masked-LM steps of {batch_size} windows ({len(windows)} windows of "
        f"{len(texts)} texts, {math.ceil(len(windows) / batch_size)} steps a pass), peak lr {lr:g}")
    for step in tqdm(range(steps), desc="adapting", unit="step", disable=not progress, leave=False):
        if position + batch_size > len(order):
            order, position = rng.permutation(len(windows)), 0
        chosen = order[position:position + batch_size]
        position += batch_size
        input_ids, token_type_ids, attention_mask = collate(windows, chosen, tokenizer.pad_token_id)
        masked, labels = masker(input_ids, rng)  # (B, T), (B, T)
        result = model.forward(masked, token_type_ids=token_type_ids, attention_mask=attention_mask, labels=labels)
        model.backward()
        clip_grad_norm(model.grads, 1.0)
        optimizer.step(lr=linear_warmup_decay(step, lr, warmup, steps))
        model.zero_grad()
        losses.append(float(result.loss))
    tenth = max(1, steps // 10)
    log(f"masked-LM loss on the task's texts: {np.mean(losses[:tenth]):.3f} in the first tenth of the steps, "
        f"{np.mean(losses[-tenth:]):.3f} in the last")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
