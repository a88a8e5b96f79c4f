"""float64 finite-difference checks of ELECTRA's new pieces: the replaced-token-detection head, the sigmoid
binary cross-entropy over active tokens, and the MLM head under the generator's names (dense H -> E)."""

import zlib

import numpy as np
import pytest
from gradcheck import check_grad

from minibert.config import BertConfig
from minibert.layers.heads import (ELECTRA_GENERATOR_HEAD, mlm_head_backward, mlm_head_forward, rtd_head_backward,
                                   rtd_head_forward)
from minibert.layers.loss import bce_with_logits_backward, bce_with_logits_forward

TOL = 1e-6
rng = np.random.default_rng(77)


@pytest.fixture(autouse=True)
def inputs_of_its_own(request):
    """Each test draws its inputs from a seed of its own name: under pytest-xdist the tests a worker ran
    before it would otherwise decide them."""
    global rng
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def cfg(act="gelu"):
    return BertConfig(vocab_size=17, hidden_size=6, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                      hidden_act=act)


def rtd_params(H):
    p = {"discriminator_predictions.dense.weight": rng.standard_normal((H, H)) * 0.5,
         "discriminator_predictions.dense.bias": rng.standard_normal(H) * 0.1,
         "discriminator_predictions.dense_prediction.weight": rng.standard_normal((1, H)),
         "discriminator_predictions.dense_prediction.bias": rng.standard_normal(1)}
    return p, {k: np.zeros_like(v) for k, v in p.items()}


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_rtd_head_gradients(act):
    config = cfg(act)
    params, grads = rtd_params(6)
    h = rng.standard_normal((2, 5, 6))
    R = rng.standard_normal((2, 5))
    f = lambda: float((rtd_head_forward(h, params, config)[0] * R).sum())  # noqa: E731
    logits, cache = rtd_head_forward(h, params, config)
    assert logits.shape == (2, 5)
    dh = rtd_head_backward(R, cache, params, grads, config)
    assert check_grad(f, h, dh) < TOL
    for name in params:
        assert check_grad(f, params[name], grads[name]) < TOL, name


def test_bce_gradient_and_value():
    x = rng.standard_normal(12) * 3
    y = (rng.random(12) < 0.5).astype(np.int64)
    x[0], x[1] = 40.0, -40.0  # far in the tails: the stable form must not overflow or lose the gradient
    y[0], y[1] = 0, 0  # x = 40 labelled 0: a loss of 40, which a naive log(1 - sigmoid(x)) makes infinite
    active = rng.random(12) < 0.7
    active[:2] = True
    loss, cache = bce_with_logits_forward(x, y, active)
    # -log sigmoid(x) = softplus(-x), -log(1 - sigmoid(x)) = softplus(x): a second formula for the same loss
    reference = np.where(y == 1, np.logaddexp(0, -x), np.logaddexp(0, x))
    np.testing.assert_allclose(loss, reference[active].mean(), rtol=1e-12)
    assert reference[0] > 39  # the tail with a large loss is among the checked tokens
    dx = bce_with_logits_backward(cache, 2.0)
    assert np.all(dx[~active] == 0)
    f = lambda: 2.0 * bce_with_logits_forward(x, y, active)[0]  # noqa: E731
    assert check_grad(f, x, dx) < TOL


def test_bce_no_active_token_is_zero():
    loss, cache = bce_with_logits_forward(np.ones(3), np.ones(3, dtype=int), np.zeros(3, dtype=bool))
    assert loss == 0.0 and not bce_with_logits_backward(cache).any()


def test_generator_head_gradients_with_projection_widths():
    # the generator head maps H (4) to the embedding width E (6) and decodes with the E-wide tied embeddings
    config, H, E, V = cfg("relu"), 4, 6, 17  # relu in the config: the generator head must still use gelu
    n = ELECTRA_GENERATOR_HEAD
    params = {n.dense + ".weight": rng.standard_normal((E, H)), n.dense + ".bias": rng.standard_normal(E),
              n.layer_norm + ".weight": 1 + 0.2 * rng.standard_normal(E),
              n.layer_norm + ".bias": rng.standard_normal(E),
              n.bias: rng.standard_normal(V), n.decoder: rng.standard_normal((V, E))}
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    h = rng.standard_normal((5, H))
    R = rng.standard_normal((5, V))
    f = lambda: float((mlm_head_forward(h, params, "", config, n)[0] * R).sum())  # noqa: E731
    logits, cache = mlm_head_forward(h, params, "", config, n)
    dh = mlm_head_backward(R, cache, params, grads, "", config, n)
    assert check_grad(f, h, dh) < TOL
    for name in params:
        assert check_grad(f, params[name], grads[name]) < TOL, name
    # gelu, not the config's relu: the same head with relu gives other logits
    relu_logits = mlm_head_forward(h, params, "", config, n._replace(activation="relu"))[0]
    assert not np.allclose(logits, relu_logits)
