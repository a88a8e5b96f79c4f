"""float64 finite differences for every distillation loss's hand-written backward, with padding, and the
values those losses must take (zero when student equals teacher, the known KL of two fixed distributions)."""

import numpy as np
import pytest
from gradcheck import check_grad

from minibert.distill.losses import (pooled_cosine_backward, pooled_cosine_forward, soft_target_backward,
                                     soft_target_forward, token_cosine_backward, token_cosine_forward,
                                     token_mse_backward, token_mse_forward)

TOL = 1e-7


def states(seed=0):
    rng = np.random.default_rng(seed)
    s, t = rng.standard_normal((2, 3, 5, 6))
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    return s, t, mask


@pytest.mark.parametrize("forward,backward", [
    (token_cosine_forward, token_cosine_backward),
    (token_mse_forward, token_mse_backward),
    (pooled_cosine_forward, pooled_cosine_backward),
], ids=["token_cosine", "token_mse", "pooled_cosine"])
def test_hidden_state_losses_gradcheck_and_padding(forward, backward):
    s, t, mask = states()
    loss, cache = forward(s, t, mask)
    ds = backward(cache, 1.7)
    assert ds.dtype == s.dtype and ds.shape == s.shape
    assert np.all(ds[mask == 0] == 0)  # padding counts in no loss
    assert check_grad(lambda: 1.7 * forward(s, t, mask)[0], s, ds) < TOL
    # the padded positions' values do not change the loss
    s2 = s.copy()
    s2[mask == 0] += 100.0
    assert forward(s2, t, mask)[0] == pytest.approx(loss, abs=1e-12)
    assert forward(t, t, mask)[0] == pytest.approx(0.0, abs=1e-12)


def test_soft_targets_gradcheck_value_and_temperature():
    rng = np.random.default_rng(1)
    s, t = rng.standard_normal((2, 4, 7)) * 3
    for T in (1.0, 2.0):
        loss, cache = soft_target_forward(s, t, T)
        ds = soft_target_backward(cache, 0.5, dtype=np.float64)
        assert check_grad(lambda: 0.5 * soft_target_forward(s, t, T)[0], s, ds) < TOL
    assert soft_target_forward(t, t, 2.0)[0] == pytest.approx(0.0, abs=1e-12)
    # two rows of known distributions: KL([.5,.5] || [.9,.1]) at T=1
    a, b = np.log([[0.9, 0.1]]), np.log([[0.5, 0.5]])
    assert soft_target_forward(a, b, 1.0)[0] == pytest.approx(0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1))
    loss, cache = soft_target_forward(np.zeros((0, 7)), np.zeros((0, 7)), 2.0)  # no masked position
    assert loss == 0.0 and soft_target_backward(cache) is None
