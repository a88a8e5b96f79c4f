"""Activations and their derivatives: exact GELU (erf), tanh-approximate GELU, ReLU, tanh.

NumPy has no erf, so exact GELU needs one:
- float32: Abramowitz & Stegun formula 7.1.26, a polynomial-times-exponential fit of erfc with absolute error
  below 1.5e-7; computed in float32, Phi(x) is within 3e-7 of the exact value (a few float32 roundings), far
  inside the 1e-4 the parity tests allow against torch.
- float64 (gradient checks, reference runs): an erf exact to double precision (scipy's if installed,
  otherwise Python's math.erf applied element by element: slower, but identical numbers).
With numba installed (`pip install 'minibert[fast]'`), the float32 GELU runs the same A&S formula compiled into
one pass (gelu_numba.py, ~5x faster than the ~23 NumPy passes); MINIBERT_NUMBA=0 keeps this file's NumPy code,
which stays the reference the compiled loop is tested against. (`minibert pretrain` keeps NumPy's unless
MINIBERT_NUMBA=1: there numba buys ~3% for ~150 MB; training/pretrain.py.)
"""

import contextlib
import math
import os
import threading
import warnings

import numpy as np

from minibert.layers.gelu_constants import AS_A, AS_P, INV_SQRT_2PI, SQRT_2_OVER_PI, SQRT_HALF
from minibert.layers.threads import for_row_blocks

_erf64 = None  # exact float64 erf, looked up on first use: importing scipy costs ~0.4 s at every start-up


def _exact_erf(z):
    global _erf64
    if _erf64 is None:
        try:  # optional: scipy's vectorised erf
            from scipy.special import erf as _erf64
        except ImportError:  # pragma: no cover - depends on the environment
            _erf64 = np.frompyfunc(math.erf, 1, 1)
    return _erf64(z)


# Abramowitz & Stegun 7.1.26 (its p and a1 .. a5: gelu_constants.py):
# erfc(z) ~= (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-z^2), t = 1/(1 + p z), z >= 0


def check_float(x, layer):
    """A one-line TypeError unless x is float32 or float64, the dtypes minibert's models compute in. The layers
    refuse others rather than compute them: the float32 erf reads the sign bits of 4-byte floats (float16 would
    give garbage), NumPy has no fast float16 arithmetic, and an integer input is a mistake (token ids given where
    activations belong), which a quiet cast would hide."""
    dtype = getattr(x, "dtype", None)
    if dtype not in (np.float32, np.float64):
        given, cast = ((f"a {type(x).__name__}", "np.asarray(x, dtype=np.float32)") if dtype is None
                       else (dtype, "x.astype(np.float32)"))
        raise TypeError(f"{layer} computes in float32 or float64 (minibert's model dtypes), got {given}: cast "
                        f"first, {cast}")


def normal_cdf(x, exp_half_x2, out=None):
    """Phi(x) = 0.5 * (1 + erf(x / sqrt(2))), given exp(-x^2 / 2) (which the caller needs anyway).

    float32 uses A&S 7.1.26 on |x| and gives the result x's sign by copying x's sign bit: np.sign, np.where
    and copysign cost 5-7 multiplies each on float32 arrays, two integer bit operations cost two. The steps
    work in place on two buffers (t and the result).
    """
    check_float(x, "normal_cdf")
    return _normal_cdf(x, exp_half_x2, out)


def _normal_cdf(x, exp_half_x2, out=None):
    """normal_cdf for an x already checked (gelu_forward checks once, not once per block)."""
    if x.dtype == np.float64:
        return np.multiply(0.5, 1.0 + np.asarray(_exact_erf(x * SQRT_HALF), dtype=np.float64), out=out)
    poly = np.empty_like(x) if out is None else out
    t = np.abs(x)
    t *= AS_P * SQRT_HALF
    t += 1.0
    np.divide(1.0, t, out=t)  # t = 1 / (1 + p |x| / sqrt(2)); np.reciprocal is slower for float32
    np.multiply(t, AS_A[0], out=poly)
    for a in AS_A[1:]:
        poly += a
        poly *= t  # Horner: (((a5 t + a4) t + a3) t + a2) t + a1) t
    poly *= exp_half_x2  # erfc(|x| / sqrt(2))
    poly *= -0.5
    poly += 0.5  # 0.5 * erf(|x| / sqrt(2)) = Phi(|x|) - 0.5, >= 0
    sign = np.bitwise_and(x.view(np.uint32), np.uint32(0x80000000), out=t.view(np.uint32))  # x's sign bit
    np.bitwise_or(poly.view(np.uint32), sign, out=poly.view(np.uint32))  # Phi(x) - 0.5, since erf is odd
    poly += 0.5
    return poly


