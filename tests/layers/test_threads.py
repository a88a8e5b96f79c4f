"""The row-block thread pool (minibert/layers/threads.py): every row is done exactly once, and the layers give
bit-identical numbers on 1, 2 or 3 threads, equal to the plain whole-array formulas.

The blocks are made tiny here (a few rows) so that small arrays split into many blocks, with a ragged last
block, over every thread: a mis-split (a row skipped, done twice, or a block given the wrong slice of an
argument) leaves garbage or wrong rows in the outputs and fails these tests."""

import threading

import numpy as np
import pytest
from gradcheck import check_grad

from minibert import BertConfig, BertForPreTraining
from minibert.layers import threads
from minibert.layers.activations import gelu_backward, gelu_forward
from minibert.layers.attention import softmax_backward, softmax_forward
from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward
from minibert.layers.linear import linear_backward, linear_forward
from minibert.layers.loss import cross_entropy_backward, cross_entropy_forward


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(threads, "BLOCK_ELEMENTS", 40)
    monkeypatch.setattr(threads, "MIN_ELEMENTS_PER_THREAD", 1)
    before = threads.get_num_threads()
    yield
    threads.set_num_threads(before)


@pytest.mark.parametrize("n_rows,row_size", [(1, 5), (7, 3), (50, 7), (13, 100)])
@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_every_row_exactly_once(tiny_blocks, n_rows, row_size, n_threads):
    threads.set_num_threads(n_threads)
    visits = np.zeros(n_rows, dtype=int)

    def fn(s):
        visits[s] += 1  # blocks never overlap, so the threads never write the same element
    threads.for_row_blocks(fn, n_rows, row_size)
    assert (visits == 1).all()


