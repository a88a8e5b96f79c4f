"""The same mini training step through the flat-buffer path and through the per-tensor path, interleaved in
one process: before/after for minibert.flat without a second checkout.

    python benchmarks/optimizer_paths.py --threads 1 --steps 10

The per-tensor path is what minibert did before the flat buffers: plain dicts of the model's own arrays make
zero_grad, clip_grad_norm and AdamW loop over the ~50 tensors. Prints median ms of the full step (zero_grad,
forward, backward, clip at 1.0, AdamW) and of clip + AdamW alone (on gradients scaled so clipping rescales).
"""

import argparse
import os
import time

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
p.add_argument("--steps", type=int, default=10, help="timed steps per path (after 3 warm-up steps)")
args = p.parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # before NumPy loads its BLAS

import numpy as np  # noqa: E402

from minibert import AdamW, BertConfig, BertForPreTraining, clip_grad_norm, keep_freed_memory  # noqa: E402

keep_freed_memory()  # as the minibert CLI does
cfg = BertConfig.preset("mini", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
B, T = 32, 64
rng = np.random.default_rng(0)
ids = rng.integers(5, cfg.vocab_size, (B, T))
mask = np.ones((B, T), dtype=np.int64)
mask[B // 2:, T - T // 4:] = 0
types = np.zeros((B, T), dtype=np.int64)
types[:, T // 2:] = 1
labels = np.where((rng.random((B, T)) < 0.15) & (mask == 1), ids, -100)
nsl = rng.integers(0, 2, B)


def path(flat):
    """{kind: (untimed preparation, timed step)} for one model."""
    model = BertForPreTraining(cfg, seed=0)
    params, grads = (model.params, model.grads) if flat else (dict(model.params), dict(model.grads))
    opt = AdamW(params, grads, lr=1e-4)
    assert opt.flat == flat

    def zero_grad():
        for g in ([grads.buffer] if flat else grads.values()):
            g.fill(0.0)

    def full():
        zero_grad()
        model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
        model.backward()
        clip_grad_norm(grads, 1.0)
        opt.step()

    def optimizer():
        clip_grad_norm(grads, 1.0)
        opt.step()

    def scale_grads():
        for g in grads.values():
            g *= 10.0
    return {"full step": (None, full), "clip + AdamW": (scale_grads, optimizer)}


paths = {"per-tensor": path(False), "flat": path(True)}
times = {(n, k): [] for n in paths for k in paths[n]}
for i in range(3 + args.steps):
    for n, kinds in paths.items():
        for k, (prepare, fn) in kinds.items():
            if prepare:
                prepare()
            t0 = time.perf_counter()
            fn()
            if i >= 3:
                times[(n, k)].append(time.perf_counter() - t0)
print(f"threads {args.threads}, load average {os.getloadavg()[0]:.2f}")
for k in ("full step", "clip + AdamW"):
    before, after = np.median(times[("per-tensor", k)]), np.median(times[("flat", k)])
    print(f"  {k:13s} per-tensor {1000 * before:8.2f} ms   flat {1000 * after:8.2f} ms   flat/per-tensor "
          f"{after / before:.2f}")