# ---------------------------------------------------------------------------- exact GELU
# GELU runs on the largest activations (B, T, F) and takes ~20 elementwise NumPy passes. Done on the whole
# array, every pass streams megabytes through memory; done on blocks of rows that fit in the L2 cache, the
# passes stay in cache (~30% faster for mini), and the blocks run on the thread pool (threads.py). Each
# block's results go straight into preallocated outputs.
# The forward also computes the derivative, while exp(-x^2/2) and Phi(x) are at hand, and caches only that
# one (B, T, F) array instead of x, Phi(x) and exp(-x^2/2): a third of the memory, the same arithmetic. A forward
# whose cache no backward reads (for_backward=False: evaluation, inference, recompute's first pass) skips it.
def _gelu_forward_block(x, out, deriv, e):
    """out = x Phi(x);  deriv = d/dx [x Phi(x)] = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi), unless
    deriv is None."""
    np.multiply(x, x, out=e)
    e *= -0.5
    np.exp(e, out=e)  # exp(-x^2 / 2)
    cdf = _normal_cdf(x, e)  # (rows, F) Phi(x)
    np.multiply(x, cdf, out=out)
    if deriv is not None:
        np.multiply(x, e, out=deriv)
        deriv *= INV_SQRT_2PI  # x phi(x)
        deriv += cdf


def gelu_forward(x, for_backward=True):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF. The cache is GELU's derivative at x, or None with
    for_backward=False (no backward will read it: it is not computed). x: float32 or float64 (else TypeError)."""
    check_float(x, "gelu_forward")
    x2 = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))  # (N, F)
    out = np.empty_like(x2)
    deriv = np.empty_like(x2) if for_backward else None
    loop = numba_gelu_loop() if x2.dtype == np.float32 else None
    if loop is not None:  # the same formula compiled into one pass (gelu_numba.py), on flat blocks of rows
        def block(s):
            loop(x2[s].reshape(-1), out[s].reshape(-1), None if deriv is None else deriv[s].reshape(-1))
    else:
        e = np.empty_like(x2)

        def block(s):
            _gelu_forward_block(x2[s], out[s], None if deriv is None else deriv[s], e[s])
    for_row_blocks(block, *x2.shape)
    return out.reshape(x.shape), None if deriv is None else deriv.reshape(x.shape)


def gelu_backward(dout, deriv):
    """dx = dout * GELU'(x), the derivative cached by the forward."""
    d = np.empty_like(deriv)
    d2, dout2, deriv2 = d.reshape(-1, d.shape[-1]), dout.reshape(-1, d.shape[-1]), deriv.reshape(-1, d.shape[-1])
    for_row_blocks(lambda s: np.multiply(deriv2[s], dout2[s], out=d2[s]), *d2.shape)
    return d


# ---------------------------------------------------------------------------- the compiled GELU, if numba is there
# MINIBERT_NUMBA: auto (the default: numba's loop if numba is installed), 0 (always NumPy), 1 (numba or an error).
# Pre-training turns auto into NumPy for its run (training/pretrain.py: numpy_gelu_unless_asked).
NUMBA_VARIABLE = "MINIBERT_NUMBA"
_numba_loop = None  # gelu_numba.gelu_forward_loop; False: the NumPy path; None: not decided yet


def numba_setting():
    value = os.environ.get(NUMBA_VARIABLE, "auto").strip().lower()
    for setting, words in (("auto", ("auto", "")), ("off", ("0", "off", "no", "false")),
                           ("on", ("1", "on", "yes", "true"))):
        if value in words:
            return setting
    raise ValueError(f"{NUMBA_VARIABLE}={os.environ[NUMBA_VARIABLE]!r}: expected 0 (NumPy GELU), 1 (numba's GELU; an "
                     f"error if numba is missing) or auto (numba's if installed)")


def _load_numba_loop():
    from minibert.layers.gelu_numba import gelu_forward_loop  # ImportError without numba
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    gelu_forward_loop(x, np.empty_like(x), np.empty_like(x))  # compiled here, once per process,
    gelu_forward_loop(x, np.empty_like(x), None)  # and its version without the derivative
    return gelu_forward_loop


_decide_once = threading.Lock()  # batches on several threads (parallel.py) must not each decide, or differ


