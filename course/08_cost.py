# %% [markdown]
# # 8. Cost: what a training step needs in memory and time
#
# The chapters before built BERT and trained it. This one prices it. You will
#
# - count the **parameters** of any config by formula, and check the count against minibert and `transformers`;
# - count the **bytes** a training step holds: parameters, gradients, AdamW's two moments, and the activations
#   a forward keeps for its backward; then measure them on minibert's own arrays and with `tracemalloc`;
# - time **forward and backward** against model size on this CPU, and compare with what a matmul alone reaches;
# - rebuild **activation recompute** in plain NumPy (forward and backward), check it, then measure what
#   minibert's recompute saves in memory and costs in time;
# - test three claims you may read in tutorials with the numbers this notebook prints:
#   "about 50 MB to train the mini", "forward about 20 ms, backward about 40 ms",
#   "a GPU only pays above about 100k parameters".
#
# Timings depend on the machine and on what else runs on it: the notebook prints them and never asserts on them.

# %%
import time
import tracemalloc
import warnings

import matplotlib.pyplot as plt
import numpy as np
from minibert.course import check, exercise, numerical_gradient, quick, stamp, torch_or_none

from minibert import AdamW, BertConfig, BertForPreTraining
from minibert.layers.gelu_select import use_numba_gelu
from minibert.models.bert import bert_param_shapes
from minibert.models.pretraining import mlm_head_shapes
from minibert.training.memory import peak_rss_mb

CHAPTER = "08_cost"  # for the stamp on each figure of timings
use_numba_gelu(False)  # NumPy's exact GELU, as `minibert pretrain` runs it (numba's would compile first, ~seconds)


print(f"{stamp(CHAPTER)}; NumPy {np.__version__}")

# %% [markdown]
# ## 1. Parameters, by formula
#
# With vocabulary $V$, positions $P$, token types $S$, width $H$, feed-forward width $F$ and $L$ layers, every
# weight matrix and bias of BERT's pre-training model is one term:
#
# | part | parameters |
# |---|---|
# | embeddings: word, position, token-type tables and their LayerNorm | $(V + P + S)H + 2H$ |
# | one encoder layer: $Q, K, V$ and the output projection, two LayerNorms, two feed-forward matrices | $4H^2 + 4H + 4H + 2HF + F + H$ |
# | pooler (dense $H \to H$) | $H^2 + H$ |
# | MLM head: dense $H \to H$, LayerNorm, output bias (the decoder *is* the word table: tied) | $H^2 + 3H + V$ |
# | next-sentence head | $2H + 2$ |
#
# The layers grow as $H^2$, the embeddings as $VH$: in a small model the vocabulary holds most of the numbers.

# %%
def count_parameters(cfg):
    """Parameters of BertForPreTraining(cfg), by the table above."""
    V, P, S, H, F, L = (cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size, cfg.hidden_size,
                        cfg.intermediate_size, cfg.num_hidden_layers)
    embeddings = (V + P + S) * H + 2 * H
    layer = 4 * H * H + 4 * H + 4 * H + 2 * H * F + F + H
    return embeddings + L * layer + (H * H + H) + (H * H + 3 * H + V) + (2 * H + 2)


def shapes_count(cfg):
    """The same count from minibert's own list of parameter shapes (no arrays are made)."""
    shapes = {**bert_param_shapes(cfg, "bert.", pooler=True), **mlm_head_shapes(cfg)}
    return sum(int(np.prod(s)) for s in shapes.values()) + 2 * cfg.hidden_size + 2  # + the NSP head


counts = {}
for name in ("tiny", "mini", "small", "base", "large"):
    cfg = BertConfig.preset(name)
    counts[name] = count_parameters(cfg)
    check(f"{name}: formula against minibert's shapes", counts[name], shapes_count(cfg), rtol=0, atol=0)
mini = BertConfig.preset("mini")
check("mini: formula against a built model", counts["mini"], BertForPreTraining(mini).num_parameters(), rtol=0, atol=0)
for name, n in counts.items():
    print(f"{name:<6} {n:>12,} parameters")

