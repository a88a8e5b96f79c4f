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

--procs N (with --threads N): also minibert's step as `minibert finetune --procs N` runs it (the default on a
machine with 2+ cores): N processes of one BLAS thread, each with every N-th example of the batch, the
gradients summed over them, AdamW split over them (minibert/finetune/train.py: train_step). Each round starts a
fresh group of processes for `--steps` steps from the start (the first step of a round is not timed), and
alternates with a round of torch's steps; the processes' losses must agree with torch's losses of the same steps.

    python benchmarks/finetune_step.py --steps 8 --threads 2 --procs 2 --batch-size 32
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
    p.add_argument("--procs", type=int, default=1,
                   help="also time minibert's step on this many processes, as `minibert finetune --procs N` runs it")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the processes row and of torch (default 3)")
    p.add_argument("--rank-worker", action="store_true", help=argparse.SUPPRESS)  # a rank of the processes row
    return p.parse_args()


args = parse_args()
if not args.rank_worker:  # (a rank's threads are set by the launcher that started it)
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = \
        str(args.threads)


import numpy as np  # noqa: E402

from minibert.data.builtin import minilm_dir  # noqa: E402
from minibert.finetune.data import label_ids  # noqa: E402
from minibert.finetune.loading import load_for_finetuning, load_tokenizer  # noqa: E402
from minibert.finetune.tasks import load_task  # noqa: E402
from minibert.finetune.train import collate, encode_examples, train_step  # noqa: E402
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay  # noqa: E402

NAMES = ["negative", "neutral", "positive"]


def drug_reviews():
    """The training examples of drug-reviews, tokenized: (encoded, labels)."""
    task = load_task("drug-reviews")
    encoded = encode_examples(load_tokenizer(minilm_dir()), task.train, args.max_length)
    return encoded, label_ids(task.train, {n: i for i, n in enumerate(NAMES)})


def minibert_classifier(sparse_last_layer=True):
    """MiniLM with a new 3-class head (the same start on every rank and for torch), dropout off."""
    model = load_for_finetuning(minilm_dir(), NAMES, log=lambda message: None)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = model.classifier_dropout = 0.0
    model.sparse_last_layer = sparse_last_layer
    model.train()
    return model


def batch_of(step, order, B):
    return order[(step * B) % (len(order) - B):][:B]


def rank_worker():
    """One rank of the processes row: `--steps` steps from MiniLM's weights, exactly as `minibert finetune
    --procs N` runs them; rank 0 prints the step times and losses as JSON."""
    import json

    from minibert.training.distributed import communicator
    from minibert.training.sharded import ShardedAdamW

    comm = communicator()
    encoded, y = drug_reviews()
    model = minibert_classifier()
    optimizer = ShardedAdamW(model.params, model.grads, comm, lr=args.lr, weight_decay=0.01)
    order = np.random.default_rng(0).permutation(len(encoded))
    warmup = max(1, args.steps // 10)
    times, losses = [], []
    for step in range(args.steps):
        comm.barrier()  # every rank starts the step together
        t0 = time.perf_counter()
        loss, _ = train_step(model, optimizer, encoded, batch_of(step, order, args.batch_size),
                             lambda chosen, T: {"labels": y[chosen]}, 0,
                             linear_warmup_decay(step, args.lr, warmup, args.steps), 1.0, comm)
        times.append(time.perf_counter() - t0)
        losses.append(loss)
    if comm.is_root:
        print(json.dumps({"times": times, "losses": losses}))


if args.rank_worker:
    rank_worker()
    raise SystemExit(0)

import warnings  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402

torch.set_num_threads(args.threads)
warnings.simplefilter("ignore")
encoded, y = drug_reviews()


def with_adamw(model):
    return model, AdamW(model.params, model.grads, lr=args.lr, weight_decay=0.01)


ours, optimizer = with_adamw(minibert_classifier())
dense = with_adamw(minibert_classifier(False)) if args.dense_last_layer else None
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
    last GEMM and would hold a core through the start of torch's step (python benchmarks/blas_spin.py shows it)."""
    if args.threads > 1:
        time.sleep(0.2)


print(f"MiniLM fine-tuning step, B={B}, T<={args.max_length}, {args.threads} thread(s)")
def torch_step(ids, types, mask, labels, lr):
    """One full step of the torch classifier (after settle()): (its loss, its seconds)."""
    settle()
    t1 = time.perf_counter()
    for group in torch_optimizer.param_groups:
        group["lr"] = lr
    ref = theirs(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                 attention_mask=torch.from_numpy(mask), labels=torch.from_numpy(labels))
    ref.loss.backward()
    torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
    torch_optimizer.step()
    torch_optimizer.zero_grad()
    return ref.loss.item(), time.perf_counter() - t1


torch_losses = []
for step in range(args.steps):
    chosen = batch_of(step, order, B)
    ids, types, mask = collate(encoded, chosen, 0)
    lr = linear_warmup_decay(step, args.lr, warmup, args.steps)
    settle()
    t0 = time.perf_counter()
    out = ours.forward(ids, token_type_ids=types, attention_mask=mask, labels=y[chosen])
    ours.backward()
    clip_grad_norm(ours.grads, 1.0)
    optimizer.step(lr)
    ours.zero_grad()
    t_ours = time.perf_counter() - t0
    ref_loss, t_torch = torch_step(ids, types, mask, y[chosen], lr)
    times["minibert"].append(t_ours)
    times["torch"].append(t_torch)
    torch_losses.append(ref_loss)
    worst = max(worst, abs(out.loss - ref_loss))
    if dense is not None:  # the same step with the last layer everywhere: must give the same loss
        model, opt = dense
        settle()
        t3 = time.perf_counter()
        loss = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=y[chosen]).loss
        model.backward()
        clip_grad_norm(model.grads, 1.0)
        opt.step(lr)
        model.zero_grad()
        times["dense"].append(time.perf_counter() - t3)
        worst = max(worst, abs(loss - ref_loss))
    print(f"step {step:3d}  T={ids.shape[1]:3d}  loss minibert {out.loss:.5f}  torch {ref_loss:.5f}  "
          f"time {t_ours:.2f} s / {t_torch:.2f} s")
