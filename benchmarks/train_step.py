"""Time pre-training steps of minibert against PyTorch, in one run.

    python benchmarks/train_step.py                  # mini at 32 x 64 and base at 8 x 128
    python benchmarks/train_step.py --configs mini --threads 1 --no-hf

    python benchmarks/train_step.py --configs mini --batch 16 64 --procs 2   # as `minibert pretrain` runs
    python benchmarks/train_step.py --configs mini --batch 16 64 --mask-prob 0.4 --dense-last-layer
    python benchmarks/train_step.py --configs mini --batch 16 64 --no-hf --gelu both   # NumPy and numba GELU

Three kinds of row, each against the same work in torch:
  fwd+bwd    forward + backward only (the gradients are zeroed outside the timing)
  full step  exactly what `minibert pretrain` does per step: zero_grad, forward, backward, clip_grad_norm at
             1.0, AdamW step (torch: zero_grad, forward, backward, clip_grad_norm_, torch.optim.AdamW)
  optimizer  clipping + AdamW alone, on gradients scaled (untimed) so that clipping always rescales them
  processes  the full step as `minibert pretrain` runs it by default (--procs N, default: the thread count):
             N processes of threads/N BLAS threads each, every one its rows of the batch, the gradients summed
             over them (training/procs.py), then clipping and AdamW; against torch's full step on all threads.
             Each process sums, clips and updates its 1/N of the weights (training/sharded.py), as pretrain
             does; a second row times every process doing all of it (the gradients summed on every rank,
             then clipping and AdamW over the whole buffer), as pretrain did before, for comparison.
             The processes run in their own rounds (a fresh group per round), alternating with rounds of
             torch's full step, so this row is interleaved by rounds, not by steps.
References, on the same threads:
  (a) Hugging Face BertForPreTraining (decoder over every position, its default attention)
  (b) the same sparse-prediction model as minibert in PyTorch eager: Hugging Face's modules, the decoder run
      only at the masked positions and the last layer, after its attention, only there and at [CLS] (minibert's
      sparse last layer), eager (textbook) attention, torch.optim.AdamW
  (c) as (b) with torch's fused scaled-dot-product attention
Every optimizer skips weight decay for biases and LayerNorm, as minibert does.
--dense-last-layer adds minibert and (b) with the last layer on every position, as before the sparse last layer;
the GFLOP/s columns count the sparse algorithm's FLOPs for every row (the dense rows, and (a), do more work).
minibert's exact GELU runs in NumPy or, with numba installed, compiled (minibert/layers/gelu_numba.py): --gelu
both times each as its own contender (the processes row too), interleaved with the others; the ratio column
compares with the first minibert row.
Runs are interleaved (one step of each in turn) so that a noisy machine slows all of them alike; the ratios are
what to read. On more than one thread, each timed step shorter than a second follows an untimed step of the same
contender: NumPy's OpenBLAS threads spin for ~0.1 s after their last GEMM and would slow the next contender's
step. Also prints the float32 matmul peak measured in this run and which OpenBLAS kernel ran, each contender's
achieved GFLOP/s as a fraction of that peak, and the matmul floor: the step's GEMMs alone at the same shapes and
threads (benchmarks/matmul_floor.py) over torch's step, the lowest ratio any implementation of
this algorithm could reach here (for the processes row: one rank's share on its one thread).
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
    p.add_argument("--batch", type=int, nargs=2, default=None, metavar=("B", "T"),
                   help="batch shape for every config (default: mini 32 x 64, base 8 x 128; minibert pretrain's "
                        "default run is 16 x 64)")
    p.add_argument("--procs", type=int, default=None,
                   help="also time minibert's full step on this many processes, as `minibert pretrain --procs N` "
                        "runs it (default: --threads; 1 = skip)")
    p.add_argument("--gelu", choices=["auto", "numpy", "numba", "both"], default="auto",
                   help="minibert's exact GELU: auto (numba's if installed, as MINIBERT_NUMBA says), numpy, numba, "
                        "or both as two contenders (default auto)")
    p.add_argument("--mask-prob", type=float, default=0.15,
                   help="share of the real tokens masked in the timed batch (default 0.15, BERT's; `minibert "
                        "pretrain` masks 0.4 by default)")
    p.add_argument("--dense-last-layer", action="store_true",
                   help="also time minibert and torch with the last layer on every position (as before the sparse "
                        "last layer, models/pretraining.py)")
    p.add_argument("--rank-worker", nargs=6, metavar=("CONFIG", "B", "T", "STEPS", "OPTIMIZER", "LAST_LAYER"),
                   help=argparse.SUPPRESS)
    return p.parse_args()


args = parse_args()
if args.rank_worker:  # a rank of the "processes" row: started by procs_round() below, threads set by the launcher
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args.threads = int(os.environ["OPENBLAS_NUM_THREADS"])
# Thread counts must be set before NumPy and torch load their BLAS.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)

import numpy as np  # noqa: E402
if not args.rank_worker:  # the ranks of the processes row need neither (nor their memory)
    import torch  # noqa: E402
    import transformers  # noqa: E402

from matmul_floor import matmul_floor_ms  # noqa: E402  (benchmarks/matmul_floor.py)
from minibert import AdamW, BertConfig, BertForPreTraining, clip_grad_norm, keep_freed_memory  # noqa: E402
from minibert.layers.gelu_select import gelu_kernel_name, use_numba_gelu  # noqa: E402

keep_freed_memory()  # as the minibert CLI does (see minibert/_malloc.py)

SHAPES = {"mini": (32, 64), "base": (8, 128), "tiny": (32, 64), "small": (16, 128), "large": (4, 128)}
CLIP = 1.0  # minibert pretrain's default --clip
KINDS = ("fwd+bwd", "full step", "optimizer")


def no_decay(name):
    return name.endswith("bias") or "LayerNorm" in name


def step_flops(cfg, B, T, M, R=None):
    """Multiply-add FLOPs of one training step: 2 per MAC forward, x3 for forward + backward. R: the rows the
    last layer runs on after its attention (the sparse last layer); None: all B*T."""
    H, F, L, V = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    R = B * T if R is None else R
    attention = 2 * B * T * 3 * H * H + 2 * 2 * B * T * T * H  # q, k, v projections; scores and context
    after_attention = 2 * (H * H + 2 * H * F)  # per row: output projection, FFN
    layers = L * attention + ((L - 1) * B * T + R) * after_attention
    heads = 2 * M * (H * H + H * V) + 2 * B * H * H  # MLM transform + decoder at M positions, pooler
    return 3 * (layers + heads)


def last_layer_rows(batch, dense=False):
    """How many rows the last layer runs on after its attention: the masked positions and the [CLS] rows the
    pooler reads (models/pretraining.py's sparse last layer), or all of them."""
    ids, _, _, labels, _ = batch
    if dense:
        return ids.size
    B, T = ids.shape
    return len(np.union1d(np.flatnonzero(labels.reshape(-1) != -100), np.arange(B) * T))


def sgemm_peak(n=2048, repeats=5):
    """Best float32 matmul GFLOP/s of n x n @ n x n on the benchmark's threads."""
    a, b = np.random.default_rng(0).standard_normal((2, n, n), dtype=np.float32)  # (n, n) each
    c = np.empty_like(a)
    np.matmul(a, b, out=c)  # warm-up: BLAS buffers, thread start
    best = min(_timed(lambda: np.matmul(a, b, out=c)) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def blas_description():
    """Which BLAS library and kernel NumPy runs (threadpoolctl when installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(auto)')} (install threadpoolctl for more)"
    libs = [f"{i.get('internal_api')} {i.get('version')} kernel {i.get('architecture')} threads {i.get('num_threads')}"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(libs) + f"   OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(auto)')}"


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def make_batch(cfg, B, T, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.ones((B, T), dtype=np.int64)
    mask[B // 2:, T - T // 4:] = 0  # some padding, as real batches have
    types = np.zeros((B, T), dtype=np.int64)
    types[:, T // 2:] = 1
    labels = np.where((rng.random((B, T)) < args.mask_prob) & (mask == 1), ids, -100)
    nsl = rng.integers(0, 2, B)
    return ids, types, mask, labels, nsl


def gelu_kernels():
    """The GELU kernels to time, as --gelu asks: ["numpy"], ["numba"] or both; auto: the one MINIBERT_NUMBA picks."""
    return {"auto": [gelu_kernel_name()], "both": ["numpy", "numba"]}.get(args.gelu, [args.gelu])


def with_gelu(kernel, steps):
    """The same {kind: (prepare, step)}, the given GELU kernel switched on in each (untimed) preparation."""
    def prepared(prepare):
        def run():
            use_numba_gelu(kernel == "numba")
            if prepare is not None:
                prepare()
        return run
    return {kind: (prepared(prepare), fn) for kind, (prepare, fn) in steps.items()}


def minibert_steps(cfg, batch, sparse_last_layer=True):
    """{kind: (untimed preparation, timed step)} for minibert."""
    model = BertForPreTraining(cfg, seed=0)
    model.sparse_last_layer = sparse_last_layer
    opt = AdamW(model.params, model.grads, lr=1e-4)
    ids, types, mask, labels, nsl = batch

    def fwd_bwd():
        model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
        model.backward()

    def full():  # as minibert/training/pretrain.py runs a step
        model.zero_grad()
        fwd_bwd()
        clip_grad_norm(model.grads, CLIP)
        opt.step()

    def optimizer():
        clip_grad_norm(model.grads, CLIP)
        opt.step()

    def scale_grads():  # gradients of norm > CLIP, so that clipping rescales every time
        for g in model.grads.values():
            g *= 10.0
    return {"fwd+bwd": (model.zero_grad, fwd_bwd), "full step": (None, full), "optimizer": (scale_grads, optimizer)}


def sparse_last_layer(layer, rows):
    """Hugging Face's last BertLayer made to run, after its attention, on the flat rows (R,) only, as minibert's
    sparse last layer does; it returns (B, T, H) with zeros elsewhere (the decoder and pooler read only rows)."""
    def forward(hidden_states, attention_mask=None, *args, **kwargs):
        B, T, H = hidden_states.shape
        context = layer.attention.self(hidden_states, attention_mask, **kwargs)[0].reshape(B * T, H)  # every query
        a = layer.attention.output(context[rows], hidden_states.reshape(B * T, H)[rows])  # (R, H)
        out = layer.output(layer.intermediate(a), a)  # (R, H)
        return hidden_states.new_zeros(B * T, H).index_copy(0, rows, out).reshape(B, T, H)
    layer.forward = forward


def torch_steps(cfg, batch, sparse, attn, sparse_last=True):
    hf_cfg = transformers.BertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "architectures"})
    hf_cfg._attn_implementation = attn
    model = transformers.BertForPreTraining(hf_cfg).train()
    if sparse and sparse_last:
        B, T = batch[0].shape
        rows = torch.from_numpy(np.union1d(np.flatnonzero(batch[3].reshape(-1) != -100), np.arange(B) * T))
        sparse_last_layer(model.bert.encoder.layer[-1], rows)
    named = list(model.named_parameters())
    opt = torch.optim.AdamW([{"params": [p for n, p in named if not no_decay(n)], "weight_decay": 0.01},
                             {"params": [p for n, p in named if no_decay(n)], "weight_decay": 0.0}], lr=1e-4)
    ids, types, mask, labels, nsl = (torch.from_numpy(np.asarray(x)) for x in batch)
    positions = torch.nonzero(labels.reshape(-1) != -100).squeeze(1)
    ce = torch.nn.functional.cross_entropy

    def fwd_bwd():
        if sparse:  # the decoder only where there is something to predict, as minibert does
            seq, pooled = model.bert(input_ids=ids, token_type_ids=types, attention_mask=mask, return_dict=False)
            h = seq.reshape(-1, seq.shape[-1])[positions]
            loss = (ce(model.cls.predictions(h), labels.reshape(-1)[positions])
                    + ce(model.cls.seq_relationship(pooled), nsl))
        else:
            loss = model(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels,
                         next_sentence_label=nsl).loss
        loss.backward()

    def full():
        opt.zero_grad(set_to_none=True)
        fwd_bwd()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()

    def optimizer():
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()

    @torch.no_grad()
    def scale_grads():
        for p in model.parameters():
            if p.grad is not None:
                p.grad.mul_(10.0)
    return {"fwd+bwd": (lambda: opt.zero_grad(set_to_none=True), fwd_bwd), "full step": (None, full),
            "optimizer": (scale_grads, optimizer)}


def rank_worker(config, B, T, steps, optimizer, last_layer="sparse"):
    """One rank of the processes row: `steps` full steps (after 3 warm-up steps) exactly as the pretrain loop's
    data-parallel path runs them (optimizer "sharded"), or with the whole AdamW step on every rank ("whole", the
    path before training/sharded.py); rank 0 prints the step times as JSON."""
    import json

    from minibert.training.distributed import communicator, rank_share
    from minibert.training.sharded import ShardedAdamW
    comm = communicator()
    cfg = BertConfig.preset(config, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    ids, types, mask, labels, nsl = make_batch(cfg, B, T)
    part = rank_share({"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels,
                       "next_sentence_label": nsl}, comm.rank, comm.size)
    mlm_weight = (part["labels"] != -100).sum() / (labels != -100).sum()  # as pretrain.py weights a rank's loss
    model = BertForPreTraining(cfg, seed=0)
    model.sparse_last_layer = last_layer == "sparse"
    sharded = optimizer == "sharded"
    opt = (ShardedAdamW(model.params, model.grads, comm, lr=1e-4) if sharded
           else AdamW(model.params, model.grads, lr=1e-4))
    times = []
    for i in range(3 + steps):
        comm.barrier()  # every rank starts the step together, as after the previous step's sum
        t0 = time.perf_counter()
        model.zero_grad()
        model.forward(part["input_ids"], token_type_ids=part["token_type_ids"], attention_mask=part["attention_mask"],
                      labels=part["labels"], next_sentence_label=part["next_sentence_label"])
        model.backward(loss_scale=1.0 / comm.size, mlm_scale=mlm_weight)
        sums = np.zeros(12)  # the step's loss and accuracy sums, summed with the gradient as pretrain does
        if sharded:
            opt.reduce_and_clip(sums, CLIP)
        else:
            comm.allreduce_sum_(model.grads.buffer)
            comm.allreduce_sum_(sums)
            clip_grad_norm(model.grads, CLIP)
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    if comm.is_root:
        print(json.dumps(times))


def procs_round(config, B, T, steps, optimizer="sharded", gelu="numpy", last_layer="sparse"):
    """Step times of one round of the processes row (a fresh group of args.procs ranks, with this GELU)."""
    import json
    import subprocess
    import sys
    threads = str(max(1, args.threads // args.procs))  # per rank; the launcher sets them in each rank's environment
    out = subprocess.run([sys.executable, "-m", "minibert.training.procs", "-n", str(args.procs), "--threads",
                          threads, sys.executable, __file__, "--mask-prob", str(args.mask_prob),
                          "--rank-worker", config, str(B), str(T), str(steps), optimizer, last_layer],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "MINIBERT_NUMBA": "1" if gelu == "numba" else "0"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def rank_floor_seconds(cfg, B, T, M, R):
    """The matmul floor of one rank's share, on the BLAS threads a rank gets (one: set for the measurement)."""
    from minibert.blas import one_blas_thread
    if max(1, args.threads // args.procs) == 1 and args.threads > 1:
        with one_blas_thread():
            return matmul_floor_ms(cfg, B, T, M, args.steps, R) / 1000
    return matmul_floor_ms(cfg, B, T, M, args.steps, R) / 1000


def procs_row(name, cfg, batch, B, T, flops, peak):
    """The full step on args.procs processes against torch eager's full step on all threads, in rounds (and the
    same processes with the whole AdamW step on every rank)."""
    _, torch_full = torch_steps(cfg, batch, True, "eager")["full step"]
    for _ in range(3):
        torch_full()  # warm-up
    kernels = gelu_kernels()
    ours, whole, dense, theirs = {k: [] for k in kernels}, [], [], []
    per_round = max(2, args.steps // 3)
    for _ in range(3):
        for k in kernels:
            ours[k] += procs_round(name, B, T, per_round, gelu=k)
        whole += procs_round(name, B, T, per_round, "whole", gelu=kernels[0])
        if args.dense_last_layer:
            dense += procs_round(name, B, T, per_round, gelu=kernels[0], last_layer="dense")
        theirs += [_timed(torch_full) for _ in range(per_round)]
    ours = {k: np.median(v) for k, v in ours.items()}
    whole, theirs = np.median(whole), np.median(theirs)
    first = ours[kernels[0]]
    rows = [(f"minibert, {args.procs} procs, {k} GELU", ours[k]) for k in kernels]
    rows += [("  same, whole AdamW per process", whole)]
    rows += [("  same, dense last layer", np.median(dense))] if dense else []
    rows += [("torch sparse, eager attention", theirs)]
    for label, seconds in rows:
        gflops = flops / seconds / 1e9
        print(f"  {'processes':10s} {label:32s} {1000 * seconds:9.1f} {B * T / seconds:10.0f} {gflops:8.1f} "
              f"{gflops / peak:8.0%} {first / seconds:14.2f}")
    for k in kernels:
        print(f"  full step as `minibert pretrain --procs {args.procs}` runs it ({k} GELU) / torch eager on "
              f"{args.threads} threads: {ours[k] / theirs:.2f}")
    print(f"  (whole AdamW on every process, {kernels[0]} GELU: {whole / theirs:.2f})")
    M = int((batch[3] != -100).sum())
    floor = rank_floor_seconds(cfg, B // args.procs, T, M // args.procs, last_layer_rows(batch) // args.procs)
    print(f"  matmul floor: one rank's GEMMs alone ({B // args.procs} x {T}, {M // args.procs} masked, "
          f"{max(1, args.threads // args.procs)} thread) {1000 * floor:.1f} ms = {floor / theirs:.2f} of torch's "
          f"step: no implementation of this algorithm on these processes gets below that ratio")


def main():
    if args.rank_worker:
        config, B, T, steps, optimizer, last_layer = args.rank_worker
        return rank_worker(config, int(B), int(T), int(steps), optimizer, last_layer)
    args.procs = args.threads if args.procs is None else args.procs
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}   numpy {np.__version__}   torch {torch.__version__}   transformers "
          f"{transformers.__version__}   load average {os.getloadavg()[0]:.2f}")
    print(f"BLAS: {blas_description()}")
    print(f"minibert's exact GELU: {', '.join(gelu_kernels())} (--gelu {args.gelu}; MINIBERT_NUMBA="
          f"{os.environ.get('MINIBERT_NUMBA', '(unset)')})")
    peak = sgemm_peak()
    print(f"float32 matmul peak (2048 x 2048 sgemm, {args.threads} threads): {peak:.1f} GFLOP/s")
    for name in args.configs:
        cfg = BertConfig.preset(name, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
        B, T = args.batch or SHAPES[name]
        batch = make_batch(cfg, B, T)
        M = int((batch[3] != -100).sum())
        contenders = {f"minibert ({k} GELU)": with_gelu(k, minibert_steps(cfg, batch)) for k in gelu_kernels()}
        reference = next(iter(contenders))  # the ratio column compares with this one
        contenders |= {"torch sparse, eager attention": torch_steps(cfg, batch, True, "eager"),
                       "torch sparse, sdpa attention": torch_steps(cfg, batch, True, "sdpa")}
        if args.dense_last_layer:  # both as before the sparse last layer
            contenders |= {"minibert, dense last layer": with_gelu(gelu_kernels()[0],
                                                                   minibert_steps(cfg, batch, False)),
                           "torch sparse, dense last layer": torch_steps(cfg, batch, True, "eager", False)}
        if not args.no_hf:
            contenders["HF BertForPreTraining (dense)"] = torch_steps(cfg, batch, False, "sdpa")
        runs = [(c, kind) for kind in KINDS for c in contenders]
        times = {run: [] for run in runs}
        settle = {}
        for i in range(3 + args.steps):  # 3 warm-up rounds: first-touch allocations, BLAS buffers
            for c, kind in runs:
                prepare, fn = contenders[c][kind]
                # NumPy's OpenBLAS threads spin for ~0.1 s after a GEMM, holding the other cores: a torch step
                # timed right after a minibert step ran 1.6x slower (python benchmarks/blas_spin.py). So each
                # timed step follows an untimed one of the same contender, which absorbs the previous contender's
                # spin, unless its steps take over a second, where the spin is under a tenth of a step.
                if i >= 3 and settle[(c, kind)]:
                    if prepare is not None:
                        prepare()
                    fn()  # untimed: absorbs the spin
                if prepare is not None:
                    prepare()
                seconds = _timed(fn)
                if i == 2:
                    settle[(c, kind)] = args.threads > 1 and seconds < 1.0
                if i >= 3:
                    times[(c, kind)].append(seconds)
        R = last_layer_rows(batch)
        flops = step_flops(cfg, B, T, M, R)
        print(f"\n{name}: batch {B} x {T} tokens, {M} masked, the last layer on {R} rows: {flops / 1e9:.2f} GFLOP per "
              f"step ({step_flops(cfg, B, T, M) / 1e9:.2f} with the last layer on all rows), load average now "
              f"{os.getloadavg()[0]:.2f}")
        print(f"  {'kind':10s} {'contender':32s} {'ms/step':>9s} {'tokens/s':>10s} {'GFLOP/s':>8s} {'of peak':>8s} "
              f"{'minibert/this':>14s}")
        for kind in KINDS:
            ours = np.median(times[(reference, kind)])
            for c in contenders:
                med = np.median(times[(c, kind)])
                if kind == "optimizer":  # no matmul work: throughput columns mean nothing
                    print(f"  {kind:10s} {c:32s} {1000 * med:9.2f} {'':>10s} {'':>8s} {'':>8s} {ours / med:14.2f}")
                else:
                    gflops = flops / med / 1e9
                    print(f"  {kind:10s} {c:32s} {1000 * med:9.1f} {B * T / med:10.0f} {gflops:8.1f} "
                          f"{gflops / peak:8.0%} {ours / med:14.2f}")
        floor = matmul_floor_ms(cfg, B, T, M, args.steps, R) / 1000
        torch_full = np.median(times[("torch sparse, eager attention", "full step")])
        ours_full = np.median(times[(reference, "full step")])
        print(f"  matmul floor: the step's GEMMs alone ({args.threads} threads) {1000 * floor:.1f} ms = "
              f"{floor / torch_full:.2f} of torch eager's full step ({ours_full / torch_full:.2f} for minibert's): no "
              f"implementation of this algorithm on these threads gets below that ratio")
        if args.procs > 1:
            if B % args.procs:
                print(f"  processes: skipped, batch {B} is not divisible by --procs {args.procs}")
            else:
                procs_row(name, cfg, batch, B, T, flops, peak)


if __name__ == "__main__":
    main()