# %% [markdown]
# `transformers` counts the same model the same way (its `num_parameters()` counts the tied decoder once):

# %%
torch = torch_or_none()
if torch is not None:
    with warnings.catch_warnings():  # (its progress bars warn about a notebook without ipywidgets)
        warnings.simplefilter("ignore")
        import transformers
    hf = transformers.BertForPreTraining(transformers.BertConfig(**{
        k: getattr(mini, k) for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                      "intermediate_size", "max_position_embeddings", "type_vocab_size")}))
    check("mini: formula against transformers", counts["mini"], hf.num_parameters(), rtol=0, atol=0)
    del hf

# %% [markdown]
# ## 2. Bytes of a training step, by formula
#
# A step keeps four arrays of the model's size, in float32 (4 bytes a number): the **parameters**, their
# **gradients**, and AdamW's **two moments** $m$ and $v$. That is $16N$ bytes for $N$ parameters, whatever the batch.
#
# The **activations** depend on the batch ($B$ sequences of $T$ tokens, $A$ heads). A layer's backward needs what
# its forward computed, so the forward keeps, per layer (minibert's `layers/encoder_layer.py` decides which):
#
# - $(B, T, H)$ arrays: the layer's input, $Q$, $K$, $V$, the attention's output, the feed-forward's input, and the
#   normalised values of the two LayerNorms: $8BTH$ numbers;
# - $(B, T, F)$ arrays: the feed-forward's pre-activation and GELU's output: $2BTF$;
# - $(B, A, T, T)$ arrays: the attention probabilities before and after dropout: $2BAT^2$;
# - dropout masks, one byte a value: $BAT^2 + 3BTH$ bytes; and a copy of the fused $Q,K,V$ weights, $3H^2$.
#
# $$\text{activations} \approx L\,\big(4(8BTH + 2BTF + 2BAT^2 + 3H^2) + BAT^2 + 3BTH\big) \text{ bytes}$$
#
# Then we measure: walk the cache the forward keeps and add up the bytes of every distinct array in it.

# %%
def distinct_arrays(obj, found=None):
    """{id: nbytes} of the arrays in a nest of tuples/lists/dicts, each memory block counted once (a view counts
    as the array it views)."""
    found = {} if found is None else found
    if isinstance(obj, np.ndarray):
        while isinstance(obj.base, np.ndarray):
            obj = obj.base
        found[id(obj)] = obj.nbytes
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            distinct_arrays(item, found)
    elif isinstance(obj, dict):
        for item in obj.values():
            distinct_arrays(item, found)
    return found


def nbytes(obj):
    return sum(distinct_arrays(obj).values())


def layer_activation_bytes(cfg, B, T):
    H, F, A = cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads
    return 4 * (8 * B * T * H + 2 * B * T * F + 2 * B * A * T * T + 3 * H * H) + B * A * T * T + 3 * B * T * H


B, T = 16, 64  # the batch of `minibert pretrain`: 16 sequences of 64 tokens
model = BertForPreTraining(mini, seed=0)
model.sparse_last_layer = False  # every layer at every position, as the formula counts (see chapter 6)
rng = np.random.default_rng(0)
ids = rng.integers(5, mini.vocab_size, (B, T))  # (B, T)
labels = np.where(rng.random((B, T)) < 0.15, ids, -100)  # (B, T) 15% of the positions are predicted
out = model(ids, labels=labels)
layers_measured = nbytes(model.bert._cache[2])  # the L layers' caches
layers_formula = mini.num_hidden_layers * layer_activation_bytes(mini, B, T)
everything = nbytes((model.bert._cache, model._cache))  # + embeddings, heads
print(f"mini, batch {B} x {T}: the layers keep {layers_measured / 1e6:.1f} MB (formula {layers_formula / 1e6:.1f} MB, "
      f"ratio {layers_measured / layers_formula:.3f}); the whole forward keeps {everything / 1e6:.1f} MB")
