"""Activations and their derivatives: exact GELU (erf), tanh-approximate GELU, ReLU, tanh.

NumPy has no erf, so exact GELU needs one:
- float32: Abramowitz & Stegun formula 7.1.26, a rational-times-exponential fit whose absolute error is below
  1.5e-7, the size of float32's own rounding, so float32 results match torch's erf to within rounding.
- float64 (gradient checks, reference runs): an erf exact to double precision (scipy's if installed,
  otherwise Python's math.erf applied element by element: slower, but identical numbers).
"""

import math

import numpy as np

SQRT_HALF = 1.0 / math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

try:  # optional: exact float64 erf, vectorised
    from scipy.special import erf as _erf64
except ImportError:  # pragma: no cover - depends on the environment
    _erf64 = np.frompyfunc(math.erf, 1, 1)


def erf(z):
    """erf(z), elementwise, in z's dtype."""
    if z.dtype == np.float64:
        return np.asarray(_erf64(z), dtype=np.float64)
    # A&S 7.1.26 on |z|, then restore the sign (erf is odd).
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    a *= a
    np.negative(a, out=a)
    np.exp(a, out=a)  # exp(-z^2)
    poly *= a
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, z, out=poly).astype(z.dtype, copy=False)


# ---------------------------------------------------------------------------- exact GELU
def gelu_forward(x):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF = 0.5 * (1 + erf(x / sqrt(2)))."""
    cdf = erf(x * x.dtype.type(SQRT_HALF))  # (same as x)
    cdf += 1.0
    cdf *= 0.5  # Phi(x)
    return x * cdf, (x, cdf)


def gelu_backward(dout, cache):
    """d/dx [x Phi(x)] = Phi(x) + x phi(x), phi the standard normal density."""
    x, cdf = cache
    pdf = x * x
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= INV_SQRT_2PI  # phi(x)
    pdf *= x
    pdf += cdf  # Phi(x) + x phi(x)
    pdf *= dout
    return pdf


# ---------------------------------------------------------------------------- tanh GELU
def gelu_tanh_forward(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): 'gelu_new' / 'gelu_pytorch_tanh'."""
    x2 = x * x  # x*x*x, never x**3: NumPy's power is ~200x slower
    u = x2 * 0.044715
    u += 1.0
    u *= x
    u *= SQRT_2_OVER_PI  # sqrt(2/pi) (x + 0.044715 x^3)
    t = np.tanh(u, out=u)
    out = t + 1.0
    out *= 0.5
    out *= x
    return out, (x, t)


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
def relu_forward(x):
    return np.maximum(x, 0), x


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
    """(forward, backward) for a config's hidden_act."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown hidden_act {name!r}; expected one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]
