"""Fine-tuning steps of minibert and PyTorch from the same MiniLM weights, same batches, same schedule.

    python benchmarks/finetune_step.py                     # 10 steps, B=16, T=128, one thread
    python benchmarks/finetune_step.py --steps 20 --threads 2
    python benchmarks/finetune_step.py --dense-last-layer  # also minibert with its last layer on every position

minibert's classifier runs its last layer, after the attention, at [CLS] only (the sparse last layer,
models/bert.py): the head reads nothing else. transformers runs it at every position.

Dropout is off, so the two runs are the same computation: their losses must agree step after step (to float32
rounding), which checks the whole loop (forward, backward, clipping, AdamW, warmup/decay) and not only one
gradient. Steps are interleaved (one of each in turn) so a noisy machine slows both alike; read the ratio. On
several threads each timed step starts after a 0.2 s pause, so that one side's spinning BLAS threads do not slow
the other's step.
"""

import argparse
import os
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", 1)))
    p.add_argument("--dense-last-layer", action="store_true",
                   help="also time minibert with the last layer on every position (model.sparse_last_layer = False)")
    return p.parse_args()


args = parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)

import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from minibert.data.builtin import minilm_dir  # noqa: E402
from minibert.finetune.data import label_ids  # noqa: E402
from minibert.finetune.loading import load_for_finetuning, load_tokenizer  # noqa: E402
from minibert.finetune.tasks import load_task  # noqa: E402
from minibert.finetune.train import collate, encode_examples  # noqa: E402
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay  # noqa: E402

torch.set_num_threads(args.threads)
warnings.simplefilter("ignore")
task = load_task("drug-reviews")
names = ["negative", "neutral", "positive"]
encoded = encode_examples(load_tokenizer(minilm_dir()), task.train, args.max_length)
y = label_ids(task.train, {n: i for i, n in enumerate(names)})

def minibert_classifier(sparse_last_layer=True):
    model = load_for_finetuning(minilm_dir(), names, log=lambda message: None)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = model.classifier_dropout = 0.0
    model.sparse_last_layer = sparse_last_layer
    model.train()
    return model, AdamW(model.params, model.grads, lr=args.lr, weight_decay=0.01)


ours, optimizer = minibert_classifier()
dense = minibert_classifier(False) if args.dense_last_layer else None
hf_config = transformers.BertConfig(**{k: v for k, v in ours.config.to_dict().items()
                                       if k not in ("id2label", "label2id")}, num_labels=3,
                                    attn_implementation="eager")
theirs = transformers.BertForSequenceClassification(hf_config)
state = theirs.state_dict()
for name, p in ours.params.items():  # the same starting point, new head included
    state[name].copy_(torch.from_numpy(p))
theirs.train()
no_decay = lambda n: n.endswith("bias") or "LayerNorm" in n  # noqa: E731
torch_optimizer = torch.optim.AdamW(
    [{"params": [p for n, p in theirs.named_parameters() if not no_decay(n)], "weight_decay": 0.01},
     {"params": [p for n, p in theirs.named_parameters() if no_decay(n)], "weight_decay": 0.0}], lr=args.lr, eps=1e-6)

B = args.batch_size
order = np.random.default_rng(0).permutation(len(encoded))
warmup = max(1, args.steps // 10)
times, worst = {"minibert": [], "torch": [], "dense": []}, 0.0


def settle():
    """On several threads, a pause before each timed step: NumPy's OpenBLAS threads spin for ~0.1 s after their
    last GEMM and would hold a core through the start of torch's step (docs/performance.md, tenth session)."""
    if args.threads > 1:
        time.sleep(0.2)


print(f"MiniLM fine-tuning step, B={B}, T<={args.max_length}, {args.threads} thread(s)")
for step in range(args.steps):
    chosen = order[(step * B) % (len(order) - B):][:B]
    ids, types, mask = collate(encoded, chosen, 0)
    lr = linear_warmup_decay(step, args.lr, warmup, args.steps)
    settle()
    t0 = time.perf_counter()
    out = ours.forward(ids, types, mask, labels=y[chosen])
    ours.backward()
    clip_grad_norm(ours.grads, 1.0)
    optimizer.step(lr)
    ours.zero_grad()
    t_ours = time.perf_counter() - t0
    settle()
    t1 = time.perf_counter()
    for group in torch_optimizer.param_groups:
        group["lr"] = lr
    ref = theirs(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                 attention_mask=torch.from_numpy(mask), labels=torch.from_numpy(y[chosen]))
    ref.loss.backward()
    torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
    torch_optimizer.step()
    torch_optimizer.zero_grad()
    t2 = time.perf_counter()
    times["minibert"].append(t_ours)
    times["torch"].append(t2 - t1)
    worst = max(worst, abs(out.loss - ref.loss.item()))
    if dense is not None:  # the same step with the last layer everywhere: must give the same loss
        model, opt = dense
        settle()
        t3 = time.perf_counter()
        loss = model.forward(ids, types, mask, labels=y[chosen]).loss
        model.backward()
        clip_grad_norm(model.grads, 1.0)
        opt.step(lr)
        model.zero_grad()
        times["dense"].append(time.perf_counter() - t3)
        worst = max(worst, abs(loss - ref.loss.item()))
    print(f"step {step:3d}  T={ids.shape[1]:3d}  loss minibert {out.loss:.5f}  torch {ref.loss.item():.5f}  "
          f"time {t_ours:.2f} s / {t2 - t1:.2f} s")
ours_ms, torch_ms = (1000 * np.median(times[k][1:]) for k in ("minibert", "torch"))
print(f"median ms/step: minibert {ours_ms:.0f}, torch {torch_ms:.0f}; minibert / torch = {ours_ms / torch_ms:.2f}")
if dense is not None:
    dense_ms = 1000 * np.median(times["dense"][1:])
    print(f"minibert with its last layer on every position: {dense_ms:.0f} ms/step, / torch = "
          f"{dense_ms / torch_ms:.2f}; the sparse last layer takes {1 - ours_ms / dense_ms:.0%} off")
print(f"largest loss difference over {args.steps} steps: {worst:.2e}")
