"""NumPy's BLAS against torch's, one GEMM shape at a time: the shapes of a mini pre-training step.

    python benchmarks/gemm_shapes.py --threads 1
    python benchmarks/gemm_shapes.py --threads 2 --batch 32 64 --mask-prob 0.15

minibert's matmuls go through NumPy's bundled OpenBLAS; torch's CPU wheel uses MKL (oneDNN for some
products). Which of the two is faster at a shape depends on the machine: on an AMD EPYC they were level, on an
Intel Xeon with AMX MKL was 10-31% faster (November 23, 2026, this script, --threads 1). No code in minibert can close
that gap, so it bounds every minibert / torch ratio of benchmarks/train_step.py from below: this prints, per
shape, both times and their ratio, in alternating rounds, and the step's total (each shape's forward, dx and dW
products, weighted by how often the step runs it: the shapes of benchmarks/matmul_floor.py, the last layer after its
attention on the predicted rows and each sequence's [CLS], as the sparse last layer runs it with a pooler).

Rounds, not call by call: on several threads, each library's worker threads keep spinning after a product
(OpenBLAS's ~0.1 s, OpenMP's too), and alternating single calls made both sides up to 10x slower here.
"""

import argparse
import os
import sys
import time
from collections import Counter


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())),
                   help="BLAS/torch threads for both (default: OPENBLAS_NUM_THREADS or all cores)")
    p.add_argument("--batch", type=int, nargs=2, default=(16, 64), metavar=("B", "T"),
                   help="batch (default 16 x 64, the default pre-training run's)")
    p.add_argument("--mask-prob", type=float, default=0.4, help="share of tokens predicted (default 0.4)")
    p.add_argument("--repeats", type=int, default=30, help="timed calls per shape and side (default 30)")
    return p.parse_args()


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from minibert import BertConfig  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul_floor import step_projections  # noqa: E402  (benchmarks/matmul_floor.py)


def main():
    torch.set_num_threads(args.threads)
    cfg = BertConfig.preset("mini")
    B, T = args.batch
    M = max(1, round(B * T * args.mask_prob))
    shapes = Counter(step_projections(cfg, B, T, M, R=min(B * T, M + B)))  # (m, k, n) -> uses per step
    rng = np.random.default_rng(0)
    print(f"mini {B} x {T}, {M} predicted, {args.threads} threads, load average {os.getloadavg()[0]:.2f}")
    print(f"  {'product':28s} {'numpy ms':>9s} {'torch ms':>9s} {'numpy GF/s':>11s} {'torch GF/s':>11s} "
          f"{'numpy/torch':>12s}")
    totals = np.zeros(2)
    for (m, k, n), count in shapes.items():
        for label, a_shape, b_shape in ((f"forward {m}x{k} @ {k}x{n}", (m, k), (k, n)),
                                        (f"dx      {m}x{n} @ {n}x{k}", (m, n), (n, k)),
                                        (f"dW      {n}x{m} @ {m}x{k}", (n, m), (m, k))):
            a = rng.standard_normal(a_shape, dtype=np.float32)
            b = rng.standard_normal(b_shape, dtype=np.float32)
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            times = [[], []]
            for _ in range(3):  # rounds, alternating; never call by call (below)
                for side, fn in enumerate((lambda: a @ b, lambda: ta @ tb)):
                    start = time.perf_counter()
                    while time.perf_counter() - start < 0.25:  # untimed: outlasts the other side's spinning threads
                        fn()
                    for _ in range(args.repeats // 3):
                        t0 = time.perf_counter()
                        fn()
                        times[side].append(time.perf_counter() - t0)
            ours, theirs = (float(np.median(t)) for t in times)
            totals += count * np.array([ours, theirs])
            flops = 2 * m * k * n
            print(f"  {label:28s} {1e3 * ours:9.3f} {1e3 * theirs:9.3f} {flops / ours / 1e9:11.1f} "
                  f"{flops / theirs / 1e9:11.1f} {ours / theirs:12.2f}")
    print(f"  the step's projections, MLM transform and decoder: numpy {1e3 * totals[0]:.1f} ms, "
          f"torch {1e3 * totals[1]:.1f} ms: "
          f"{totals[0] / totals[1]:.2f}")


if __name__ == "__main__":
    main()
