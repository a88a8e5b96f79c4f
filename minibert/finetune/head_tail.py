"""Texts longer than the model, read as their head and tail: the first quarter of the window from the text's start,
the rest from its end, the middle dropped (Sun et al. 2019, "How to Fine-Tune BERT for Text Classification?":
the first 128 and last 382 tokens of 512, their best way to read IMDB's long reviews with BERT-base; a review's
verdict tends to come at its end).

    pieces  0 ........................................ n
    kept    [0, H)                        [n - T, n)        H = L // 4, T = L - H, L = max_length - 2

A text that fits is read whole, exactly as truncation reads it. One example per text, so it costs what
truncation costs (windows.py reads every part, at the price of more examples).
"""

from __future__ import annotations

import numpy as np

from minibert.finetune.data import Examples

HEAD_SHARE = 128 / 510  # Sun et al.: 128 of the 510 pieces of a 512-token window


def head_tail(pieces: list[int], length: int) -> list[int]:
    """The first round(length * HEAD_SHARE) pieces and the last of the rest; all of them when they fit."""
    if len(pieces) <= length:
        return list(pieces)
    head = round(length * HEAD_SHARE)
    return list(pieces[:head]) + list(pieces[len(pieces) - (length - head):])


def encode_head_tail(tokenizer, examples: Examples, max_length: int, progress: bool = False) -> list:
    """Token ids and token type ids of every text as encode_examples gives them, a long text cut to its head and
    tail instead of its head alone."""
    from tqdm import tqdm

    if examples.text_pairs is not None:
        raise ValueError("head and tail cut single texts; text pairs are truncated (--long-texts truncate)")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    encoded = []
    for text in tqdm(examples.texts, desc="tokenizing", unit="ex", leave=False,
                     disable=not progress or len(examples) < 2000):
        pieces = tokenizer.encode(text, add_special_tokens=False, truncation=False).input_ids
        ids = np.asarray([cls, *head_tail(pieces, max_length - 2), sep], dtype=np.int64)  # (<= max_length,)
        encoded.append((ids, np.zeros_like(ids)))
    return encoded
