"""Fixed-seed, stratified splits of labelled examples (shared by the built-in data sets and fine-tuning)."""

from __future__ import annotations

import numpy as np


def label_sort_key(name: str):
    """Integer labels in numeric order (so "0".."9","10" sort as numbers), other names alphabetically after."""
    try:
        return (0, int(name), "")
    except ValueError:
        return (1, 0, name)


def stratified_split(labels: list[str], fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(keep, held_out) index arrays: about `fraction` of each class held out, at least one example of every class
    that has two or more, with a fixed seed, so every run (and the baseline) sees the same split."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"split fraction must be between 0 and 1, got {fraction}")
    rng = np.random.default_rng(seed)
    labels_arr = np.array(labels)
    keep, held = [], []
    for name in sorted(set(labels), key=label_sort_key):
        idx = np.flatnonzero(labels_arr == name)
        idx = idx[rng.permutation(len(idx))]
        n_held = 0 if len(idx) < 2 else max(1, int(round(fraction * len(idx))))
        held.extend(idx[:n_held])
        keep.extend(idx[n_held:])
    # shuffled (not grouped by class), deterministic
    return np.array(sorted(keep), dtype=np.int64), np.array(sorted(held), dtype=np.int64)
