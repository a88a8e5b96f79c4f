"""Peak memory and time of one training step with and without activation recompute (`--recompute`).

    python benchmarks/recompute_memory.py                        # base, 8 x 512 tokens, 1 thread
    python benchmarks/recompute_memory.py --config mini --batch-size 32 --seq-len 64 --threads 2
    python benchmarks/recompute_memory.py --config minilm --batch-size 32 --seq-len 128   # fine-tuning MiniLM

Each contender runs in its own fresh process: a BertForPreTraining of the preset (dropout as in the preset, so
the replayed masks are exercised), random token ids, 15% of the positions predicted (sparse MLM head); with
--config minilm, the real all-MiniLM-L6-v2 as a 3-class BertForSequenceClassification, dropout 0.1, as
`minibert finetune` trains it. Then one forward + backward, then a second one (the step a training run
repeats, with malloc's memory warm). Printed per contender: resident memory before the step (the model, its
gradients and the interpreter), the peak during the steps, the peak minus the memory before (what the step
itself needs: activations and temporaries), the time of the second step, and a SHA-256 of the gradients, which
must be the same with and without recompute.

The peak during the steps is the kernel's high-water mark (VmHWM), reset just before the step (Linux:
/proc/self/clear_refs); elsewhere the process's whole peak is printed.
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
from minibert import BertConfig, BertForPreTraining, BertForSequenceClassification

def status(key):
    try:
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    except OSError:
        return None

config, B, T, recompute = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rng = np.random.default_rng(0)
if config == "minilm":
    from minibert.data.builtin import minilm_dir
    model = BertForSequenceClassification.from_pretrained(minilm_dir(), num_labels=3)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.1
    cfg = model.config
    ids = rng.integers(1000, cfg.vocab_size, (B, T))                 # (B, T)
    labels = rng.integers(0, 3, B)                                   # (B,)
else:
    cfg = BertConfig.preset(config)
    model = BertForPreTraining(cfg, seed=0)
    ids = rng.integers(5, cfg.vocab_size, (B, T))                    # (B, T)
    labels = np.where(rng.random((B, T)) < 0.15, ids, -100)          # (B, T) 15% predicted
model.set_recompute(recompute)
mask = np.ones((B, T), dtype=np.int64)
rss_before = status("VmRSS")
try:
    open("/proc/self/clear_refs", "w").write("5")                   # reset the high-water mark
except OSError:
    pass
seconds = []
for _ in range(2):
    model.zero_grad()
    model.rng = np.random.default_rng(1)                            # the same dropout masks both times
    t0 = time.perf_counter()
    model.forward(ids, attention_mask=mask, labels=labels)
    model.backward()
    seconds.append(time.perf_counter() - t0)
digest = hashlib.sha256(model.grads.buffer.tobytes()).hexdigest()[:16]
print(json.dumps({"rss_before": rss_before, "peak": status("VmHWM"), "seconds": seconds[-1], "grads": digest}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="base", help="model preset, or minilm (default base)")
    p.add_argument("--batch-size", type=int, default=8, help="sequences (default 8)")
    p.add_argument("--seq-len", type=int, default=512, help="tokens per sequence (default 512)")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = p.parse_args()
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads)}
    print(f"{args.config}, batch {args.batch_size} x {args.seq_len} tokens, {args.threads} thread(s); "
          f"load average {os.getloadavg()[0]:.1f}")
    rows = {}
    for recompute in (False, True):
        out = subprocess.run([sys.executable, "-c", CHILD, args.config, str(args.batch_size), str(args.seq_len),
                              "1" if recompute else "0"], env=env, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"recompute={recompute}: the child failed:\n{out.stderr}")
        rows[recompute] = r = json.loads(out.stdout)
        name = "--recompute" if recompute else "plain"
        print(f"{name:12s} before the step {r['rss_before']:7.0f} MiB   peak {r['peak']:7.0f} MiB   "
              f"step needs {r['peak'] - r['rss_before']:7.0f} MiB   step {r['seconds']:6.2f} s   grads {r['grads']}")
    plain, again = rows[False], rows[True]
    share = (again["peak"] - again["rss_before"]) / (plain["peak"] - plain["rss_before"])
    print(f"recompute: the step needs {share:.2f}x the memory, takes {again['seconds'] / plain['seconds']:.2f}x "
          f"the time; gradients {'identical' if again['grads'] == plain['grads'] else 'DIFFERENT'}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
