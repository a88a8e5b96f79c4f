"""Linear layer: out = x @ w.T + b, with w stored as Hugging Face stores it, (out_features, in_features).

The bias gradient is a sum over every token of the batch, thousands of float32 rows: it is accumulated in
float64, so that its rounding does not depend on how the rows are split (one process or several)."""

import numpy as np


def linear_forward(x, w, b):
    # x (..., I)  w (O, I)  b (O,)
    # One 2-D matmul over all tokens: NumPy runs a 3-D @ 2-D product as a loop of small products, ~20x slower.
    out = (x.reshape(-1, x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])  # (..., O)
    if b is not None:
        out += b  # (..., O)
    return out, x  # the backward needs only the input


def linear_backward(dout, cache, w, dw, db):
    """Return dx; accumulate dw += dout^T x and db += sum(dout) over every leading axis."""
    x = cache
    x2 = x.reshape(-1, x.shape[-1])  # (N, I): matmul over all tokens at once
    d2 = dout.reshape(-1, dout.shape[-1])  # (N, O)
    dw += d2.T @ x2  # (O, I)
    if db is not None:
        db += d2.sum(axis=0, dtype=np.float64)  # (O,)
    return (d2 @ w).reshape(*dout.shape[:-1], w.shape[1])  # (..., I)
