"""float64 finite-difference gradient checks, one per layer: the backward of every layer must equal the
numerical derivative of its forward (relative error < 1e-6) for the input and for every parameter."""

import zlib

import numpy as np
import pytest
from gradcheck import check_grad

from minibert.config import BertConfig
from minibert.layers import activations
from minibert.layers.attention import self_attention_backward, self_attention_forward
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.embedding import embedding_backward, embedding_forward
from minibert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward
from minibert.layers.heads import (mlm_head_backward, mlm_head_forward, nsp_head_backward, nsp_head_forward,
                                   pooler_backward, pooler_forward)
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.layers.loss import cross_entropy_backward, cross_entropy_forward
from minibert.models.bert import bert_param_shapes
from minibert.models.init import init_param
from minibert.models.pretraining import mlm_head_shapes

TOL = 1e-6
rng = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def inputs_of_its_own(request):
    """Each test draws its inputs from a seed of its own name: under pytest-xdist the tests a worker ran
    before it would otherwise decide them."""
    global rng
    rng = np.random.default_rng(zlib.crc32(request.node.name.encode()))


def randn(*shape):
    return rng.standard_normal(shape)


def small_config(**kw):
    values = dict(vocab_size=23, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=12,
                  max_position_embeddings=10, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    values.update(kw)
    return BertConfig(**values)


def make_params(shapes, cfg):
    r = np.random.default_rng(5)
    params = {n: init_param(n, s, r, cfg, np.float64) for n, s in shapes.items()}
    for p in params.values():  # non-trivial LayerNorm weights and biases, so their gradients matter
        p += 0.1 * r.standard_normal(p.shape)
    grads = {n: np.zeros_like(p) for n, p in params.items()}
    return params, grads


def test_linear():
    x, w, b = randn(2, 3, 5), randn(4, 5), randn(4)
    R = randn(2, 3, 4)
    f = lambda: float((linear_forward(x, w, b)[0] * R).sum())  # noqa: E731
    out, cache = linear_forward(x, w, b)
    dw, db = np.zeros_like(w), np.zeros_like(b)
    dx = linear_backward(R, cache, w, dw, db)
    assert check_grad(f, x, dx) < TOL
    assert check_grad(f, w, dw) < TOL
    assert check_grad(f, b, db) < TOL


def test_linear_backward_accumulates():
    x, w, b = randn(3, 5), randn(4, 5), randn(4)
    _, cache = linear_forward(x, w, b)
    dw, db = np.ones_like(w), np.ones_like(b)
    R = randn(3, 4)
    linear_backward(R, cache, w, dw, db)
    np.testing.assert_allclose(dw, 1.0 + R.T @ x)
    np.testing.assert_allclose(db, 1.0 + R.sum(0))


def test_layernorm():
    x, w, b = randn(3, 4, 6) * 2 + 1, 1 + 0.3 * randn(6), randn(6)
    R = randn(3, 4, 6)
    f = lambda: float((layernorm_forward(x.copy(), w, b, 1e-12)[0] * R).sum())  # noqa: E731
    _, cache = layernorm_forward(x.copy(), w, b, 1e-12)
    dw, db = np.zeros_like(w), np.zeros_like(b)
    dx = layernorm_backward(R, cache, w, dw, db)
    assert check_grad(f, x, dx) < TOL
    assert check_grad(f, w, dw) < TOL
    assert check_grad(f, b, db) < TOL


@pytest.mark.parametrize("name", ["gelu", "gelu_new", "gelu_pytorch_tanh", "relu"])
def test_activations(name):
    fwd, bwd = activations.get_activation(name)
    x = randn(4, 7) * 2
    if name == "relu":
        x[np.abs(x) < 1e-3] = 0.5  # the kink at 0 has no derivative
    R = randn(4, 7)
    f = lambda: float((fwd(x)[0] * R).sum())  # noqa: E731
    _, cache = fwd(x)
    assert check_grad(f, x, bwd(R, cache)) < TOL


def test_tanh():
    x, R = randn(5, 3), randn(5, 3)
    f = lambda: float((activations.tanh_forward(x)[0] * R).sum())  # noqa: E731
    _, cache = activations.tanh_forward(x)
    assert check_grad(f, x, activations.tanh_backward(R, cache)) < TOL


def test_dropout_backward_uses_the_forward_mask():
    x, R = randn(50, 40), randn(50, 40)
    seed = 7
    f = lambda: float((dropout_forward(x, 0.3, np.random.default_rng(seed), True)[0] * R).sum())  # noqa: E731
    _, mask = dropout_forward(x, 0.3, np.random.default_rng(seed), True)
    assert check_grad(f, x, dropout_backward(R, mask), max_entries=200) < TOL


def test_dropout_statistics_and_eval_mode():
    x = np.ones((400, 500))
    out, mask = dropout_forward(x, 0.1, np.random.default_rng(0), True)
    assert abs((out == 0).mean() - 0.1) < 0.005  # drops the asked fraction
    assert abs(out.mean() - 1.0) < 0.01  # inverted dropout keeps the expectation
    same, none = dropout_forward(x, 0.1, np.random.default_rng(0), False)
    assert same is x and none is None


def test_cross_entropy_with_ignore_index():
    logits = randn(6, 5)
    labels = np.array([1, -100, 4, 0, -100, 2])
    f = lambda: cross_entropy_forward(logits, labels)[0]  # noqa: E731
    loss, cache = cross_entropy_forward(logits, labels)
    # against a direct computation of -mean(log softmax[label]) over the four labelled rows
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    keep = labels != -100
    assert loss == pytest.approx(-logp[keep, labels[keep]].mean(), rel=1e-12)
    d = cross_entropy_backward(cache)
    assert np.all(d[~keep] == 0)
    assert check_grad(f, logits, d) < TOL


def test_cross_entropy_backward_can_write_over_its_cached_softmax():
    logits, labels = randn(6, 5).astype(np.float32), np.array([1, -100, 4, 0, -100, 2])
    expected = cross_entropy_backward(cross_entropy_forward(logits, labels)[1], 0.5)
    _, cache = cross_entropy_forward(logits, labels)
    d = cross_entropy_backward(cache, 0.5, overwrite=True)
    assert d is cache[0]  # no second (N, C) array: the models' backward uses this for the MLM head's (M, V)
    np.testing.assert_array_equal(d, expected)  # the same operations: the same bits


@pytest.mark.parametrize("p_drop", [0.0, 0.2])
def test_self_attention_with_padding(p_drop):
    cfg = small_config()
    params, grads = make_params({f"self.{n}.{k}": (8, 8) if k == "weight" else (8,)
                                 for n in ("query", "key", "value") for k in ("weight", "bias")}, cfg)
    x = randn(2, 5, 8)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    additive = ((1 - mask[:, None, None, :]) * np.finfo(np.float64).min)
    R = randn(2, 5, 8)

    def run():
        return self_attention_forward(x, params, "self.", additive, 2, p_drop, np.random.default_rng(3), True)

    f = lambda: float((run()[0] * R).sum())  # noqa: E731
    ctx, probs, cache = run()
    assert np.allclose(probs[1, :, :, 3:], 0.0)  # padded keys get no attention
    if p_drop == 0.0:
        assert np.allclose(probs.sum(-1), 1.0)
    dx = self_attention_backward(R, cache, grads, "self.")
    assert check_grad(f, x, dx) < TOL
    for name in params:
        assert check_grad(f, params[name], grads[name]) < TOL, name


def test_embeddings_with_repeated_ids():
    cfg = small_config(hidden_dropout_prob=0.1)
    params, grads = make_params({k: v for k, v in bert_param_shapes(cfg).items() if k.startswith("embeddings")},
                                cfg)
    ids = np.array([[3, 5, 3, 3], [7, 5, 0, 0]])  # repeats: the scatter-add must sum them
    types = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    R = randn(2, 4, 8)

    def run():
        return embedding_forward(params, "", ids, types, 1e-12, 0.1, np.random.default_rng(2), True)

    f = lambda: float((run()[0] * R).sum())  # noqa: E731
    _, cache = run()
    embedding_backward(R, cache, params, grads, "", pad_token_id=0)
    word = "embeddings.word_embeddings.weight"
    for name in params:
        if name != word:
            assert check_grad(f, params[name], grads[name]) < TOL, name
    # The word embeddings: the true derivative everywhere but the [PAD] row, which (as Hugging Face's
    # padding_idx) gets no gradient from the lookup.
    assert check_grad(f, params[word][1:], grads[word][1:]) < TOL
    assert np.all(grads[word][[0, 1, 2, 4, 6]] == 0)  # [PAD] and the unused rows untouched


@pytest.mark.parametrize("rows", [None, np.array([0, 3, 6, 7])], ids=["all rows", "some rows"])
@pytest.mark.parametrize("act,model_type", [("gelu", "bert"), ("gelu_new", "bert"), ("relu", "bert"),
                                            ("gelu", "roberta-prelayernorm"), ("gelu_new", "albert")])
def test_encoder_layer(act, model_type, rows):
    """Post-LN (BERT), pre-LN (RobertaPreLayerNorm's layer) and ALBERT's layer (no dropout after the FFN); with
    rows, the layer's output at some flat positions only (the sparse last layer: every position still feeds
    attention, so every x gets a gradient)."""
    cfg = small_config(hidden_act=act, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                       model_type=model_type)
    shapes = {k: v for k, v in bert_param_shapes(cfg, "", pooler=False).items() if k.startswith("encoder.layer.0.")}
    params, grads = make_params(shapes, cfg)
    x = randn(2, 5, 8)
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    additive = (1 - mask[:, None, None, :]) * np.finfo(np.float64).min
    R = randn(2, 5, 8) if rows is None else randn(len(rows), 8)

    def run():
        return encoder_layer_forward(x, params, "encoder.layer.0.", additive, cfg, np.random.default_rng(9), True,
                                     rows)

    f = lambda: float((run()[0] * R).sum())  # noqa: E731
    _, _, cache = run()
    dx = encoder_layer_backward(R, cache, params, grads, "encoder.layer.0.", cfg)
    assert check_grad(f, x, dx) < TOL
    for name in params:
        assert check_grad(f, params[name], grads[name], max_entries=40) < TOL, name


def test_pooler_mlm_and_nsp_heads():
    cfg = small_config()
    shapes = {"pooler.dense.weight": (8, 8), "pooler.dense.bias": (8,),
              "bert.embeddings.word_embeddings.weight": (23, 8),
              "cls.seq_relationship.weight": (2, 8), "cls.seq_relationship.bias": (2,)}
    shapes.update(mlm_head_shapes(cfg))
    params, grads = make_params(shapes, cfg)
    h = randn(3, 4, 8)
    R_pool, R_mlm, R_nsp = randn(3, 8), randn(5, 23), randn(3, 2)
    rows = np.array([0, 2, 5, 7, 11])

    def f():
        pooled, _ = pooler_forward(h, params, "")
        logits, _ = mlm_head_forward(h.reshape(-1, 8)[rows], params, "bert.", cfg)
        nsp, _ = nsp_head_forward(pooled, params)
        return float((pooled * R_pool).sum() + (logits * R_mlm).sum() + (nsp * R_nsp).sum())

    pooled, c_pool = pooler_forward(h, params, "")
    _, c_mlm = mlm_head_forward(h.reshape(-1, 8)[rows], params, "bert.", cfg)
    _, c_nsp = nsp_head_forward(pooled, params)
    dpooled = R_pool + nsp_head_backward(R_nsp, c_nsp, params, grads)
    dh = np.zeros_like(h)
    dh[:, 0] += pooler_backward(dpooled, c_pool, params, grads, "")
    dh.reshape(-1, 8)[rows] += mlm_head_backward(R_mlm, c_mlm, params, grads, "bert.", cfg)
    assert check_grad(f, h, dh) < TOL
    for name in params:
        assert check_grad(f, params[name], grads[name], max_entries=40) < TOL, name


def test_gelu_float32_matches_exact_erf(gelu_kernel):
    # float32 A&S erf (NumPy's passes, or numba's loop) vs float64 exact erf
    x = (randn(300, 200) * 3).astype(np.float32)
    out32, cache32 = activations.gelu_forward(x)
    out64, cache64 = activations.gelu_forward(x.astype(np.float64))
    assert out32.dtype == np.float32
    assert np.abs(out32 - out64).max() < 3e-6
    R = randn(300, 200)
    d32 = activations.gelu_backward(R.astype(np.float32), cache32)
    d64 = activations.gelu_backward(R, cache64)
    assert np.abs(d32 - d64).max() < 1e-5 * np.abs(d64).max()


def test_attention_with_a_fully_padded_row_and_one_token():
    cfg = small_config()
    params, grads = make_params({f"self.{n}.{k}": (8, 8) if k == "weight" else (8,)
                                 for n in ("query", "key", "value") for k in ("weight", "bias")}, cfg)
    x = randn(2, 3, 8)
    mask = np.array([[1, 1, 0], [0, 0, 0]])  # the second sequence is all padding
    additive = (1 - mask[:, None, None, :]) * np.finfo(np.float64).min
    ctx, probs, cache = self_attention_forward(x, params, "self.", additive, 2, 0.0, None, False)
    assert np.isfinite(ctx).all()
    np.testing.assert_allclose(probs[1], 1 / 3)  # nothing to prefer: uniform, as in Hugging Face
    dx = self_attention_backward(np.ones_like(ctx), cache, grads, "self.")
    assert np.isfinite(dx).all()
    one, p1, _ = self_attention_forward(x[:, :1], params, "self.", None, 2, 0.0, None, False)  # T = 1
    np.testing.assert_allclose(p1, 1.0)


def test_cross_entropy_with_every_label_ignored():
    logits = randn(4, 5)
    loss, cache = cross_entropy_forward(logits, np.full(4, -100))
    assert loss == 0.0 and not np.signbit(loss)
    assert not cross_entropy_backward(cache).any()