assert 0.8 < layers_measured / layers_formula < 1.25, "the formula no longer describes minibert's layer caches"
model.backward()

# %% [markdown]
# Put together for the mini at this batch: the fixed $16N$ and the activations. The last layer, by default, runs
# its feed-forward only where the loss reads it (the masked positions, chapter 6), so the default keeps a little less:

# %%
model.sparse_last_layer = True
model(ids, labels=labels)
default_kept = nbytes((model.bert._cache, model._cache))
model.backward()
states = 16 * counts["mini"]
print(f"parameters + gradients + AdamW moments: {states / 1e6:.1f} MB (16 x {counts['mini']:,})")
print(f"activations kept by one forward (default, sparse last layer): {default_kept / 1e6:.1f} MB")
print(f"by formula, one training step holds at least {(states + default_kept) / 1e6:.0f} MB")

# %% [markdown]
# ## 3. Peak memory, measured
#
# Formulas miss the temporaries: the backward allocates gradients of activations, the softmax and GELU make
# intermediate arrays. Python's `tracemalloc` sees every array NumPy allocates, so its **peak** over a whole step
# (forward, backward, AdamW) counts them too. The process's resident memory (`peak_rss_mb`, as `minibert pretrain`
# reports it) adds the interpreter, NumPy, BLAS and everything this notebook imported.

# %%
def traced_step(model, opt, ids, labels):
    """Bytes allocated by NumPy and Python at the peak of one training step, above what was held before it."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    model.zero_grad()
    model(ids, labels=labels)
    model.backward()
    opt.step()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - before


opt = AdamW(model.params, model.grads, lr=1e-4)
opt.step()  # AdamW makes its moments at its first step: make them before measuring
step_peak = traced_step(model, opt, ids, labels)
held = model.params.buffer.nbytes + model.grads.buffer.nbytes + nbytes((opt.m, opt.v))
print(f"held between steps: parameters, gradients, moments   {held / 1e6:6.1f} MB")
print(f"allocated at the peak of a step (tracemalloc)         {step_peak / 1e6:6.1f} MB")
print(f"together: what training the mini needs               {(held + step_peak) / 1e6:6.1f} MB  (batch {B} x {T})")
print(f"this process's peak resident memory so far            {peak_rss_mb():6.0f} MB")
print(f'claim "about 50 MB to train the mini": measured {(held + step_peak) / 1e6:.0f} MB, '
      f"{(held + step_peak) / 50e6:.1f}x the claim")

# %% [markdown]
# The claim counts the model's states (close to 50 MB) and forgets the activations, which at this batch are as
# large again, and the backward's temporaries on top.
#
# ## 4. Time per step against model size
#
# A matmul of an $(n, k)$ by a $(k, m)$ matrix costs $2nkm$ floating-point operations (FLOPs). Every weight matrix is
# used once per token in the forward, so the forward costs about $2 N_\text{matmul}$ FLOPs per token, plus the
# attention's $QK^\top$ and $PV$: $4T H$ per token and layer. The backward computes two matmuls for each of the
# forward's (the gradient of the input and of the weight): about **twice the forward**.
#
# We time minibert's forward and backward on models of growing width (the mini's shape: 3 layers, heads of 64
# dimensions or fewer, $F = 4H$, a vocabulary of 2,048 so that small widths stay small), and a float32 matmul in the
# same cell, the most this CPU does per second.

# %%
def size_config(H, vocab=2048):
    return BertConfig.preset("mini", hidden_size=H, num_attention_heads=max(1, H // 64), intermediate_size=4 * H,
                             vocab_size=vocab)


def forward_flops(cfg, B, T):
    """Matmul FLOPs of BertForPreTraining's forward with every position predicted (upper bound)."""
    H, F, L, V = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    per_token = L * (2 * (4 * H * H + 2 * H * F) + 4 * T * H) + 2 * (H * H + H * V)
    return B * T * per_token


