"""Finite-difference gradient checking in float64.

For a scalar function f of some arrays, compare the analytic gradient with the central difference
(f(x + h e_i) - f(x - h e_i)) / 2h, entry by entry, and report a norm-wise relative error
||analytic - numeric|| / max(||analytic||, ||numeric||).
"""

import numpy as np


def numeric_grad(f, x, indices=None, h=1e-6):
    """d f / d x by central differences at the given flat indices (all of them when None)."""
    flat = x.reshape(-1)
    assert np.shares_memory(flat, x), "x must be contiguous: the perturbation has to reach the array itself"
    indices = range(flat.size) if indices is None else indices
    out = {}
    for i in indices:
        old = flat[i]
        flat[i] = old + h
        fp = f()
        flat[i] = old - h
        fm = f()
        flat[i] = old
        out[i] = (fp - fm) / (2 * h)
    return out


def rel_error(analytic, numeric):
    analytic, numeric = np.asarray(analytic, dtype=np.float64), np.asarray(numeric, dtype=np.float64)
    # A floor on the scale: some gradients are exactly zero in theory (the key bias: softmax ignores a
    # shift shared by all keys), and then only finite-difference noise (~1e-10) is left to compare.
    scale = max(np.linalg.norm(analytic), np.linalg.norm(numeric), 1e-3)
    return float(np.linalg.norm(analytic - numeric) / scale)


def check_grad(f, x, analytic, rng=None, max_entries=None, h=1e-5):
    """Relative error between `analytic` (same shape as x) and the numeric gradient of f w.r.t. x, over all
    entries, or over `max_entries` random ones."""
    n = x.size
    if max_entries is None or max_entries >= n:
        idx = list(range(n))
    else:
        idx = list((rng or np.random.default_rng(0)).choice(n, size=max_entries, replace=False))
    num = numeric_grad(f, x, idx, h)
    a = analytic.reshape(-1)[idx]
    return rel_error(a, [num[i] for i in idx])


def check_model_gradients(model, loss_fn, samples_per_param=3, eps=1e-6, dropout_seed=5):
    """A float64 model's backward against central differences, a few random entries of every parameter.

    loss_fn(model) runs a forward with targets and returns the loss; the dropout generator is reset before each
    call, so that every evaluation draws the same masks."""
    def loss():
        model.rng = np.random.default_rng(dropout_seed)
        return loss_fn(model)

    rng = np.random.default_rng(1)
    model.zero_grad()
    loss()
    model.backward()
    for name, p in model.params.items():
        grad = model.grads[name].reshape(-1)
        chosen = rng.choice(p.size, size=min(samples_per_param, p.size), replace=False)
        for i, numeric in numeric_grad(loss, p, chosen, eps).items():
            assert abs(numeric - grad[i]) <= 1e-6 + 1e-4 * abs(numeric), (name, i, numeric, grad[i])
