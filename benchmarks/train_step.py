"""Time one pre-training step (forward + backward + AdamW) of minibert against PyTorch, in one run.

    python benchmarks/train_step.py                  # mini at 32 x 64 and base at 8 x 128
    python benchmarks/train_step.py --configs mini --threads 1 --steps 20

References, on the same threads:
  (a) Hugging Face BertForPreTraining (decoder over every position, its default attention)
  (b) the same sparse-prediction model as minibert in PyTorch eager: Hugging Face's modules, the decoder run
      only at the masked positions, eager (textbook) attention, torch.optim.AdamW
  (c) as (b) with torch's fused scaled-dot-product attention
Runs are interleaved (one step of each in turn) so that a noisy machine slows all of them alike; the ratios are
what to read. Prints median ms/step, tokens/s, achieved GFLOP/s and minibert's time / reference time.
"""

import argparse
import os
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", nargs="+", default=["mini", "base"], help="presets to time (default: mini base)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("OPENBLAS_NUM_THREADS", os.cpu_count())),
                   help="BLAS/torch threads for every contender (default: OPENBLAS_NUM_THREADS or all cores)")
    p.add_argument("--steps", type=int, default=10, help="timed steps per contender (after 3 warm-up steps)")
    p.add_argument("--no-hf", action="store_true", help="skip the full Hugging Face model (a)")
    return p.parse_args()


args = parse_args()
# Thread counts must be set before NumPy and torch load their BLAS.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

from minibert import AdamW, BertConfig, BertForPreTraining, keep_freed_memory  # noqa: E402

keep_freed_memory()  # as the minibert CLI does (see minibert/_malloc.py)

SHAPES = {"mini": (32, 64), "base": (8, 128), "tiny": (32, 64), "small": (16, 128), "large": (4, 128)}


def step_flops(cfg, B, T, M):
    """Multiply-add FLOPs of one training step: 2 per MAC forward, x3 for forward + backward."""
    H, F, L, V = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    per_layer = 2 * B * T * (4 * H * H + 2 * H * F) + 2 * 2 * B * T * T * H  # projections, FFN, scores and context
    heads = 2 * M * (H * H + H * V) + 2 * B * H * H  # MLM transform + decoder at M positions, pooler
    return 3 * (L * per_layer + heads)


def make_batch(cfg, B, T, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.ones((B, T), dtype=np.int64)
    mask[B // 2:, T - T // 4:] = 0  # some padding, as real batches have
    types = np.zeros((B, T), dtype=np.int64)
    types[:, T // 2:] = 1
    labels = np.where((rng.random((B, T)) < 0.15) & (mask == 1), ids, -100)
    nsl = rng.integers(0, 2, B)
    return ids, types, mask, labels, nsl


def minibert_step(cfg, batch):
    model = BertForPreTraining(cfg, seed=0)
    opt = AdamW(model.params, model.grads, lr=1e-4)
    ids, types, mask, labels, nsl = batch

    def step():
        model.zero_grad()
        model.forward(ids, types, mask, labels=labels, next_sentence_label=nsl)
        model.backward()
        opt.step()
    return step


def torch_step(cfg, batch, sparse, attn):
    hf_cfg = transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "architectures"})
    hf_cfg._attn_implementation = attn
    model = transformers.BertForPreTraining(hf_cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids, types, mask, labels, nsl = (torch.from_numpy(np.asarray(x)) for x in batch)
    positions = torch.nonzero(labels.reshape(-1) != -100).squeeze(1)
    ce = torch.nn.functional.cross_entropy

    def step():
        opt.zero_grad(set_to_none=True)
        if sparse:  # the decoder only where there is something to predict, as minibert does
            seq, pooled = model.bert(input_ids=ids, token_type_ids=types, attention_mask=mask, return_dict=False)
            h = seq.reshape(-1, seq.shape[-1])[positions]
            loss = ce(model.cls.predictions(h), labels.reshape(-1)[positions]) + ce(model.cls.seq_relationship(pooled), nsl)
        else:
            loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels,
                         next_sentence_label=nsl).loss
        loss.backward()
        opt.step()
    return step


def main():
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}   numpy {np.__version__}   torch {torch.__version__}   transformers "
          f"{transformers.__version__}   OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(auto)')}")
    for name in args.configs:
        cfg = BertConfig.preset(name, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        B, T = SHAPES[name]
        batch = make_batch(cfg, B, T)
        M = int((batch[3] != -100).sum())
        contenders = {"minibert (numpy)": minibert_step(cfg, batch),
                      "torch sparse, eager attention": torch_step(cfg, batch, True, "eager"),
                      "torch sparse, sdpa attention": torch_step(cfg, batch, True, "sdpa")}
        if not args.no_hf:
            contenders["HF BertForPreTraining (dense)"] = torch_step(cfg, batch, False, "sdpa")
        for fn in contenders.values():  # warm-up: first-touch allocations, BLAS buffers
            for _ in range(3):
                fn()
        times = {k: [] for k in contenders}
        for _ in range(args.steps):
            for k, fn in contenders.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
        flops = step_flops(cfg, B, T, M)
        ours = np.median(times["minibert (numpy)"])
        print(f"\n{name}: batch {B} x {T} tokens, {M} masked, {flops / 1e9:.2f} GFLOP per step (sparse)")
        print(f"  {'contender':32s} {'ms/step':>9s} {'tokens/s':>10s} {'GFLOP/s':>8s} {'minibert/this':>14s}")
        for k, ts in times.items():
            med = np.median(ts)
            print(f"  {k:32s} {1000 * med:9.1f} {B * T / med:10.0f} {flops / med / 1e9:8.1f} {ours / med:14.2f}")


if __name__ == "__main__":
    main()
