"""Attention's softmax in float32 (attention.py: each row shifted by its own maximum, rows summed with an einsum)
against float64, with padding, over many blocks, and with rows whose scores lie far apart."""

import numpy as np
import pytest

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
    assert np.abs(probs - exact_softmax(scores, mask)).max() < 5e-7  # float32 rounding of probabilities up to 1
    assert not probs[::3, ..., T // 2:].any()  # padded keys get nothing


@pytest.mark.parametrize("offset", [-60.0, -100.0, -1000.0])
def test_softmax_rows_far_below_their_blocks_maximum(offset):
    # One head's scores far below the others' in the same block (a sequence's heads always share one). Shifting
    # by the block's maximum instead of each row's, a tempting cheaper reduction, makes these rows underflow (at
    # -100 every exp is 0, and the row 0 / 0) and costs precision elsewhere; softmax_forward must not.
    rng = np.random.default_rng(1)
    scores = (rng.standard_normal((6, 4, 64, 64)) * 3).astype(np.float32)
    scores[:, 1] += np.float32(offset)
    scores[:, 2, 5] += np.float32(50.0)  # and one row far above
    probs = softmax_forward(scores.copy())
    assert np.isfinite(probs).all()
    assert np.abs(probs - exact_softmax(scores)).max() < 5e-7  # float32 rounding of probabilities up to 1
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)
