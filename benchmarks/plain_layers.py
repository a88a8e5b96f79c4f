"""Two source trees of minibert against each other: the same three jobs, each run in a fresh process with
PYTHONPATH set to one tree, interleaved (a, b, then b, a, ...) so that a noisy machine slows both alike.

    python benchmarks/plain_layers.py --a /path/to/tree_a --b /path/to/tree_b --rounds 5
    python benchmarks/plain_layers.py --a A --b B --rounds 1 --smoke      # tiny sizes: checks that it runs

Jobs (higher is faster):
  pretrain     tokens/s of `minibert pretrain --steps 60` (the default run: mini, 16 x 64, 2 processes on 2+
               cores), the median of its logged windows after the first (the warm-up), no held-out evaluation
  embed 1t/2t  sentences/s embedding 1,000 Wikipedia sentences with all-MiniLM-L6-v2 (batch 32), with
               OPENBLAS_NUM_THREADS=1 and =2 (2: one batch per core, as `minibert embed` runs), after a warm-up
  finetune     MiniLM fine-tuning steps/s: batch 32 x 128 tokens, dropout 0.1, one process on --threads BLAS
               threads, the median of --steps steps after one untimed step
Prints each job's median over the rounds for a and b, and the ratio b / a. The environment is passed on to every
job, except the BLAS thread counts the embed and finetune jobs set.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", type=Path, help="the first source tree (its minibert/ package is imported)")
    p.add_argument("--b", type=Path, help="the second source tree")
    p.add_argument("--rounds", type=int, default=5, help="rounds of every job for each tree (default 5)")
    p.add_argument("--jobs", nargs="+", default=["pretrain", "embed 1t", "embed 2t", "finetune"],
                   help="which jobs (default: all four)")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads of the fine-tuning step (default 1)")
    p.add_argument("--steps", type=int, default=5, help="timed fine-tuning steps per round (default 5)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, to check that every job runs (not a timing)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)  # one measurement, in the tree on PYTHONPATH
    return p.parse_args()


def run(tree, command, threads=None):
    """Run a command with `tree` first on PYTHONPATH (and `threads` BLAS threads if given); its stdout."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    if threads is not None:
        env |= {v: str(threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()
                          ).stdout


def pretrain_tokens_per_s(tree, smoke):
    steps = 20 if smoke else 60
    with tempfile.TemporaryDirectory() as runs:
        run(tree, [sys.executable, "-m", "minibert", "pretrain", "--steps", str(steps), "--runs-dir", runs,
                   "--name", "r", "--quiet", "--no-examples", "--no-plot", "--eval-every", str(10 * steps)]
            + (["--config", "tiny"] if smoke else []))
        records = [json.loads(line) for line in open(Path(runs) / "r" / "metrics.jsonl")]
    windows = [r["tokens_per_s"] for r in records if r.get("split") == "train" and "tokens_per_s" in r]
    return statistics.median(windows[1:])  # the first window holds the warm-up steps


def measure(job, args):
    """In the child process: the job's throughput, printed as JSON."""
    import numpy as np

    from minibert import keep_freed_memory
    from minibert.data.builtin import minilm_dir
    keep_freed_memory()  # as the minibert CLI runs
    if job == "embed":
        import re

        from minibert.data.builtin import load_wiki_summaries
        from minibert.embeddings import SentenceEncoder
        n = 64 if args.smoke else 1000
        texts = [s for summary in load_wiki_summaries() for s in re.split(r"(?<=[.!?])\s+", summary["extract"])
                 if 20 <= len(s) <= 300][:n]
        encoder = SentenceEncoder.from_pretrained(minilm_dir())
        encoder.encode(texts[:64], batch_size=32)  # warm-up: first allocations, the tokenizer's cache
        t0 = time.perf_counter()
        encoder.encode(texts, batch_size=32)
        return len(texts) / (time.perf_counter() - t0)
    from minibert.finetune.loading import load_for_finetuning
    from minibert.finetune.train import train_step
    from minibert.optim import AdamW
    B, T = (4, 32) if args.smoke else (32, 128)
    model = load_for_finetuning(minilm_dir(), ["negative", "neutral", "positive"], log=lambda message: None)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = model.classifier_dropout = 0.1
    model.train()
    optimizer = AdamW(model.params, model.grads, lr=1e-5, weight_decay=0.01)
    rng = np.random.default_rng(0)
    encoded = [(rng.integers(1000, model.config.vocab_size, T), np.zeros(T, dtype=np.int64)) for _ in range(B)]
    labels = rng.integers(0, 3, B)
    times = []
    for _ in range(1 + args.steps):
        t0 = time.perf_counter()
        train_step(model, optimizer, encoded, np.arange(B), lambda chosen, T: {"labels": labels[chosen]}, 0, 1e-5,
                   1.0)
        times.append(time.perf_counter() - t0)
    return 1.0 / statistics.median(times[1:])


def one_round(tree, job, args):
    if job == "pretrain":
        return pretrain_tokens_per_s(tree, args.smoke)
    name, threads = (job.split() + [None])[:2]
    threads = int(threads.rstrip("t")) if threads else args.threads
    child = [sys.executable, os.path.abspath(__file__), "--steps", str(args.steps), "--child", name]
    return json.loads(run(tree, child + (["--smoke"] if args.smoke else []), threads).strip().splitlines()[-1])


def main():
    args = parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args)))
        return
    if args.a is None or args.b is None:
        raise SystemExit("plain_layers.py: give both --a DIR and --b DIR")
    trees = {"a": args.a, "b": args.b}
    results = {(job, t): [] for job in args.jobs for t in trees}
    for i in range(args.rounds):
        for job in args.jobs:
            for t in ("a", "b") if i % 2 == 0 else ("b", "a"):
                results[job, t].append(one_round(trees[t], job, args))
    print(f"a = {args.a}\nb = {args.b}\n{args.rounds} round(s){', smoke sizes' if args.smoke else ''}, load average "
          f"{os.getloadavg()[0]:.2f}")
    unit = {"pretrain": "tokens/s", "finetune": "steps/s"}
    for job in args.jobs:
        a, b = (statistics.median(results[job, t]) for t in trees)
        print(f"{job:10s} a {a:10.2f}  b {b:10.2f} {unit.get(job, 'sentences/s'):12s} b / a {b / a:.3f}")


if __name__ == "__main__":
    main()
