"""The matmul floor of a pre-training step: its GEMMs alone, at the same shapes, timed in a loop.

No implementation of the same algorithm on the same BLAS threads can take less time than this, whatever it does
about the elementwise work and Python; benchmarks/train_step.py divides it by torch's step to show the lowest
ratio minibert could reach, and benchmarks/profile_step.py sets it beside minibert's own step.
"""

import time

import numpy as np


def median_ms(fn, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1000 * float(np.median(ts))


def step_projections(cfg, B, T, M, R=None):
    """The (m, k, n) of every projection's forward product (m, k) @ (k, n) in one step, one entry per use: each
    layer's fused q/k/v, attention output and feed-forward pair, then the MLM transform and decoder at the M
    masked positions. R: the rows the last layer runs on after its attention (the sparse last layer,
    models/pretraining.py); None: all B*T. Each one's dx and dW products have the same FLOPs."""
    H, F, V = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    N = B * T
    R = N if R is None else R
    gemms = [(N, H, 3 * H), (N, H, H), (N, H, F), (N, F, H)] * (cfg.num_hidden_layers - 1)
    return gemms + [(N, H, 3 * H), (R, H, H), (R, H, F), (R, F, H), (M, H, H), (M, H, V)]


def matmul_floor_ms(cfg, B, T, M, n, R=None):
    """The step's matmuls alone (forward, dx and dW of every projection, attention's batched products, the MLM
    transform and decoder at the M masked positions), median of n rounds, in milliseconds. R: the rows the last
    layer runs on after its attention (the sparse last layer, models/pretraining.py); None: all B*T."""
    H, A = cfg.hidden_size, cfg.num_attention_heads
    r = np.random.default_rng(0)
    f = lambda *s: r.standard_normal(s).astype(np.float32)  # noqa: E731
    mats = [(f(m, k), f(k, n_), f(m, n_)) for m, k, n_ in step_projections(cfg, B, T, M, R)]
    q, kt, p, v = f(B, A, T, H // A), f(B, A, H // A, T), f(B, A, T, T), f(B, A, T, H // A)

    def run():
        for x, w, y in mats:
            x @ w  # forward
            y @ w.T  # dx
            x.T @ y  # dW
        for _ in range(cfg.num_hidden_layers):  # scores, context forward; 4 products backward
            q @ kt, p @ v, p @ v, p.transpose(0, 1, 3, 2) @ v, p @ q, p.transpose(0, 1, 3, 2) @ q
    run()
    return median_ms(run, n)
