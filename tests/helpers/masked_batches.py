"""A small padded batch with masked positions, for model tests that run every family on the shared encoder."""

import numpy as np


def padded_masked_batch(vocab_size: int, labelled: dict, seed: int = 0):
    """(ids, mask, labels), each (3, 11): rows 1 and 2 padded from positions 8 and 5; `labelled` maps a row to the
    positions whose token is to be predicted (its id becomes 4, [MASK], in ids)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab_size, (3, 11))
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    ids[mask == 0] = 0
    labels = np.full(ids.shape, -100)
    for row, positions in labelled.items():
        labels[row, positions] = ids[row, positions]
    ids = np.where(labels != -100, 4, ids)
    return ids, mask, labels
