"""Attention's softmax in float32: shifted by each block's maximum, with each row's own maximum where a row lies
far below it (attention.py). Both must give the softmax of float64 within float32 rounding."""

import numpy as np
import pytest

from minibert.layers import threads
from minibert.layers.attention import softmax_forward


def exact_softmax(scores, additive_mask=None):
    s = scores.astype(np.float64) + (0 if additive_mask is None else additive_mask)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("T", [29, 64])
def test_softmax_matches_float64_over_many_blocks(T):
    rng = np.random.default_rng(0)
    scores = (rng.standard_normal((40, 4, T, T)) * 4).astype(np.float32)  # several cache-sized blocks
    mask = np.zeros((40, 1, 1, T), dtype=np.float32)
    mask[::3, ..., T // 2:] = np.finfo(np.float32).min  # padded keys in every third sequence
    probs = softmax_forward(scores.copy(), mask)
    assert np.abs(probs - exact_softmax(scores, mask)).max() < 1e-6
    assert not probs[::3, ..., T // 2:].any()  # padded keys get nothing


@pytest.mark.parametrize("offset", [-60.0, -100.0, -1000.0])
def test_softmax_rows_far_below_their_blocks_maximum(offset):
    # One head's scores far below the others' in the same block: shifted by the block's maximum its exps would
    # underflow (at -100 every one is 0, and the row would be 0 / 0); those blocks shift row by row.
    rng = np.random.default_rng(1)
    scores = (rng.standard_normal((6, 4, 64, 64)) * 3).astype(np.float32)
    scores[:, 1] += np.float32(offset)
    scores[:, 2, 5] += np.float32(50.0)  # and one row far above
    assert threads.rows_per_block(scores[0].size) >= 1  # blocks of whole sequences: heads 0-3 share a block
    probs = softmax_forward(scores.copy())
    assert np.isfinite(probs).all()
    assert np.abs(probs - exact_softmax(scores)).max() < 1e-6
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)