def time_step(model, ids, labels, repeats):
    """The fastest forward and backward, in seconds, of `repeats` steps after a warm-up step (the fastest: other
    programs on the machine only ever slow a step down)."""
    fwd, bwd = [], []
    for i in range(repeats + 1):
        model.zero_grad()
        t0 = time.perf_counter()
        model(ids, labels=labels)
        t1 = time.perf_counter()
        model.backward()
        t2 = time.perf_counter()
        if i:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return min(fwd), min(bwd)


def matmul_flops_per_second(n=512, repeats=20):
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)  # (n, n) each
    best = float("inf")
    for _ in range(repeats + 1):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best


widths = quick([16, 32, 64, 128, 192, 256, 384], [16, 64, 128])  # multiples of 64 above 64
Bt, Tt = quick((16, 64), (4, 32))
repeats = quick(7, 1)
rows, peak = [], matmul_flops_per_second()
for H in widths:
    cfg = size_config(H)
    m = BertForPreTraining(cfg, seed=0)
    x = rng.integers(5, cfg.vocab_size, (Bt, Tt))  # (B, T)
    y = np.where(rng.random((Bt, Tt)) < 0.15, x, -100)  # (B, T)
    f, b = time_step(m, x, y, repeats)
    rows.append((H, m.num_parameters(), f, b, forward_flops(cfg, Bt, Tt)))
peak = max(peak, matmul_flops_per_second())  # the fastest of before and after: load only slows it
print(f"batch {Bt} x {Tt}; a 512 x 512 float32 matmul runs at {peak / 1e9:.1f} GFLOP/s on this CPU now")
print(f"{'H':>4} {'parameters':>11} {'forward ms':>11} {'backward ms':>12} {'bwd/fwd':>8} {'fwd GFLOP/s':>12}")
for H, n, f, b, fl in rows:
    print(f"{H:>4} {n:>11,} {f * 1e3:>11.1f} {b * 1e3:>12.1f} {b / f:>8.2f} {fl / f / 1e9:>12.2f}")

# %%
n_params = [r[1] for r in rows]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
fig.suptitle(stamp(CHAPTER), fontsize=8)
ax1.loglog(n_params, [r[2] * 1e3 for r in rows], "o-", label="forward")
ax1.loglog(n_params, [r[3] * 1e3 for r in rows], "s-", label="backward")
ax1.set(xlabel="parameters", ylabel="ms per step", title=f"minibert on this CPU, batch {Bt} x {Tt}")
ax1.legend()
ax2.loglog(n_params, [r[4] / r[2] / 1e9 for r in rows], "o-", label="forward, achieved")
ax2.axhline(peak / 1e9, color="grey", ls="--", label="512 x 512 matmul")
ax2.set(xlabel="parameters", ylabel="GFLOP/s", title="how much of the CPU a step uses")
ax2.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# What to look for (on a quiet machine; on a busy one the printed times jump about, and the stamp above the plot
# gives the load): large models cost time in proportion to their size, and the backward about twice the forward
# (the `bwd/fwd` column). Small models sit on a **floor**: the step's hundreds of NumPy calls each cost
# microseconds of Python whatever the arrays' size, so the FLOP/s a step achieves (right) stay far below the
# matmul's.
#
# Now the tutorial's claim at its own batch (16 x 64, the mini):

# %%
f_mini, b_mini = time_step(model, ids, labels, quick(7, 1))
print(f"mini, batch {B} x {T}: forward {f_mini * 1e3:.0f} ms, backward {b_mini * 1e3:.0f} ms "
      f"(backward / forward {b_mini / f_mini:.2f})")
print(f'claim "forward about 20 ms, backward about 40 ms": measured {f_mini / 0.020:.1f}x and {b_mini / 0.040:.1f}x '
      f"the claim on this machine now")
print(f"at {peak / 1e9:.1f} GFLOP/s the forward's {forward_flops(mini, B, T) / 1e9:.2f} GFLOP (every position "
      f"predicted) would take {forward_flops(mini, B, T) / peak * 1e3:.0f} ms")

