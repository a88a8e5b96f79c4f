"""Inverted dropout: zero each element with probability p and scale the survivors by 1/(1-p), so that
nothing needs rescaling at evaluation time. The mask comes from a seeded np.random.Generator, so a run is
reproducible (and resumable) to the last bit.

The random numbers are 16-bit integers (p is rounded to a multiple of 1/65536, i.e. 0.1 becomes 0.100006):
drawing them is twice as fast as drawing floats, and the mask is kept as booleans (1 byte per element).
They are drawn in one call on the calling thread (the same stream whatever the thread count); comparing and
scaling then run on row blocks (threads.py).
"""

import numpy as np

from minibert.layers.threads import for_row_blocks


def _dropout_forward_block(x, r, threshold, scale, out, keep):
    np.greater_equal(r, threshold, out=keep)
    np.multiply(x, keep, out=out)
    out *= scale


def dropout_forward(x, p, rng, training):
    if not training or p == 0.0:
        return x, None
    threshold = min(int(round(p * 65536)), 65535)  # p just below 1 still keeps 1/65536
    scale = x.dtype.type(65536.0 / (65536 - threshold))  # 1 / (1 - p) for the p actually used
    r = rng.integers(0, 65536, size=x.shape, dtype=np.uint16)  # (same shape as x)
    C = x.shape[-1] if x.ndim else 1
    x2, r2 = x.reshape(-1, C), r.reshape(-1, C)  # (N, C)
    out, keep = np.empty(x2.shape, dtype=x.dtype), np.empty(x2.shape, dtype=bool)  # (N, C)
    threshold = np.uint16(threshold)
    for_row_blocks(lambda s: _dropout_forward_block(x2[s], r2[s], threshold, scale, out[s], keep[s]), *x2.shape)
    return out.reshape(x.shape), (keep.reshape(x.shape), scale)


def _dropout_backward_block(dout, keep, scale, d):
    np.multiply(dout, keep, out=d)
    d *= scale


def dropout_backward(dout, cache):
    if cache is None:
        return dout
    keep, scale = cache
    C = keep.shape[-1] if keep.ndim else 1
    d2, k2 = dout.reshape(-1, C), keep.reshape(-1, C)  # (N, C)
    d = np.empty(d2.shape, dtype=np.result_type(dout, scale))
    for_row_blocks(lambda s: _dropout_backward_block(d2[s], k2[s], scale, d[s]), *d2.shape)
    return d.reshape(keep.shape)
