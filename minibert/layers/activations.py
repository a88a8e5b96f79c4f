"""Activations and their derivatives: exact GELU (erf), tanh-approximate GELU, ReLU, tanh.

NumPy has no erf, so exact GELU needs one:
- float32: Abramowitz & Stegun formula 7.1.26, a polynomial-times-exponential fit of erfc with absolute error
  below 1.5e-7; computed in float32, Phi(x) is within 3e-7 of the exact value (a few float32 roundings), far
  inside the 1e-4 the parity tests allow against torch.
- float64 (gradient checks, reference runs): an erf exact to double precision (scipy's if installed,
  otherwise Python's math.erf applied element by element: slower, but identical numbers).
With numba installed, the float32 GELU runs the same formula compiled into one pass instead (gelu_select.py says
when, and what it buys).
"""

import math

import numpy as np

from minibert.layers.gelu_constants import AS_A, AS_P, INV_SQRT_2PI, SQRT_2_OVER_PI, SQRT_HALF
from minibert.layers.gelu_select import compiled_gelu_forward

_erf64 = None  # exact float64 erf, looked up on first use: importing scipy costs ~0.4 s at every start-up


def _exact_erf(z):
    global _erf64
    if _erf64 is None:
        try:  # optional: scipy's vectorised erf
            from scipy.special import erf as _erf64
        except ImportError:  # pragma: no cover - depends on the environment
            _erf64 = np.frompyfunc(math.erf, 1, 1)
    return _erf64(z)


def check_float(x, layer):
    """A one-line TypeError unless x is float32 or float64, the dtypes minibert's models compute in. The layers
    refuse others rather than compute them: the float32 erf is a fit good to float32's precision (float16 would
    need another), NumPy has no fast float16 arithmetic, and an integer input is a mistake (token ids given where
    activations belong), which a quiet cast would hide."""
    dtype = getattr(x, "dtype", None)
    if dtype not in (np.float32, np.float64):
        given, cast = ((f"a {type(x).__name__}", "np.asarray(x, dtype=np.float32)") if dtype is None
                       else (dtype, "x.astype(np.float32)"))
        raise TypeError(f"{layer} computes in float32 or float64 (minibert's model dtypes), got {given}: cast "
                        f"first, {cast}")


def normal_cdf(x, exp_half_x2):
    """Phi(x) = 0.5 * (1 + erf(x / sqrt(2))), given exp(-x^2 / 2) (which the caller needs anyway). float32 uses
    A&S 7.1.26 on |x|, then gives the result x's sign: erf is odd."""
    check_float(x, "normal_cdf")
    if x.dtype == np.float64:
        return 0.5 * (1.0 + np.asarray(_exact_erf(x * SQRT_HALF), dtype=np.float64))
    # In place where an array can be reused: each new (..., F) array costs a pass over fresh memory
    t = 1.0 / (1.0 + AS_P * SQRT_HALF * np.abs(x))  # (..., F) t = 1 / (1 + p |x| / sqrt(2))
    poly = AS_A[0] * t  # (..., F)
    for a in AS_A[1:]:
        poly += a
        poly *= t  # Horner: (((a5 t + a4) t + a3) t + a2) t + a1) t
    poly *= exp_half_x2  # (..., F) erfc(|x| / sqrt(2)) = poly exp(-x^2 / 2)
    half_erf = np.subtract(0.5, 0.5 * poly, out=poly)  # (..., F) 0.5 erf(|x| / sqrt(2)) = Phi(|x|) - 0.5
    cdf = np.copysign(half_erf, x, out=poly)  # (..., F) Phi(x) - 0.5: erf is odd
    cdf += 0.5
    return cdf


# ---------------------------------------------------------------------------- exact GELU
# The forward also computes the derivative, while exp(-x^2/2) and Phi(x) are at hand, and caches only that
# one array instead of x, Phi(x) and exp(-x^2/2): a third of the memory, the same arithmetic. A forward whose
# cache no backward reads (for_backward=False: evaluation, inference, recompute's first pass) skips it.
def gelu_forward(x, for_backward=True):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF. The cache is GELU's derivative at x,
    Phi(x) + x phi(x) with phi(x) = exp(-x^2 / 2) / sqrt(2 pi), or None with for_backward=False. x: float32 or
    float64 (else TypeError)."""
    check_float(x, "gelu_forward")
    # With numba installed, the same formula compiled into one pass: MiniLM embeds 18-20% faster (gelu_select.py)
    compiled = compiled_gelu_forward(x, for_backward)
    if compiled is not None:
        return compiled
    e = np.exp(-0.5 * x * x)  # (..., F) exp(-x^2 / 2)
    cdf = normal_cdf(x, e)  # (..., F) Phi(x)
    if for_backward:
        e *= x
        e *= INV_SQRT_2PI  # (..., F) x phi(x)
        e += cdf  # (..., F) the derivative Phi(x) + x phi(x)
    return x * cdf, e if for_backward else None


def gelu_backward(dout, deriv):
    """dx = dout * GELU'(x), the derivative cached by the forward."""
    return deriv * dout


# ---------------------------------------------------------------------------- tanh GELU
def gelu_tanh_forward(x, for_backward=True):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): 'gelu_new' / 'gelu_pytorch_tanh'. (for_backward=False:
    no cache, as every activation of ACTIVATIONS.) x: float32 or float64 (else TypeError)."""
    check_float(x, "gelu_tanh_forward")
    # x*x*x, never x**3: NumPy's power is ~200x slower
    t = np.tanh((x * x * 0.044715 + 1.0) * x * SQRT_2_OVER_PI)  # (..., F)
    return (t + 1.0) * 0.5 * x, (x, t) if for_backward else None  # (..., F)


def gelu_tanh_backward(dout, cache):
    x, t = cache
    # d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    du = (x * x * (3 * 0.044715) + 1.0) * SQRT_2_OVER_PI * (1.0 - t * t) * x  # (..., F)
    return (du + t + 1.0) * 0.5 * dout  # (..., F)


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
