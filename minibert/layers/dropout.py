"""Inverted dropout: zero each element with probability p and scale the survivors by 1/(1-p), so that
nothing needs rescaling at evaluation time. The mask comes from a seeded np.random.Generator, so a run is
reproducible (and resumable) to the last bit.

The random numbers are 16-bit integers (p is rounded to a multiple of 1/65536, i.e. 0.1 becomes 0.100006):
drawing them is twice as fast as drawing floats, and the mask is kept as booleans (1 byte per element).
"""

import numpy as np


def dropout_forward(x, p, rng, training):
    if not training or p == 0.0:
        return x, None
    threshold = min(int(round(p * 65536)), 65535)  # p just below 1 still keeps 1/65536
    scale = x.dtype.type(65536.0 / (65536 - threshold))  # 1 / (1 - p) for the p actually used
    keep = rng.integers(0, 65536, size=x.shape, dtype=np.uint16) >= threshold  # (same shape as x) bool
    out = x * keep
    out *= scale
    return out, (keep, scale)


def dropout_backward(dout, cache):
    if cache is None:
        return dout
    keep, scale = cache
    d = dout * keep
    d *= scale
    return d