def numba_gelu_loop():
    """gelu_numba's compiled loop, or None where the float32 GELU runs in NumPy. Decided on the first call:
    auto falls back to NumPy, with a warning unless numba is simply not installed; MINIBERT_NUMBA=1 raises."""
    global _numba_loop
    if _numba_loop is None:
        with _decide_once:
            if _numba_loop is None:
                _numba_loop = _decide()
    return _numba_loop or None


def _decide():
    setting = numba_setting()
    if setting == "off":
        return False
    try:
        return _load_numba_loop()
    except Exception as e:  # not installed, or installed but failing (a numba/NumPy mismatch, a compile error)
        missing = isinstance(e, ImportError) and getattr(e, "name", None) in ("numba", "llvmlite")
        if setting == "on":
            raise ImportError(f"{NUMBA_VARIABLE}=1 but numba's GELU cannot be loaded ({type(e).__name__}: {e}): "
                              f"pip install 'minibert[fast]', or set {NUMBA_VARIABLE}=0") from None
        if not missing:
            warnings.warn(f"numba is installed but its GELU failed to load ({type(e).__name__}: {e}); using NumPy's "
                          f"(set {NUMBA_VARIABLE}=0 to silence this)", RuntimeWarning, stacklevel=3)
        return False


def use_numba_gelu(enabled):
    """Run the float32 GELU through numba (True; ImportError without it) or NumPy (False) from now on, whatever
    MINIBERT_NUMBA says, or None: decide from MINIBERT_NUMBA at the next GELU. Returns the previous choice
    (True, False or None), which this function takes back. For tests and benchmarks that compare the two."""
    global _numba_loop
    previous = None if _numba_loop is None else bool(_numba_loop)
    _numba_loop = None if enabled is None else _load_numba_loop() if enabled else False
    return previous


@contextlib.contextmanager
def numpy_gelu_unless_asked():
    """NumPy's GELU inside the block, unless MINIBERT_NUMBA says 1 (numba's) or 0 (NumPy's anyway); the choice
    before the block is put back after it. For work that numba speeds up too little for its memory."""
    if numba_setting() != "auto":
        yield
        return
    previous = use_numba_gelu(False)
    try:
        yield
    finally:
        use_numba_gelu(previous)


def gelu_kernel_name():
    """'numba' or 'numpy': which exact GELU the float32 layers run (printed by benchmarks and run headers)."""
    return "numba" if numba_gelu_loop() is not None else "numpy"


# ---------------------------------------------------------------------------- tanh GELU
def gelu_tanh_forward(x, for_backward=True):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): 'gelu_new' / 'gelu_pytorch_tanh'. (for_backward=False:
    no cache, as every activation of ACTIVATIONS.) x: float32 or float64 (else TypeError)."""
    check_float(x, "gelu_tanh_forward")
    x2 = x * x  # x*x*x, never x**3: NumPy's power is ~200x slower
    u = x2 * 0.044715
    u += 1.0
    u *= x
    u *= SQRT_2_OVER_PI  # sqrt(2/pi) (x + 0.044715 x^3)
    t = np.tanh(u, out=u)
    out = t + 1.0
    out *= 0.5
    out *= x
    return out, (x, t) if for_backward else None


def gelu_tanh_backward(dout, cache):
    x, t = cache
    # d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    du = x * x
    du *= 3 * 0.044715
    du += 1.0
    du *= SQRT_2_OVER_PI
    sech2 = t * t
    np.subtract(1.0, sech2, out=sech2)
    du *= sech2
    du *= x
    du += t
    du += 1.0
    du *= 0.5
    du *= dout
    return du


# ---------------------------------------------------------------------------- ReLU and tanh
def relu_forward(x, for_backward=True):
    return np.maximum(x, 0), x if for_backward else None


def relu_backward(dout, cache):
    x = cache
    return dout * (x > 0)


def tanh_forward(x):
    out = np.tanh(x)
    return out, out


def tanh_backward(dout, cache):
    out = cache
    return dout * (1.0 - out * out)


ACTIVATIONS = {
    "gelu": (gelu_forward, gelu_backward),
    "gelu_new": (gelu_tanh_forward, gelu_tanh_backward),
    "gelu_pytorch_tanh": (gelu_tanh_forward, gelu_tanh_backward),
    "relu": (relu_forward, relu_backward),
}


def get_activation(name):
    """(forward, backward) for a config's hidden_act: forward(x, for_backward=True) returns (out, cache), the
    cache None when for_backward is False (no backward follows)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown hidden_act {name!r}; expected one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]
