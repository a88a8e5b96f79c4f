"""Data-parallel throughput: `minibert pretrain` on 2 MPI ranks x 1 thread against 1 process x 1 thread and
1 process x 2 threads, interleaved in one run; the time spent in the gradient Allreduce; the Allreduce
bandwidth; and the extrapolation to N machines (the model behind docs/scaling.md).

    python benchmarks/mpi_throughput.py                     # mini, 30 steps per run, 3 rounds
    python benchmarks/mpi_throughput.py --config tiny --steps 20 --rounds 2

Each contender is a real `minibert pretrain --steps N` run (same corpus, seed, global batch and schedule); its
summary.json gives tokens/s over the training steps (evaluations, checkpoints and data loading not counted)
and, under MPI, rank 0's seconds in the Allreduce (waiting for the slower rank included). The contenders run
one after the other in rounds, so a busy machine slows all of them alike: read the ratios. A separate probe
times the bare Allreduce of a buffer the size of the model's gradients (no training around it).
Needs the MPI extra: pip install 'minibert[mpi]'.
"""

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="mini", help="model preset (default: mini)")
    p.add_argument("--corpus", default="wiki", help="corpus (default: the built-in wiki; cached after the first run)")
    p.add_argument("--batch-size", type=int, default=16, help="global batch (default: 16, pretrain's default)")
    p.add_argument("--steps", type=int, default=30, help="steps per run (default: 30)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the three contenders (default: 3)")
    p.add_argument("--node-gflops", type=float, metavar="X",
                   help="only print the extrapolation, for machines that train at X GFLOP/s (no measurement)")
    p.add_argument("--probe", type=float, metavar="MB", help=argparse.SUPPRESS)  # internal: the Allreduce probe
    return p.parse_args()


def mpiexec() -> str:
    beside = Path(sysconfig.get_path("scripts")) / "mpiexec"
    return str(beside) if beside.exists() else "mpiexec"


def env(threads: int) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


def pretrain_run(args, runs: Path, name: str, ranks: int, threads: int) -> dict:
    cmd = [sys.executable, "-m", "minibert", "pretrain", "--config", args.config, "--corpus", args.corpus,
           "--batch-size", str(args.batch_size), "--steps", str(args.steps), "--eval-every", str(args.steps),
           "--save-every", str(args.steps), "--runs-dir", str(runs), "--name", name, "--no-plot", "--no-examples",
           "--quiet"]
    if ranks > 1:
        cmd = [mpiexec(), "-n", str(ranks), *cmd]
    subprocess.run(cmd, env=env(threads), check=True, stdout=subprocess.DEVNULL)
    return json.loads((runs / name / "summary.json").read_text())


