"""The compiled GELU (minibert/layers/gelu_numba.py, used when numba is installed) against the NumPy GELU it
replaces and against an exact float64 erf; the switch (MINIBERT_NUMBA) and its errors."""

import numpy as np
import pytest

from minibert.layers import activations, gelu_select

numba = pytest.importorskip("numba")


@pytest.fixture
def restore_kernel():
    previous = gelu_select.use_numba_gelu(True)
    yield
    gelu_select.use_numba_gelu(previous)


SPECIAL = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-3, -1e-3, 0.5, -0.5, 4.0, -4.0, 9.0, -9.0, 13.0, -13.0, 14.0,
                    -14.0, 20.0, -20.0, 1e4, -1e4], dtype=np.float32)


def inputs():
    rng = np.random.default_rng(7)
    x = np.concatenate([(rng.standard_normal(28_800) * 3), np.linspace(-16, 16, 9_980), SPECIAL])
    return x.astype(np.float32).reshape(400, 97)


def exact(x):
    """GELU and its derivative in float64 with an exact erf (math.erf, element by element)."""
    from math import erf
    x = x.astype(np.float64)
    phi = 0.5 * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))
    return x * phi, phi + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)


def test_numba_gelu_matches_numpy_gelu_and_exact_erf(restore_kernel):
    x = inputs()
    gelu_select.use_numba_gelu(False)
    out_np, deriv_np = activations.gelu_forward(x)
    gelu_select.use_numba_gelu(True)
    assert gelu_select.gelu_kernel_name() == "numba"
    out_nb, deriv_nb = activations.gelu_forward(x)
    assert out_nb.dtype == deriv_nb.dtype == np.float32 and out_nb.shape == x.shape
    scale = 1.0 + np.abs(x)  # out grows like x: compare in units of the input's size
    # the same formula: apart from exp, only the order of roundings differs
    assert (np.abs(out_nb - out_np) / scale).max() < 3e-7
    assert np.abs(deriv_nb - deriv_np).max() < 3e-7
    out_ex, deriv_ex = exact(x)
    assert (np.abs(out_nb - out_ex) / scale).max() < 5e-7
    assert np.abs(deriv_nb - deriv_ex).max() < 5e-7
    # the far tails: exactly 0 and x for the output, 0 and 1 for the derivative
    far = np.abs(x) >= 14
    np.testing.assert_array_equal(out_nb[far], np.where(x[far] > 0, x[far], 0))
    np.testing.assert_array_equal(deriv_nb[far], (x[far] > 0).astype(np.float32))


def test_numba_gelu_propagates_nan_and_inf_as_numpy_does(restore_kernel):
    x = np.array([[np.nan, np.inf, -np.inf, 1.0]], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        gelu_select.use_numba_gelu(False)
        ref = activations.gelu_forward(x)
        gelu_select.use_numba_gelu(True)
        got = activations.gelu_forward(x)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(a[~np.isnan(a)], b[~np.isnan(b)])
    assert np.isnan(got[0][0, 0])  # a diverged run shows up, it is not turned into a number


def test_numba_gelu_gives_the_same_bits_for_any_layout(restore_kernel):
    x = inputs()
    out1, deriv1 = activations.gelu_forward(x)
    rows = np.concatenate([activations.gelu_forward(x[i:i + 7])[0] for i in range(0, len(x), 7)])
    np.testing.assert_array_equal(rows, out1)  # elementwise: a batch's rows do not depend on the others
    # a non-contiguous input (every other column of a wider array) gives the same numbers
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), dtype=np.float32)
    wide[:, ::2] = x
    out_v, deriv_v = activations.gelu_forward(wide[:, ::2])
    np.testing.assert_array_equal(out_v, out1)
    np.testing.assert_array_equal(deriv_v, deriv1)
    # float64 (gradient checks) never goes through the float32 loop
    out64, _ = activations.gelu_forward(x.astype(np.float64))
    assert out64.dtype == np.float64
    assert np.abs(out64 - exact(x)[0]).max() < 1e-12


