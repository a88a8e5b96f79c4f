"""Layers called by hand the way a learner might: a dtype the layers do not compute in is one clear line, never
wrong numbers; a 1-D softmax is that row's softmax; and the thread counts follow the CPUs this process may use."""

import os

import numpy as np
import pytest

from minibert import blas
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


def test_softmax_of_one_row_is_the_softmax_of_that_row_in_a_batch():
    scores = np.random.default_rng(0).standard_normal(1000)
    probs = softmax_forward(scores.copy())  # 1-D: the softmax over its only axis
    assert probs.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(probs, softmax_forward(scores[None].copy())[0])
    dprobs = np.random.default_rng(1).standard_normal(1000)
    np.testing.assert_array_equal(softmax_backward(dprobs.copy(), probs), softmax_backward(dprobs[None].copy(),
                                                                                           probs[None])[0])


def test_thread_counts_follow_the_usable_cpus(monkeypatch):
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)  # taskset -c 0
    assert blas.usable_cpu_count() == 1
    assert blas.threads_from_environment() == 1
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)  # (macOS, Windows: no affinity)
    assert blas.usable_cpu_count() == 8
    assert blas.threads_from_environment() == 8
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    assert blas.threads_from_environment() == 3
