"""Where one pre-training step's time goes: per layer function, matmuls, allocation, Python.

    python benchmarks/profile_step.py                      # mini, 32 x 64, BLAS threads from the environment
    python benchmarks/profile_step.py --threads 1 --steps 20
    python benchmarks/profile_step.py --threads 1 --batch 8 64 --mask-prob 0.4 --mlm-only --dropout 0
                                                           # one rank's share of a `minibert pretrain` step

Prints
  - per layer function, forward and backward, the time spent in its own body (cProfile "tottime": NumPy calls
    made from a function count as that function's time, since ufuncs and `@` are not Python calls),
  - the matmul floor: the step's GEMMs alone, same shapes, timed in a loop,
  - page faults per step (fresh temporaries the kernel has to zero),
  - the fixed cost of Python and NumPy dispatch: the same step on a 1 x 8 batch.
The machine is shared: compare the lines of one run, not runs of different days.
"""

import argparse
import cProfile
import os
import pstats
import resource


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="mini")
    p.add_argument("--batch", type=int, nargs=2, default=(32, 64), metavar=("B", "T"))
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--mask-prob", type=float, default=0.15,
                   help="share of the real tokens masked (default 0.15; `minibert pretrain` masks 0.4)")
    p.add_argument("--dropout", type=float, default=0.1,
                   help="hidden and attention dropout (default 0.1, BERT's; `minibert pretrain` trains with 0)")
    p.add_argument("--mlm-only", action="store_true",
                   help="no next-sentence labels, as `minibert pretrain`'s default objective (mlm) runs")
    return p.parse_args()


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402

from matmul_floor import matmul_floor_ms, median_ms  # noqa: E402  (benchmarks/matmul_floor.py)
from minibert import AdamW, BertConfig, BertForPreTraining, keep_freed_memory  # noqa: E402

keep_freed_memory()


def make_step(cfg, B, T, seed=0, mask_prob=0.15, nsp=True):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.ones((B, T), dtype=np.int64)
    mask[B // 2:, T - T // 4:] = 0
    labels = np.where((rng.random((B, T)) < mask_prob) & (mask == 1), ids, -100)
    labels[0, 1] = ids[0, 1]  # at least one masked position
    nsl = rng.integers(0, 2, B) if nsp else None
    model = BertForPreTraining(cfg, seed=0)
    opt = AdamW(model.params, model.grads, lr=1e-4)

    def step():
        model.zero_grad()
        model.forward(ids, attention_mask=mask, labels=labels, next_sentence_label=nsl)
        model.backward()
        opt.step()
    rows = np.union1d(np.flatnonzero(labels.reshape(-1) != -100), np.arange(B) * T)  # the sparse last layer's
    return step, int((labels != -100).sum()), len(rows)


def main():
    cfg = BertConfig.preset(args.config, hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)
    B, T = args.batch
    step, M, R = make_step(cfg, B, T, mask_prob=args.mask_prob, nsp=not args.mlm_only)
    for _ in range(3):
        step()
    total = median_ms(step, args.steps)

    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.steps):
        step()
    prof.disable()
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (calls, ncalls, tottime, cumtime, callers)
    rows = []
    for (path, _, name), (_, _, tottime, _, _) in stats.items():
        where = path.split("minibert/")[-1] if "minibert" in path else os.path.basename(path)
        rows.append((1000 * tottime / args.steps, f"{where}:{name}"))
    rows.sort(reverse=True)

    tiny_step, _, _ = make_step(cfg, 1, 8, mask_prob=args.mask_prob, nsp=not args.mlm_only)
    for _ in range(3):
        tiny_step()
    tiny = median_ms(tiny_step, args.steps)
    floor = matmul_floor_ms(cfg, B, T, M, args.steps, R)

    print(f"{args.config}: batch {B} x {T}, {M} masked, {args.threads} thread(s); load {os.getloadavg()[0]:.2f}")
    print(f"step (forward + backward + AdamW): {total:.1f} ms median of {args.steps}")
    print(f"matmul floor (the step's GEMMs alone): {floor:.1f} ms")
    print(f"fixed cost, same step on a 1 x 8 batch (Python + NumPy dispatch): {tiny:.1f} ms")
    print(f"page faults per step: {faults}")
    print("\nown time per call site, ms per step (under cProfile):")
    for ms, name in rows[:25]:
        print(f"  {ms:7.2f}  {name}")


if __name__ == "__main__":
    main()