# %% [markdown]
# The ratio of backward to forward holds on any machine; the milliseconds do not. The last line says what the
# claim needs: a CPU with enough FLOP/s to run the mini's matmuls in 20 ms, and nothing else running on it.
#
# ### Does a GPU pay?
#
# A GPU runs a large matmul tens of times faster than a CPU, but every operation it runs costs a launch of about
# 5-10 µs however small the arrays are, and the data must be on it. So a GPU pays once a step's operations are
# large enough that their arithmetic, not their count, sets the time.
#
# First the CPU side, from the step times of section 4: fit $t = a + bN$, a fixed cost $a$ per step (the count of
# operations) and a cost $b$ per parameter (the arithmetic). Below $N^* = a/b$ parameters the fixed cost dominates,
# and a GPU, whose launches cost as much as NumPy's calls or more, cannot shrink it.

# %%
n_fit = np.array([r[1] for r in rows], dtype=float)  # parameters
t_fit = np.array([r[2] + r[3] for r in rows])  # seconds per step, forward + backward
slope, fixed = np.polyfit(n_fit, t_fit, 1)
if slope > 0 and fixed > 0:
    print(f"batch {Bt} x {Tt}: a step costs {fixed * 1e3:.1f} ms whatever the size, plus {slope * 1e9:.2f} ms per "
          f"million parameters; the two are equal at N* = {fixed / slope:,.0f} parameters")
    print(f'claim "a GPU only pays above about 100k parameters": on this CPU now, N* is {fixed / slope / 1e5:.1f}x '
          f"100k (the larger the batch, the smaller N*)")
else:
    print(f"the step times do not fit a + bN (a = {fixed * 1e3:.1f} ms, b = {slope * 1e9:.2f} ms per million): the "
          f"machine was too busy; run the chapter again when it is quieter")

# %% [markdown]
# Then the GPU side. The cell below times one encoder layer's forward written for any NumPy-like module `xp`
# (NumPy here, CuPy on a GPU) at growing widths. minibert itself runs on NumPy only; the layer here is the chapter's
# own stand-in, with the same matmuls.