def test_errors_reach_the_caller(tiny_blocks):
    threads.set_num_threads(2)

    def fn(s):
        if s.start > 0:
            raise ValueError("block failed")
    with pytest.raises(ValueError, match="block failed"):
        threads.for_row_blocks(fn, 20, 10)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_sum_rows(tiny_blocks, n_threads):
    threads.set_num_threads(n_threads)
    x, w = np.random.default_rng(0).standard_normal((2, 23, 7))
    np.testing.assert_allclose(threads.sum_rows(x), x.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(threads.sum_rows(x, w), (x * w).sum(axis=0), rtol=1e-13)


def test_thread_count_follows_blas(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert threads._threads_from_environment() == 3
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert threads._threads_from_environment() == 2


def _layer_results(dtype):
    """Every threaded layer function on fixed random inputs; returns a dict of output arrays."""
    r = np.random.default_rng(0)
    f = lambda *shape: r.standard_normal(shape).astype(dtype)  # noqa: E731
    x, d = f(5, 9, 11), f(5, 9, 11)
    w, b = 1 + 0.1 * f(11), f(11)
    scores, dprobs = f(5, 2, 9, 9), f(5, 2, 9, 9)
    mask = np.zeros((5, 1, 1, 9), dtype=dtype)
    mask[2:, ..., 6:] = np.finfo(dtype).min
    logits, labels = f(23, 17), r.integers(0, 17, 23)
    labels[[3, 10]] = -100
    out = {}
    wl, dl = f(6, 11), f(5, 9, 6)
    out["linear"], c = linear_forward(x, wl, b[:6])
    dw, db = np.zeros((6, 11), dtype=dtype), np.zeros(6, dtype=dtype)
    out["linear_d"] = linear_backward(dl, c, wl, dw, db)
    out["linear_dw"], out["linear_db"] = dw, db
    out["gelu"], c = gelu_forward(x)
    out["gelu_d"] = gelu_backward(d, c)
    out["ln"], c = layernorm_forward(x, w, b, 1e-12)
    dw, db = np.zeros_like(w), np.zeros_like(b)
    out["ln_d"] = layernorm_backward(d, c, w, dw, db)
    out["ln_dw"], out["ln_db"] = dw, db
    out["softmax"] = softmax_forward(scores.copy(), mask)
    out["softmax_d"] = softmax_backward(dprobs.copy(), out["softmax"])
    out["drop"], c = dropout_forward(x, 0.3, np.random.default_rng(1), True)
    out["drop_d"] = dropout_backward(d, c)
    loss, c = cross_entropy_forward(logits, labels)
    out["ce"], out["ce_d"] = np.array(loss), cross_entropy_backward(c, 0.5)
    return out, dict(x=x, d=d, w=w, b=b, wl=wl, dl=dl, scores=scores, dprobs=dprobs, mask=mask, logits=logits,
                     labels=labels)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layers_bit_identical_on_any_thread_count(tiny_blocks, dtype, gelu_kernel):
    threads.set_num_threads(1)
    one, _ = _layer_results(dtype)
    for n in (2, 3):
        threads.set_num_threads(n)
        many, _ = _layer_results(dtype)
        for name in one:
            np.testing.assert_array_equal(many[name], one[name], err_msg=f"{name} on {n} threads")


def test_blocked_layers_match_whole_array_formulas(tiny_blocks):
    threads.set_num_threads(3)
    out, a = _layer_results(np.float64)
    x, d, w, b = a["x"], a["d"], a["w"], a["b"]
    wl, dl = a["wl"], a["dl"]
    np.testing.assert_allclose(out["linear"], x @ wl.T + b[:6], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["linear_d"], dl @ wl, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["linear_dw"], dl.reshape(-1, 6).T @ x.reshape(-1, 11), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["linear_db"], dl.sum(axis=(0, 1)), rtol=1e-12, atol=1e-14)
    from scipy.special import erf
    cdf = 0.5 * (1 + erf(x / np.sqrt(2)))
    np.testing.assert_allclose(out["gelu"], x * cdf, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["gelu_d"], d * (cdf + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)),
                               rtol=1e-12, atol=1e-14)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    xhat = (x - mean) / np.sqrt(var + 1e-12)
    np.testing.assert_allclose(out["ln"], xhat * w + b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["ln_dw"], (d * xhat).sum(axis=(0, 1)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out["ln_db"], d.sum(axis=(0, 1)), rtol=1e-12, atol=1e-14)
    g = d * w
    dx = (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True)) / np.sqrt(var + 1e-12)
    np.testing.assert_allclose(out["ln_d"], dx, rtol=1e-9, atol=1e-11)
    s = a["scores"] + a["mask"]
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(out["softmax"], p, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out["softmax_d"], p * (a["dprobs"] - (a["dprobs"] * p).sum(-1, keepdims=True)),
                               rtol=1e-10, atol=1e-13)
    keep = out["drop"] != 0
    np.testing.assert_allclose(out["drop"][keep], x[keep] / (1 - 19661 / 65536), rtol=1e-12)
    np.testing.assert_array_equal(out["drop_d"] != 0, keep)
    logits, labels = a["logits"], a["labels"]
    valid = labels != -100
    q = np.exp(logits - logits.max(-1, keepdims=True))
    q /= q.sum(-1, keepdims=True)
    loss = -np.log(q[valid, labels[valid]]).mean()
    np.testing.assert_allclose(out["ce"], loss, rtol=1e-12)
    onehot = np.zeros_like(q)
    onehot[np.arange(len(labels)), np.where(valid, labels, 0)] = 1
    np.testing.assert_allclose(out["ce_d"], 0.5 * (q - onehot) * valid[:, None] / valid.sum(), rtol=1e-12,
                               atol=1e-15)


def _batch(cfg):
    r = np.random.default_rng(3)
    ids = r.integers(1, cfg.vocab_size, (3, 9))
    mask = np.ones((3, 9), dtype=np.int64)
    mask[1, 6:] = 0
    labels = np.where(r.random((3, 9)) < 0.4, ids, -100)
    labels[0, 0] = ids[0, 0]  # at least one masked position
    return ids, mask, labels, np.array([0, 1, 1])


def _loss(model, cfg):
    ids, mask, labels, nsl = _batch(cfg)
    model.rng = np.random.default_rng(42)  # the same dropout masks every call
    return model.forward(ids, attention_mask=mask, labels=labels, next_sentence_label=nsl).loss


def _pretraining_step(cfg, dtype):
    model = BertForPreTraining(cfg, seed=1, dtype=dtype)
    loss = _loss(model, cfg)
    model.backward()
    return loss, model


CFG = dict(vocab_size=37, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
           max_position_embeddings=12)  # dropout on: 0.1


def test_model_step_bit_identical_on_any_thread_count(tiny_blocks):
    cfg = BertConfig(**CFG)
    threads.set_num_threads(1)
    loss1, m1 = _pretraining_step(cfg, np.float32)
    threads.set_num_threads(2)
    loss2, m2 = _pretraining_step(cfg, np.float32)
    assert loss1 == loss2
    for name in m1.grads:
        np.testing.assert_array_equal(m2.grads[name], m1.grads[name], err_msg=name)


def test_model_gradient_on_threads(tiny_blocks):
    """The float64 finite-difference check of a whole model, every layer split into blocks over 3 threads."""
    threads.set_num_threads(3)
    cfg = BertConfig(**CFG)
    _, model = _pretraining_step(cfg, np.float64)
    rng = np.random.default_rng(0)
    for name, p in model.params.items():
        err = check_grad(lambda: _loss(model, cfg), p, model.grads[name], rng=rng, max_entries=6)
        assert err < 1e-6, f"{name}: relative error {err:.2e}"


def test_on_this_thread_only_keeps_blocks_on_the_caller(tiny_blocks):
    threads.set_num_threads(3)
    seen = set()
    with threads.on_this_thread_only():
        threads.for_row_blocks(lambda s: seen.add(threading.get_ident()), 50, 7)
    assert seen == {threading.get_ident()}
    threads.for_row_blocks(lambda s: seen.add(threading.get_ident()), 50, 7)
    assert len(seen) >= 2  # and the pool again after the block