def probe(megabytes: float) -> None:
    """Under mpiexec: seconds per Allreduce (in place, sum) of a float32 buffer of `megabytes`."""
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    buffer = np.ones(int(megabytes * 1e6 / 4), dtype=np.float32)
    times = []
    for _ in range(12):
        comm.Barrier()
        t = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, buffer, op=MPI.SUM)
        times.append(time.perf_counter() - t)
    if comm.rank == 0:
        print(json.dumps({"bytes": buffer.nbytes, "seconds": sorted(times[2:])[len(times[2:]) // 2]}))


def allreduce_probe(megabytes: float) -> dict:
    out = subprocess.run([mpiexec(), "-n", "2", sys.executable, __file__, "--probe", str(megabytes)], env=env(1),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def flops_per_token(config: str, seq_len: int, vocab_size: int, mask_prob: float = 0.4) -> float:
    """Training FLOPs per token (forward + backward = 3 x forward, 2 per multiply-add): the encoder's matmuls,
    attention scores and context, and the MLM decoder at the masked positions only (as minibert runs it)."""
    from minibert import BertConfig
    c = BertConfig.preset(config, vocab_size=vocab_size)
    H, F, L = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    per_layer = 4 * H * H + 2 * H * F + 2 * seq_len * H  # q,k,v,o + FFN + scores and context, multiply-adds
    decoder = mask_prob * (H * H + H * c.vocab_size)
    return 6.0 * (L * per_layer + decoder)


LATENCY = 50e-6  # seconds per message on TCP over Ethernet (a ring Allreduce sends 2 (N-1) of them in sequence)


def extrapolate(node_flops: float, how: str, efficiency: float = 0.9) -> None:
    """Ring Allreduce over N machines: each link carries 2 (N-1)/N of the gradient bytes per step, plus
    2 (N-1) message latencies; compute per machine at `node_flops`; no overlap of the two (as minibert runs)."""
    print(f"\nextrapolation (on paper): one rank per machine at {node_flops / 1e9:,.0f} GFLOP/s ({how}), ring "
          f"Allreduce at {efficiency:.0%} of the link + {LATENCY * 1e6:.0f} us per message, no overlap")
    print(f"{'config':>6} {'grads':>7} {'link':>6} {'N':>3} {'allreduce':>9} {'compute/seq':>11} {'break-even':>10}   "
          f"comm share at 8 / 32 / 128 sequences per rank")
    for config, vocab, params, seq_len in (("mini", 8192, 3.0e6, 64), ("base", 30522, 110.1e6, 128)):
        per_sequence = seq_len * flops_per_token(config, seq_len, vocab) / node_flops
        for gbit in (10, 25):
            for n in (2, 8, 64):
                comm = 2 * (n - 1) * LATENCY + 2 * (n - 1) / n * 4 * params / (gbit * 1e9 / 8 * efficiency)
                shares = " / ".join(f"{comm / (comm + b * per_sequence):.0%}" for b in (8, 32, 128))
                print(f"{config:>6} {4 * params / 1e6:>5.0f}MB {gbit:>3} Gb {n:>3} {comm * 1e3:>7.1f}ms "
                      f"{per_sequence * 1e3:>9.2f}ms {comm / per_sequence:>7.0f} seq   {shares}")


def main():
    args = parse_args()
    if args.probe:
        return probe(args.probe)
    if args.node_gflops:
        return extrapolate(args.node_gflops * 1e9, "given")
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores on this machine: read the ratios)")
    contenders = {"2 ranks x 1 thread": (2, 1), "1 rank x 1 thread": (1, 1), "1 rank x 2 threads": (1, 2)}
    results = {name: [] for name in contenders}
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        pretrain_run(args, runs, "warmup", 1, 1)  # fills the data caches; not timed
        for r in range(args.rounds):
            for name, (ranks, threads) in contenders.items():
                results[name].append(pretrain_run(args, runs, f"r{r}-{ranks}x{threads}", ranks, threads))
    load_after = os.getloadavg()[0]
    tok_s = {name: sorted(s["tokens_per_s"] for s in runs_)[len(runs_) // 2] for name, runs_ in results.items()}
    base = tok_s["1 rank x 1 thread"]
    print(f"{args.config}, global batch {args.batch_size}, {args.steps} steps per run, {args.rounds} rounds "
          f"(median run shown)")
    for name, value in tok_s.items():
        print(f"  {name:<20} {value:>8,.0f} tokens/s   x{value / base:.2f} of 1 rank x 1 thread")
    mpi = results["2 ranks x 1 thread"]
    seconds = sum(s["allreduce_seconds"] for s in mpi) / sum(s["steps"] for s in mpi)
    share = sum(s["allreduce_seconds"] for s in mpi) / sum(s["train_seconds"] for s in mpi)
    nbytes = mpi[0]["allreduce_bytes_per_step"]
    print(f"  gradient Allreduce in training: {seconds * 1e3:.1f} ms per step ({nbytes / 1e6:.1f} MB), "
          f"{share:.1%} of rank 0's step time (waiting for the other rank included)")
    for megabytes in (nbytes / 1e6, 256.0):
        p = allreduce_probe(megabytes)
        print(f"  bare Allreduce of {p['bytes'] / 1e6:.0f} MB, 2 ranks on this machine (shared memory): "
              f"{p['seconds'] * 1e3:.1f} ms = {p['bytes'] / p['seconds'] / 1e9:.2f} GB/s (bytes / time; with 2 "
              f"ranks this is also the bus bandwidth 2(N-1)/N x bytes / time)")
    print(f"load average after: {load_after:.1f}")
    seq_len = 64 if args.config in ("mini", "tiny") else 128
    per_core = tok_s["1 rank x 1 thread"] * flops_per_token(args.config, seq_len, 8192)
    extrapolate(16 * per_core, f"16 cores at the {per_core / 1e9:.0f} GFLOP/s per core of 1 rank x 1 thread here")

if __name__ == "__main__":
    main()
