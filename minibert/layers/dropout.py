"""Inverted dropout: zero each element with probability p and scale the survivors by 1/(1-p), so that
nothing needs rescaling at evaluation time. The mask comes from a seeded np.random.Generator, so a run is
reproducible (and resumable) to the last bit."""

import numpy as np


def dropout_forward(x, p, rng, training):
    if not training or p == 0.0:
        return x, None
    # A float mask holding 0 or 1/(1-p): one multiply in the forward and one in the backward.
    keep = rng.random(x.shape, dtype=np.float32) >= p  # (same shape as x)
    mask = keep.astype(x.dtype)
    mask *= 1.0 / (1.0 - p)
    return x * mask, mask


def dropout_backward(dout, mask):
    if mask is None:
        return dout
    return dout * mask