ours_ms, torch_ms = (1000 * np.median(times[k][1:]) for k in ("minibert", "torch"))
print(f"median ms/step: minibert {ours_ms:.0f}, torch {torch_ms:.0f}; minibert / torch = {ours_ms / torch_ms:.2f}")
if dense is not None:
    dense_ms = 1000 * np.median(times["dense"][1:])
    print(f"minibert with its last layer on every position: {dense_ms:.0f} ms/step, / torch = "
          f"{dense_ms / torch_ms:.2f}; the sparse last layer takes {1 - ours_ms / dense_ms:.0%} off")
print(f"largest loss difference over {args.steps} steps: {worst:.2e}")


def procs_round():
    """Step times and losses of one round of the processes row: a fresh group of args.procs ranks."""
    import json
    import subprocess
    import sys
    command = [sys.executable, "-m", "minibert.training.procs", "-n", str(args.procs), "--threads",
               str(max(1, args.threads // args.procs)), sys.executable, __file__, "--rank-worker", "--steps",
               str(args.steps), "--batch-size", str(B), "--max-length", str(args.max_length), "--lr", str(args.lr)]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


if args.procs > 1:
    if B % args.procs:
        raise SystemExit(f"--batch-size {B} must be divisible by --procs {args.procs}")
    ours_procs, theirs_rounds, procs_worst = [], [], 0.0
    for _ in range(args.rounds):
        result = procs_round()
        ours_procs += result["times"][1:]  # (the first step of a fresh process pays for first-time allocations)
        procs_worst = max(procs_worst, max(abs(a - b) for a, b in zip(result["losses"], torch_losses)))
        for step in range(args.steps):  # torch's steps go on training its model: only their times count
            chosen = batch_of(step, order, B)
            theirs_rounds.append(torch_step(*collate(encoded, chosen, 0), y[chosen],
                                            linear_warmup_decay(step, args.lr, warmup, args.steps))[1])
    procs_ms, theirs_ms = 1000 * np.median(ours_procs), 1000 * np.median(theirs_rounds[1:])
    print(f"minibert on {args.procs} processes x {max(1, args.threads // args.procs)} thread "
          f"(`minibert finetune --procs {args.procs}`), {args.rounds} rounds: {procs_ms:.0f} ms/step; torch on "
          f"{args.threads} threads in the rounds between: {theirs_ms:.0f} ms/step; minibert / torch = "
          f"{procs_ms / theirs_ms:.2f}; one process on {args.threads} threads / {args.procs} processes = "
          f"{ours_ms / procs_ms:.2f}")
    print(f"largest loss difference, processes against torch, same steps: {procs_worst:.2e}")
