"""Layers called by hand the way a learner might: a dtype the layers do not compute in, or a 1-D softmax, is one
clear line, never wrong numbers; and the layers' thread count follows the CPUs this process may use."""

import os

import numpy as np
import pytest

from minibert.layers import threads
from minibert.layers.activations import gelu_forward, gelu_tanh_forward
from minibert.layers.attention import softmax_backward, softmax_forward


@pytest.mark.parametrize("forward", [gelu_forward, gelu_tanh_forward], ids=["gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.int32, np.bool_, np.complex64])
def test_activations_refuse_a_dtype_they_do_not_compute_in(forward, dtype):
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(dtype)
    with pytest.raises(TypeError, match=r"float32 or float64.*astype\(np\.float32\)") as e:
        forward(x)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations_still_take_float32_and_float64(dtype):
    x = np.linspace(-3, 3, 12).reshape(3, 4).astype(dtype)
    out, _ = gelu_forward(x)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, x * 0.5 * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2))), atol=1e-6)


def test_softmax_refuses_fewer_than_two_axes():
    scores = np.random.default_rng(0).standard_normal(100_000)
    for x in (scores, np.array(1.0)):
        with pytest.raises(ValueError, match=r"2 or more axes.*x\[None\]") as e:
            softmax_forward(x.copy())
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="2 or more axes"):
        softmax_backward(np.ones(5), np.ones(5) / 5)
    probs = softmax_forward(scores[None].copy())  # one row: the whole axis, as the message says
    assert probs.sum() == pytest.approx(1.0)


def test_layer_threads_follow_the_usable_cpus(monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)  # taskset -c 0
    assert threads.usable_cpu_count() == 1
    assert threads._threads_from_environment() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # (macOS, Windows: no affinity)
    assert threads.usable_cpu_count() == 8
    assert threads._threads_from_environment() == 8
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert threads._threads_from_environment() == 3
