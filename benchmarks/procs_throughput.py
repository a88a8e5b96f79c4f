"""One process with every core's BLAS threads against `--procs 2` (2 processes x 1 thread), for a training command
that writes a run folder (`minibert pretrain`, `minibert distill`), in alternating rounds:

    python benchmarks/procs_throughput.py distill --teacher minilm --student-layers 3 --steps 40
    python benchmarks/procs_throughput.py pretrain --steps 200 --rounds 3

Each contender is a real run of the command with `--procs 1` or `--procs 2` (everything else the same), in a
temporary runs folder; its summary.json gives tokens/s over the training steps (data loading, evaluations and
checkpoints not counted) and the peak memory (resident, and for several processes the proportional set size
added up, which counts shared pages once). The rounds alternate the contenders, so a busy machine slows both
alike: read the ratio. (Fine-tuning's step is timed against torch by benchmarks/finetune_step.py --procs 2.)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2, help="rounds of each contender, alternating (default 2)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the minibert command and its options")
    args = p.parse_args()
    if not args.command or args.command[0] not in ("pretrain", "distill"):
        p.error("give a command that writes a run folder: pretrain or distill, with its options")
    return args


def run(command, procs, runs_dir, name):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    subprocess.run([sys.executable, "-m", "minibert", *command, "--procs", str(procs), "--runs-dir", runs_dir,
                    "--name", name, "--no-plot", "--quiet"], check=True, env=env, stdout=subprocess.DEVNULL)
    return json.loads((Path(runs_dir) / name / "summary.json").read_text())


def main():
    args = parse_args()
    print(f"minibert {' '.join(args.command)}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}")
    results = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as runs:
        for r in range(args.rounds):
            for procs in (1, 2):
                results[procs].append(run(args.command, procs, runs, f"r{r}-p{procs}"))
    rate = {p: statistics.median(s["tokens_per_s"] for s in results[p]) for p in results}
    for p, label in ((1, f"1 process x {os.cpu_count()} threads"), (2, "2 processes x 1 thread")):
        last = results[p][-1]
        memory = f"peak RSS {last['peak_rss_mb']:.0f} MB"
        if "peak_pss_mb_all_ranks" in last:
            memory += f" (rank 0), {last['peak_pss_mb_all_ranks']:.0f} MB PSS added up over the processes"
        print(f"  {label:26s} {rate[p]:9.0f} tokens/s (median of {args.rounds})   {memory}")
    print(f"load average {os.getloadavg()[0]:.2f}; 2 processes / 1 process: {rate[2] / rate[1]:.2f}x the tokens/s")


if __name__ == "__main__":
    main()
