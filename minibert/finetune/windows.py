"""Texts longer than the model: cut each into overlapping windows, classify every window, pool per text.

A text of n word pieces, read by a model of max_length positions, keeps L = max_length - 2 pieces per window
(room for [CLS] and [SEP]). Windows start every L - overlap pieces, and the last one ends at the text's end:

    pieces  0 ........................................ n
    window  [0, L)   [s, s+L)   [2s, 2s+L)  ...  [n-L, n)       s = L - overlap

Training: every window is an example with its text's label (a long text gives several). Prediction: a text's
logits are the mean of its windows' logits (the mean log-odds of its parts); a text that fits is one window,
exactly as truncation reads it. Text pairs are not cut: a pair is truncated as before (longest first).
"""

from __future__ import annotations

import numpy as np

from minibert.finetune.data import Examples


def window_starts(n: int, length: int, overlap: int) -> list[int]:
    """Start offsets of the windows of `length` pieces over n pieces, `overlap` pieces shared by neighbours,
    the last window ending at n (one window at 0 when n <= length)."""
    if n <= length:
        return [0]
    step = length - overlap
    starts = list(range(0, n - length, step))
    return starts + [n - length]


def check_window_overlap(overlap: int, max_length: int) -> None:
    """A one-line error for an overlap that leaves a window no new piece: it must be below the window's
    max_length - 2 pieces."""
    if not 0 <= overlap < max_length - 2:
        raise ValueError(f"--window-overlap {overlap} must be at least 0 and below the {max_length - 2} word pieces "
                         f"of a window (max length {max_length} minus [CLS] and [SEP])")


def encode_windows(tokenizer, examples: Examples, max_length: int, overlap: int, progress: bool = False):
    """(encoded windows, owner): token ids and token type ids of every window as encode_examples gives them, and
    owner[w] = the example window w comes from (W,)."""
    from tqdm import tqdm

    if examples.text_pairs is not None:
        raise ValueError("windows cut single texts; text pairs are truncated (--long-texts truncate)")
    check_window_overlap(overlap, max_length)
    length = max_length - 2  # [CLS] pieces [SEP]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    encoded, owner = [], []
    for i, text in enumerate(tqdm(examples.texts, desc="tokenizing", unit="ex", leave=False,
                                  disable=not progress or len(examples) < 2000)):
        pieces = tokenizer.encode(text, add_special_tokens=False, truncation=False).input_ids
        for start in window_starts(len(pieces), length, overlap):
            ids = np.asarray([cls, *pieces[start:start + length], sep], dtype=np.int64)  # (<= max_length,)
            encoded.append((ids, np.zeros_like(ids)))
            owner.append(i)
    return encoded, np.asarray(owner, dtype=np.int64)


def pool_windows(logits: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """(n, C) mean of each text's window logits (W, C)."""
    sums = np.zeros((n, logits.shape[1]), dtype=np.float64)  # (N, C)
    np.add.at(sums, owner, logits)
    counts = np.bincount(owner, minlength=n)  # (N,)
    return sums / counts[:, None]
