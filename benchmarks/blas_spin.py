"""Does one contender's step slow the next one's when they run one after the other in one process?

    python benchmarks/blas_spin.py                   # mini, 32 x 64, 2 threads
    OPENBLAS_THREAD_TIMEOUT=4 python benchmarks/blas_spin.py   # OpenBLAS's workers told to sleep at once

After a GEMM, OpenBLAS's worker threads keep spinning on their cores for a while (~0.1 s) before they sleep, so
that the next GEMM starts without a wake-up. In one process with several threads, a torch step timed right after a
minibert step then finds its second core taken. benchmarks/train_step.py interleaves its contenders step by step,
so it now runs an untimed step of the same contender before each timed one; this script measures why.

Times, with the same mini full step (zero_grad, forward, backward, clipping, AdamW) on both sides, the median of
--rounds of each:
  torch alone               after a 0.3 s pause
  torch after minibert      right after a minibert step
  torch after minibert+0.2  after a minibert step and a 0.2 s pause
and the same three for minibert after torch. If "after" is slower than "alone", interleaving step by step is not
fair to the second contender. (A pause can also cost: idle cores slow down; so "alone" is not a clean baseline on
every machine.)
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())),
                   help="BLAS/torch threads for both (default: OPENBLAS_NUM_THREADS or all cores)")
    p.add_argument("--batch", type=int, nargs=2, default=(32, 64), metavar=("B", "T"))
    p.add_argument("--rounds", type=int, default=8, help="timed rounds (default 8)")
    args = p.parse_args()

    # train_step reads its arguments when imported and sets the thread counts before NumPy and torch load
    sys.argv = [sys.argv[0], "--threads", str(args.threads)]
    import train_step  # the same steps as that benchmark times

    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    cfg = train_step.BertConfig.preset("mini", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    batch = train_step.make_batch(cfg, *args.batch)
    ours = train_step.minibert_steps(cfg, batch)["full step"][1]
    theirs = train_step.torch_steps(cfg, batch, True, "eager")["full step"][1]
    print(f"mini {args.batch[0]} x {args.batch[1]}, {args.threads} threads, OPENBLAS_THREAD_TIMEOUT="
          f"{os.environ.get('OPENBLAS_THREAD_TIMEOUT', '(unset)')}, load average {os.getloadavg()[0]:.2f}")
    for fn in (ours, theirs) * 3:  # warm-up
        fn()
    rows = {}

    def timed(name, fn):
        t0 = time.perf_counter()
        fn()
        rows.setdefault(name, []).append(time.perf_counter() - t0)
    for _ in range(args.rounds):
        for name, other, first, second in (("torch", "minibert", ours, theirs), ("minibert", "torch", theirs, ours)):
            time.sleep(0.3)
            timed(f"{name} alone", second)
            first()
            timed(f"{name} after {other}", second)
            first()
            time.sleep(0.2)
            timed(f"{name} after {other} + 0.2 s pause", second)
    for name, times in rows.items():
        print(f"  {name:38s} {1000 * np.median(times):7.1f} ms")


if __name__ == "__main__":
    main()