def test_without_its_derivative_gelu_gives_the_same_output_bits(restore_kernel):
    x = inputs()
    for kernel in (False, True):  # NumPy's and numba's version compiled without the derivative
        gelu_select.use_numba_gelu(kernel)
        out, deriv = activations.gelu_forward(x)
        alone, cache = activations.gelu_forward(x, for_backward=False)
        assert cache is None and deriv is not None
        np.testing.assert_array_equal(alone, out)


def test_setting_read_from_the_environment(restore_kernel, monkeypatch):  # monkeypatch undone first
    for value, setting in (("", "auto"), ("auto", "auto"), ("0", "off"), ("off", "off"), ("1", "on"), ("yes", "on")):
        monkeypatch.setenv("MINIBERT_NUMBA", value)
        assert gelu_select.numba_setting() == setting
    monkeypatch.setenv("MINIBERT_NUMBA", "fast")
    with pytest.raises(ValueError, match=r"MINIBERT_NUMBA='fast': expected 0 .* 1 .* or auto"):
        gelu_select.numba_setting()
    # decided again on the next GELU: 0 keeps NumPy even with numba installed
    monkeypatch.setenv("MINIBERT_NUMBA", "0")
    monkeypatch.setattr(gelu_select, "_numba_loop", None)
    assert gelu_select.gelu_kernel_name() == "numpy"
    monkeypatch.setenv("MINIBERT_NUMBA", "auto")
    monkeypatch.setattr(gelu_select, "_numba_loop", None)
    assert gelu_select.gelu_kernel_name() == "numba"


def test_missing_numba_falls_back_or_is_an_error_when_asked_for(restore_kernel, monkeypatch, recwarn):
    def no_numba():
        raise ImportError("No module named 'numba'", name="numba")
    monkeypatch.setattr(gelu_select, "_load_numba_loop", no_numba)
    monkeypatch.setenv("MINIBERT_NUMBA", "auto")
    gelu_select.use_numba_gelu(None)
    assert gelu_select.gelu_kernel_name() == "numpy"
    assert not recwarn.list  # simply not installed: nothing to warn about
    x = inputs()
    assert activations.gelu_forward(x)[0].shape == x.shape
    monkeypatch.setenv("MINIBERT_NUMBA", "1")
    gelu_select.use_numba_gelu(None)
    for _ in range(2):  # still an error on the next GELU: the failure is not remembered as "use NumPy"
        with pytest.raises(ImportError, match=r"MINIBERT_NUMBA=1 but numba's GELU cannot be loaded .*minibert\[fast\]"):
            activations.gelu_forward(x)


def test_a_broken_numba_warns_and_falls_back(restore_kernel, monkeypatch):
    def broken():  # e.g. numba built for another NumPy, or a compile error
        raise RuntimeError("cannot compile")
    monkeypatch.setattr(gelu_select, "_load_numba_loop", broken)
    monkeypatch.setenv("MINIBERT_NUMBA", "auto")
    gelu_select.use_numba_gelu(None)
    with pytest.warns(RuntimeWarning, match="numba is installed but its GELU failed to load .*cannot compile"):
        assert gelu_select.gelu_kernel_name() == "numpy"
    monkeypatch.setenv("MINIBERT_NUMBA", "1")
    gelu_select.use_numba_gelu(None)
    with pytest.raises(ImportError, match="RuntimeError: cannot compile"):
        gelu_select.numba_gelu_loop()


def test_the_vectorised_exp_against_float64():
    from minibert.layers.gelu_numba import exp_nonpositive
    y = np.concatenate([np.linspace(-86.9, 0, 20_001), -np.logspace(-8, 1.9, 2_001)]).astype(np.float32)
    got = np.array([exp_nonpositive(v) for v in y], dtype=np.float64)
    want = np.exp(y.astype(np.float64))
    assert (np.abs(got - want) / want).max() < 2e-7  # float32's rounding is 6e-8: a few roundings, all the way down
    assert exp_nonpositive(np.float32(0.0)) == 1.0
    for v in (-87.0, -100.0, -np.inf, np.nan):  # below float32's normal range, and NaN: 0 (the GELU's NaN
        assert exp_nonpositive(np.float32(v)) == 0.0  # comes through its other factor, tested above)