# %%
def layer_forward(xp, x, W):
    # x (B, T, H); W: the layer's weights. Attention, output projection, feed-forward (tanh GELU), no LayerNorm.
    B, T, H = x.shape
    A = W["A"]
    q, k, v = (xp.matmul(x, W[n]).reshape(B, T, A, H // A).transpose(0, 2, 1, 3) for n in "qkv")  # (B, A, T, D)
    s = q @ k.transpose(0, 1, 3, 2) / (H // A) ** 0.5  # (B, A, T, T)
    p = xp.exp(s - s.max(-1, keepdims=True))  # (B, A, T, T)
    p /= p.sum(-1, keepdims=True)
    h = x + (p @ v).transpose(0, 2, 1, 3).reshape(B, T, H) @ W["o"]  # (B, T, H)
    f = h @ W["1"]  # (B, T, F)
    f = 0.5 * f * (1 + xp.tanh(0.7978845608 * (f + 0.044715 * f ** 3)))  # (B, T, F)
    return h + f @ W["2"]  # (B, T, H)


def time_layer(xp, H, B, T, repeats, sync=lambda: None):
    g = np.random.default_rng(0)
    W = {n: xp.asarray(g.standard_normal(s).astype(np.float32) * 0.02)
         for n, s in (("q", (H, H)), ("k", (H, H)), ("v", (H, H)), ("o", (H, H)), ("1", (H, 4 * H)), ("2", (4 * H, H)))}
    W["A"] = max(1, H // 64)  # heads of 64 dimensions
    x = xp.asarray(g.standard_normal((B, T, H)).astype(np.float32))  # (B, T, H)
    best = float("inf")
    for _ in range(repeats + 1):  # the first is a warm-up (on a GPU: kernels compiled, memory pooled)
        sync()
        t = time.perf_counter()
        layer_forward(xp, x, W)
        sync()
        best = min(best, time.perf_counter() - t)
    return best, 12 * H * H  # the fastest forward in seconds, the layer's weights


layer_widths = quick([32, 64, 128, 256, 512, 768], [32, 128, 256])
Bl, Tl = quick((B, T), (4, 32))
cpu = [time_layer(np, H, Bl, Tl, quick(10, 2)) for H in layer_widths]
for H, (s, n) in zip(layer_widths, cpu):
    print(f"CPU, one layer H={H:>4} ({n:>9,} weights), batch {Bl} x {Tl}: {s * 1e3:7.2f} ms")

try:
    import cupy as cp
    gpu_ok = cp.cuda.runtime.getDeviceCount() > 0
except (ImportError, RuntimeError):  # not installed, or no device or driver (CUDARuntimeError)
    cp, gpu_ok = None, False
if gpu_ok:
    gpu = [time_layer(cp, H, Bl, Tl, quick(10, 2), sync=cp.cuda.Device().synchronize) for H in layer_widths]
    for H, (s, n), (sc, _) in zip(layer_widths, gpu, cpu):
        print(f"GPU, one layer H={H:>4} ({n:>9,} weights): {s * 1e3:7.2f} ms, {sc / s:6.1f}x the CPU")
    plt.loglog([n for _, n in cpu], [s * 1e3 for s, _ in cpu], "o-", label="CPU (NumPy)")
    plt.loglog([n for _, n in gpu], [s * 1e3 for s, _ in gpu], "s-", label="GPU (CuPy)")
    plt.xlabel("weights of one layer")
    plt.ylabel("ms per forward")
    plt.title(f"one encoder layer, batch {Bl} x {Tl}\n{stamp(CHAPTER)}", fontsize=8)
    plt.legend()
    plt.show()
else:
    print("No CuPy with a GPU here, so only the CPU side is measured. On a machine with an NVIDIA GPU: "
          "pip install cupy-cuda12x (or the wheel for your CUDA), then run this cell again: it times the same "
          "layer with CuPy and draws both. The GPU pays where its line falls below the CPU's.")

# %% [markdown]
# ## 5. Activation recompute, rebuilt
#
# The activations grow with the batch and the depth; parameters do not. **Recompute** (also called gradient
# checkpointing) trades time for that memory: the forward keeps only each layer's **input** and drops the rest;
# the backward, layer by layer from the top, runs the layer's forward again from its input and then its backward.
# Memory for activations falls from $L$ layers' caches to $L$ inputs plus one layer's cache; the step costs one
# more forward.
#
# We rebuild it on a stack of layers $y = \tanh(xW + b)$, small enough to read in full.

# %%
def stack_forward(x, Ws, bs, keep="all"):
    # x (N, H); keep="all": every layer's (input, output) for the backward; keep="inputs": the inputs only
    caches = []
    for W, b in zip(Ws, bs):
        y = np.tanh(x @ W + b)  # (N, H)
        caches.append((x, y) if keep == "all" else x)
        x = y
    return x, caches


def layer_backward(dy, x, y, W):
    dz = dy * (1 - y * y)  # (N, H) tanh' = 1 - tanh^2
    return dz @ W.T, x.T @ dz, dz.sum(0)  # dx (N, H), dW (H, H), db (H,)


def stack_backward(dout, caches, Ws, bs):
    dWs, dbs = [None] * len(Ws), [None] * len(Ws)
    for i in reversed(range(len(Ws))):
        c = caches[i]
        x, y = c if isinstance(c, tuple) else (c, np.tanh(c @ Ws[i] + bs[i]))  # recompute: the forward again
        dout, dWs[i], dbs[i] = layer_backward(dout, x, y, Ws[i])
    return dout, dWs, dbs


g = np.random.default_rng(1)
L_s, N_s, H_s = 6, 5, 4
Ws = [g.standard_normal((H_s, H_s)) * 0.5 for _ in range(L_s)]  # L x (H, H), float64
bs = [g.standard_normal(H_s) * 0.1 for _ in range(L_s)]  # L x (H,)
x0 = g.standard_normal((N_s, H_s))  # (N, H)
target = g.standard_normal((N_s, H_s))  # (N, H): loss = sum(out * target)
out_all, c_all = stack_forward(x0, Ws, bs, keep="all")
out_inp, c_inp = stack_forward(x0, Ws, bs, keep="inputs")
dx_all, dW_all, _ = stack_backward(target, c_all, Ws, bs)
dx_inp, dW_inp, _ = stack_backward(target, c_inp, Ws, bs)
check("recompute: dx equals the kept-cache backward's", dx_inp, dx_all, rtol=0, atol=0)
check("recompute: dW of layer 0 equals the kept-cache one", dW_inp[0], dW_all[0], rtol=0, atol=0)
loss = lambda: float((stack_forward(x0, Ws, bs)[0] * target).sum())
check("dW of layer 2 by finite differences", dW_inp[2], numerical_gradient(loss, Ws[2]), rtol=1e-6, atol=1e-8)
check("dx by finite differences", dx_inp, numerical_gradient(loss, x0), rtol=1e-6, atol=1e-8)
print(f"kept for the backward: {nbytes(c_all)} bytes with every cache, {nbytes(c_inp)} with inputs only")

# %% [markdown]
# Recompute gives the same numbers because the second forward computes exactly what the first did. (With dropout
# this needs care: minibert saves where the random stream stood when each layer began and replays it, so the
# masks match: `models/bert.py`, `_recompute_layer`.) Now minibert's own: `model.set_recompute(True)`.

# %%
def measure(model, recompute, x, y, repeats):
    model.set_recompute(recompute)
    model.zero_grad()
    model(x, labels=y)
    kept = nbytes((model.bert._cache, model._cache))
    model.backward()
    grads = model.grads.buffer.copy()
    peak_bytes = traced_step(model, opt, x, y)
    f, b = time_step(model, x, y, repeats)
    return kept, peak_bytes, f, b, grads


deep = BertConfig.preset("mini", num_hidden_layers=quick(6, 3))  # deeper than the mini, where recompute matters more
model = BertForPreTraining(deep, seed=0)
model.eval()  # no dropout, so two models' gradients compare bit for bit below; recompute replays dropout too
opt = AdamW(model.params, model.grads, lr=0.0)  # lr 0: the steps measured leave the weights as they are
opt.step()
Br, Tr = quick((B, T), (4, T))
x_r, y_r = ids[:Br, :Tr], labels[:Br, :Tr]  # (B, T) each
results = {rc: measure(model, rc, x_r, y_r, quick(5, 1)) for rc in (False, True)}
check("minibert: gradients with and without recompute", results[True][4], results[False][4], rtol=0, atol=0)
print(f"{deep.num_hidden_layers} layers, batch {Br} x {Tr}: {'':12} kept by forward   step peak   forward   backward")
for rc, (kept, pk, f, b, _) in results.items():
    print(f"{'recompute' if rc else 'plain':>40}   {kept / 1e6:8.1f} MB {pk / 1e6:8.1f} MB "
          f"{f * 1e3:6.0f} ms {b * 1e3:7.0f} ms")
(k0, p0, f0, b0, _), (k1, p1, f1, b1, _) = results[False], results[True]
print(f"recompute keeps {k0 / k1:.1f}x less after the forward, peaks {p0 / p1:.2f}x lower, and the step takes "
      f"{(f1 + b1) / (f0 + b0):.2f}x the time")

# %%
fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
names = ["plain", "recompute"]
for ax, values, title in zip(axes, ([k0 / 1e6, k1 / 1e6], [p0 / 1e6, p1 / 1e6], [(f0 + b0) * 1e3, (f1 + b1) * 1e3]),
                             ("MB kept by the forward", "MB at the step's peak", "ms per step")):
    ax.bar(names, values, color=["tab:blue", "tab:orange"])
    ax.set_title(title)
fig.suptitle(f"activation recompute, {deep.num_hidden_layers}-layer mini, batch {Br} x {Tr}\n{stamp(CHAPTER)}", fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# The forward keeps far less; the step's peak falls less, because the peak also holds the states ($16N$) and the
# backward's temporaries of one layer. The time should go up by about one more forward of the layers: read the
# printed ratio against the forward and backward columns (a busy machine, as the stamp's load shows, blurs it).
#
# ## Summary
#
# - Parameters: $(V+P+S)H + L(4H^2 + 2HF + \dots)$; the vocabulary dominates small models.
# - Memory of a step: $16N$ bytes of states, plus activations that grow with $B \cdot T \cdot L$ (and $T^2$ in
#   attention); `tracemalloc` adds the backward's temporaries.
# - Time: the backward costs about twice the forward; small models sit on a floor of per-call overhead, far from
#   the matmul's FLOP/s. That floor is also why a GPU, with its launch cost per operation, pays only for large enough
#   operations.
# - Recompute keeps layer inputs only and runs each layer's forward again in the backward: same gradients, less
#   memory, one more forward of time.
#
# ## Exercises

# %% [markdown]
# **1.** Write `training_state_bytes(cfg)`: the bytes a float32 `BertForPreTraining(cfg)` holds between steps in
# parameters, gradients and AdamW's two moments.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def training_state_bytes(cfg):
    raise NotImplementedError


def test_training_state_bytes(f):
    for cfg in (BertConfig.preset("tiny"), BertConfig.preset("mini", vocab_size=1000)):
        m = BertForPreTraining(cfg)
        o = AdamW(m.params, m.grads)
        o.step()
        expect(f"training_state_bytes({cfg.hidden_size}-wide, V = {cfg.vocab_size})", f(cfg),
               m.params.buffer.nbytes + m.grads.buffer.nbytes + nbytes((o.m, o.v)))


exercise(1, training_state_bytes, "08_cost", test_training_state_bytes)

# %% [markdown]
# **2.** Recompute need not keep every layer's input. Keep the input of every $k$-th layer only: the backward runs a
# segment of $k$ layers forward again, keeping that segment's caches. Activations then peak at about
# $\lceil L/k \rceil s + k c$ for inputs of $s$ bytes and layer caches of $c$ bytes. Write `best_segment(L, c, s)`:
# the $k$ in $1..L$ that makes this smallest (the smallest such $k$ on a tie). For $c = s$ it is near $\sqrt{L}$.

# %%
def best_segment(L, c, s):
    raise NotImplementedError


def test_best_segment(f):
    for L, c, s in ((16, 1, 1), (12, 8, 1), (1, 5, 3), (30, 2, 7)):
        costs = [-(-L // k) * s + k * c for k in range(1, L + 1)]
        expect(f"best_segment{(L, c, s)}", f(L, c, s), 1 + int(np.argmin(costs)))


exercise(2, best_segment, "08_cost", test_best_segment)

# %% [markdown]
# **3.** Write `recompute_backward(dout, inputs, Ws, bs)` for the tanh stack of section 5 without the `isinstance`
# trick: `inputs` is the list of each layer's input (what `keep="inputs"` keeps); return `(dx, dWs, dbs)`.

# %%
def recompute_backward(dout, inputs, Ws, bs):
    raise NotImplementedError


def test_recompute_backward(f):
    _, inputs = stack_forward(x0, Ws, bs, keep="inputs")
    dx, dWs, dbs = f(target, inputs, Ws, bs)
    ref_dx, ref_dWs, ref_dbs = stack_backward(target, c_all, Ws, bs)
    expect("dx", dx, ref_dx, rtol=1e-12)
    for i, (a, b_) in enumerate(zip(dWs, ref_dWs)):
        expect(f"dW of layer {i}", a, b_, rtol=1e-12)
    for i, (a, b_) in enumerate(zip(dbs, ref_dbs)):
        expect(f"db of layer {i}", a, b_, rtol=1e-12)


exercise(3, recompute_backward, "08_cost", test_recompute_backward)
