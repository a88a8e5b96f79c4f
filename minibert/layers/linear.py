"""Linear layer: out = x @ w.T + b, with w stored as Hugging Face stores it, (out_features, in_features).

The matmuls run on BLAS's threads; the bias add and the bias gradient (a sum over all tokens) on row blocks
over the same number of threads (threads.py)."""

import numpy as np

from minibert.layers.threads import for_row_blocks, sum_rows


def linear_forward(x, w, b):
    # x (..., I)  w (O, I)  b (O,)
    # One 2-D matmul over all tokens: NumPy runs a 3-D @ 2-D product as a loop of small products, ~20x slower.
    out = (x.reshape(-1, x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])  # (..., O)
    if b is not None:
        o2 = out.reshape(-1, w.shape[0])  # (N, O)
        for_row_blocks(lambda s: np.add(o2[s], b, out=o2[s]), *o2.shape)
    return out, x  # the backward needs only the input


def linear_backward(dout, cache, w, dw, db):
    """Return dx; accumulate dw += dout^T x and db += sum(dout) over every leading axis."""
    x = cache
    x2 = x.reshape(-1, x.shape[-1])  # (N, I): matmul over all tokens at once
    d2 = dout.reshape(-1, dout.shape[-1])  # (N, O)
    dw += d2.T @ x2  # (O, I)
    if db is not None:
        db += sum_rows(d2)  # (O,)
    return (d2 @ w).reshape(*dout.shape[:-1], w.shape[1])  # (..., I)
