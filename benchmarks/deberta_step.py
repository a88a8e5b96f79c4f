"""Step time and peak memory of deberta-mini against mini, in one run: the price of the disentangled attention.

    python benchmarks/deberta_step.py                       # 32 x 64 tokens, 1 BLAS thread, 20 timed steps
    python benchmarks/deberta_step.py --batch 16 64 --threads 2 --steps 30

Both contenders run the step `minibert pretrain` runs with objective mlm: zero_grad, forward with labels (the
decoder at the masked positions, the sparse last layer), backward, clip_grad_norm at 1.0, AdamW. mini is
BertForMaskedLM on the mini preset, deberta-mini DebertaV2ForMaskedLM on its preset (same sizes; relative
attention both ways through 32 log buckets, no absolute positions). The steps are interleaved (one of each in
turn) so that a noisy machine slows both alike; the ratio is what to read. Peak memory: each contender first runs
3 steps in a fresh process, which reports its peak resident set size (getrusage) and its resident size before the
first step (model built), so the difference is the step's own memory (activations, gradients, optimizer state).

Needs a quiet machine for numbers worth quoting: run it alone.
"""

import argparse
import json
import os
import subprocess
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, nargs=2, default=(32, 64), metavar=("B", "T"), help="default 32 64")
    p.add_argument("--steps", type=int, default=20, help="timed steps per contender, after 3 warm-up steps")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    p.add_argument("--mask-prob", type=float, default=0.4, help="share of tokens masked (pretrain's default 0.4)")
    p.add_argument("--memory-of", choices=("mini", "deberta-mini"), help=argparse.SUPPRESS)  # the child process
    return p.parse_args()


args = parse_args()
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = str(args.threads)  # before NumPy loads its BLAS

import numpy as np  # noqa: E402

from minibert import BertConfig, BertForMaskedLM, DebertaV2ForMaskedLM  # noqa: E402
from minibert.optim import AdamW, clip_grad_norm  # noqa: E402
from minibert.training.memory import peak_rss_mb  # noqa: E402

CONTENDERS = {"mini": BertForMaskedLM, "deberta-mini": DebertaV2ForMaskedLM}


def batch(config, B, T, mask_prob, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, config.vocab_size, (B, T))
    mask = np.ones((B, T), dtype=np.int64)
    mask[B // 2:, 3 * T // 4:] = 0  # a quarter of the rows padded: the mask paths run
    ids[mask == 0] = 0
    labels = np.where((rng.random((B, T)) < mask_prob) & (mask == 1), ids, -100)
    return ids, mask, labels


def make(name):
    config = BertConfig.preset(name, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    model = CONTENDERS[name](config, seed=0)
    model.train()
    return model, AdamW(model.params, model.grads, lr=1e-4, weight_decay=0.01), batch(config, *args.batch,
                                                                                       args.mask_prob)


def step(model, optimizer, data):
    ids, mask, labels = data
    model.zero_grad()
    out = model.forward(ids, attention_mask=mask, labels=labels)
    model.backward()
    clip_grad_norm(model.grads, 1.0)
    optimizer.step()
    return out.loss


def resident_mb():
    """This process's resident set size now (Linux), in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def memory_child(name):
    model, optimizer, data = make(name)
    before = resident_mb()
    for _ in range(3):
        step(model, optimizer, data)
    print(json.dumps({"before_mb": before, "peak_mb": peak_rss_mb()}))


def main():
    if args.memory_of:
        memory_child(args.memory_of)
        return
    B, T = args.batch
    # Memory first, while this process is small: a child's peak (getrusage) starts from its parent's at the fork
    memory = {}
    for name in CONTENDERS:
        child = subprocess.run([sys.executable, __file__, "--memory-of", name, "--batch", str(B), str(T),
                                "--threads", str(args.threads), "--mask-prob", str(args.mask_prob)],
                               capture_output=True, text=True, check=True)
        memory[name] = json.loads(child.stdout.strip().splitlines()[-1])
    runs = {name: make(name) for name in CONTENDERS}
    times = {name: [] for name in CONTENDERS}
    for i in range(3 + args.steps):
        for name, (model, optimizer, data) in runs.items():
            t0 = time.perf_counter()
            step(model, optimizer, data)
            if i >= 3:
                times[name].append(time.perf_counter() - t0)
    print(f"{B} x {T} tokens, {args.threads} BLAS thread(s), {args.steps} timed steps each, interleaved")
    print(f"{'model':<14}{'parameters':>12}{'median step':>14}{'ratio':>8}{'step memory':>14}{'peak RSS':>11}")
    base = None
    for name, (model, _, _) in runs.items():
        median = float(np.median(times[name]))
        base = base or median
        mem = memory[name]
        print(f"{name:<14}{model.num_parameters():>12,}{median * 1000:>11.1f} ms{median / base:>8.2f}"
              f"{mem['peak_mb'] - mem['before_mb']:>11.0f} MB{mem['peak_mb']:>8.0f} MB")


if __name__ == "__main__":
    main()
