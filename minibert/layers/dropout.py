"""Inverted dropout: zero each element with probability p and scale the survivors by 1/(1-p), so that
nothing needs rescaling at evaluation time. The mask comes from a seeded np.random.Generator, so a run is
reproducible (and resumable) to the last bit."""

import numpy as np


def dropout_forward(x, p, rng, training):
    if not training or p == 0.0:
        return x, None
    keep = rng.random(x.shape, dtype=np.float32) >= p  # (same shape as x) bool: True for the survivors
    scale = x.dtype.type(1.0 / (1.0 - p))
    return x * keep * scale, (keep, scale)


def dropout_backward(dout, cache):
    if cache is None:
        return dout
    keep, scale = cache
    return dout * keep * scale
