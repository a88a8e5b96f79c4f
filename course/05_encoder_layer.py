# %% [markdown]
# # 5. The encoder layer
#
# BERT is a stack of identical encoder layers. Each one is attention (chapter 4) followed by a small two-layer
# network applied to every token on its own, the **feed-forward block**, with a **residual** connection and a
# **LayerNorm** around each of the two. In this chapter you will build:
#
# - GELU, BERT's activation, next to ReLU: the functions, their derivatives, and how far the common tanh
#   approximation is from the exact one;
# - the feed-forward block $H \to 4H \to H$;
# - residual + LayerNorm in BERT's order (post-LN) and the other order (pre-LN), and what each does to the
#   scale of the activations in a deep stack;
# - the whole layer, forward and backward in plain NumPy, the backward in exact reverse order, checked against
#   minibert's layer (`minibert/layers/encoder_layer.py`), finite differences and `transformers`' `BertLayer`.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from minibert.course import QUICK, check, exercise, numerical_gradient, quick, torch_or_none
from minibert import BertConfig
from minibert.config import PRESETS
from minibert.layers.activations import (gelu_forward, gelu_tanh_backward, gelu_tanh_forward, relu_backward,
                                         relu_forward)
from minibert.layers.gelu_select import use_numba_gelu
from minibert.layers.attention import self_attention_backward, self_attention_forward
from minibert.layers.encoder_layer import encoder_layer_backward, encoder_layer_forward

print("quick mode" if QUICK else "full mode")

# %% [markdown]
# ## GELU against ReLU
#
# ReLU, $\max(0, x)$, lets a positive input through and stops a negative one, with a hard corner at 0 and a
# derivative that jumps from 0 to 1. GELU weighs its input by the probability that a standard normal variable
# is below it:
#
# $$\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\big(1 + \mathrm{erf}(x/\sqrt2)\big),\qquad
#   \mathrm{GELU}'(x) = \Phi(x) + x\,\varphi(x),\quad \varphi(x) = e^{-x^2/2}/\sqrt{2\pi}.$$
#
# It is smooth everywhere and lets small negative inputs through a little. Its derivative is $\tfrac12$ at 0
# (half of a small input gets through), rises past 1 and peaks where $\mathrm{GELU}''(x) = \varphi(x)(2 - x^2)$
# is 0, at $x = \sqrt2$, with $\mathrm{GELU}'(\sqrt2) \approx 1.129$, then settles back to 1 for large $x$. Because erf was slow on early GPUs, GPT-2 and others use the tanh approximation
# $\tfrac{x}{2}\big(1 + \tanh(\sqrt{2/\pi}\,(x + 0.044715\,x^3))\big)$ (`gelu_new`); BERT uses the exact one.

# %%
erf = np.vectorize(math.erf, otypes=[np.float64])  # NumPy has no erf; Python's math module has


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))  # x Phi(x)


def gelu_derivative(x):
    return 0.5 * (1.0 + erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


xs = np.linspace(-4, 4, 801)  # (N,)
gelu_tanh, tanh_cache = gelu_tanh_forward(xs)  # minibert's tanh approximation
relu, relu_cache = relu_forward(xs)
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
axes[0].plot(xs, relu, label="ReLU")
axes[0].plot(xs, gelu(xs), label="GELU (exact, erf)")
axes[0].plot(xs, gelu_tanh, "--", label="GELU (tanh approximation)")
axes[0].set_title("the activations")
axes[1].plot(xs, relu_backward(np.ones_like(xs), relu_cache), label="ReLU'")
axes[1].plot(xs, gelu_derivative(xs), label="GELU' (exact)")
axes[1].plot(xs, gelu_tanh_backward(np.ones_like(xs), tanh_cache), "--", label="GELU' (tanh approximation)")
axes[1].set_title("their derivatives")
for ax in axes:
    ax.axhline(0, color="grey", lw=0.5)
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_xlabel("x")
    ax.legend()
fig.tight_layout()
plt.show()

wide = np.linspace(-8, 8, 16001)  # (N,)
gap = np.abs(gelu(wide) - gelu_tanh_forward(wide)[0])  # (N,)
print(f"exact GELU - tanh approximation: largest {gap.max():.2e} at x = {wide[gap.argmax()]:+.2f}")
print(f"smallest GELU value: {gelu(xs).min():.4f} at x = {xs[gelu(xs).argmin()]:+.2f}; "
      f"largest GELU' {gelu_derivative(xs).max():.4f} at x = {xs[gelu_derivative(xs).argmax()]:+.2f}")

# %% [markdown]
# **minibert's GELU is the exact one, computed with a polynomial.** NumPy has no erf, and calling Python's
# `math.erf` once per number (as above) is far too slow for a model. So in float32 minibert evaluates erf with
# Abramowitz and Stegun's formula 7.1.26, a degree-5 polynomial times an exponential whose error is below
# $1.5\times10^{-7}$. In float64 (used for gradient checks) it calls an erf that is exact to double precision.
# So we check float64 to 1e-12, and float32 only to what float32 can hold: below, its largest difference from
# the exact GELU is about the spacing of float32 numbers at that value, i.e. a rounding. (With
# numba installed, minibert compiles the same formula into one loop; `use_numba_gelu(False)` keeps the NumPy
# version shown in `minibert/layers/activations.py`, and saves the seconds the compiler takes.)

# %%
use_numba_gelu(False)
check("GELU float64: minibert vs math.erf", gelu_forward(wide)[0], gelu(wide), rtol=1e-12, atol=1e-12)
check("GELU float32: minibert vs math.erf", gelu_forward(wide.astype(np.float32))[0], gelu(wide),
      rtol=1e-6, atol=1e-6)
for dtype in (np.float32, np.float64):
    diff = np.abs(gelu_forward(wide.astype(dtype))[0] - gelu(wide))  # (N,)
    worst = gelu(wide[diff.argmax()])
    print(f"minibert's GELU in {np.dtype(dtype).name}: largest difference from exact erf {diff.max():.2e} "
          f"at x = {wide[diff.argmax()]:+.2f}, where GELU = {worst:.3f} and {np.dtype(dtype).name} numbers are "
          f"{np.spacing(dtype(worst)):.1e} apart")

# %% [markdown]
# ## The feed-forward block
#
# Every token goes through the same two linear maps with GELU between them, widening to $F = 4H$ and back:
#
# $$\mathrm{FFN}(h) = \mathrm{GELU}(h W_1^\top + b_1)\,W_2^\top + b_2,\qquad W_1: (F, H),\ W_2: (H, F).$$
#
# Attention moves information *between* tokens; the feed-forward block transforms each token's vector on its
# own, and holds about two thirds of a layer's weights (printed below for BERT-base).

# %%
def linear(x, w, b):
    return x @ w.T + b  # (..., I) -> (..., O); w is (O, I) as Hugging Face stores it


def linear_backward(dy, x, w):
    dx = dy @ w  # (..., I)
    dw = dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])  # (O, I): summed over every token
    return dx, dw, dy.reshape(-1, dy.shape[-1]).sum(axis=0)  # db (O,)


_, Hb, _, Fb, _, _ = PRESETS["base"]  # BERT-base's H and F (layers, H, heads, F, vocabulary, positions)
ffn_weights, attention_weights = 2 * Hb * Fb + Fb + Hb, 4 * (Hb * Hb + Hb)  # weights and biases
print(f"BERT-base: H = {Hb}, F = {Fb} = {Fb // Hb}H")
print(f"BERT-base layer: feed-forward {ffn_weights:,} weights, attention (q, k, v, output) {attention_weights:,}: "
      f"{ffn_weights / (ffn_weights + attention_weights):.0%} in the feed-forward block")

# %% [markdown]
# ## Residual + LayerNorm, in two orders
#
# A **residual** connection adds a block's input to its output, $x + f(x)$: the gradient reaches lower layers
# through the $+$ directly, however deep the stack. **LayerNorm** rescales each token's vector to mean 0 and
# variance 1, then applies a learnt scale $\gamma$ and shift $\beta$:
#
# $$\hat x = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}},\qquad y = \gamma \odot \hat x + \beta,$$
# $$dx = \frac{1}{\sqrt{\sigma^2+\epsilon}}\Big(g - \overline{g} - \hat x\, \overline{g \odot \hat x}\Big),
#   \qquad g = \gamma \odot dy$$
#
# (the bars are means over the $H$ features of a token). BERT puts LayerNorm **after** each residual sum
# (post-LN); most later models put it **before** each block, on the branch only (pre-LN), so the residual path
# carries $x$ untouched from layer to layer.

# %%
def layernorm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)  # (B, T, 1)
    rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)  # (B, T, 1)
    xhat = (x - mu) * rstd  # (B, T, H)
    return xhat * w + b, (xhat, rstd)  # (B, T, H)


def layernorm_backward(dy, cache, w):
    xhat, rstd = cache
    g = dy * w  # (B, T, H)
    dx = rstd * (g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))  # (B, T, H)
    dw = (dy * xhat).reshape(-1, dy.shape[-1]).sum(axis=0)  # (H,) summed over every token
    return dx, dw, dy.reshape(-1, dy.shape[-1]).sum(axis=0)  # db (H,)


def draw_layer(ax, boxes, skips, title):
    """boxes bottom to top; skips: (from, to) residual arrows around the blocks."""
    for i, name in enumerate(boxes):
        style = dict(boxstyle="circle" if name == "+" else "round", fc="#fde7c8" if "Norm" in name else "#dbe9f6")
        ax.text(0, i, name, ha="center", va="center", bbox=style, fontsize=10)
        if i:
            ax.annotate("", xy=(0, i - 0.3), xytext=(0, i - 0.7), arrowprops=dict(arrowstyle="->"))
    for start, end in skips:
        ax.annotate("", xy=(0.12, end), xytext=(0.5, start + 0.5),
                    arrowprops=dict(arrowstyle="->", color="C3", connectionstyle="angle,angleA=90,angleB=0"))
        ax.plot([0.02, 0.5], [start + 0.5, start + 0.5], color="C3")
    ax.set_xlim(-1, 1)
    ax.set_ylim(-0.7, len(boxes) - 0.3)
    ax.set_title(title)
    ax.axis("off")


fig, axes = plt.subplots(1, 2, figsize=(9, 6))
draw_layer(axes[0], ["x", "Attention", "+", "LayerNorm", "Feed-forward", "+", "LayerNorm", "out"],
           [(0, 2), (3, 5)], "post-LN (BERT)")
draw_layer(axes[1], ["x", "LayerNorm", "Attention", "+", "LayerNorm", "Feed-forward", "+", "out"],
           [(0, 3), (3, 6)], "pre-LN (GPT-2, RoBERTa-PreLN)")
fig.text(0.5, 0.02, "red: the residual path", ha="center", color="C3")
plt.show()

# %% [markdown]
# **What the order does to the activations.** We stack many layers with random weights (each weight drawn with
# standard deviation $1/\sqrt{\text{fan-in}}$, $\gamma = 1$, $\beta = 0$) and run minibert's own layer in both
# orders, recording the standard deviation of the residual stream after each layer. Post-LN normalises the
# stream at every layer, so it stays at 1. Pre-LN adds each block's output to a stream that is never normalised:
# it grows with depth, and each new layer changes it relatively less (right panel). That is why pre-LN models
# add one final LayerNorm after the last layer. In exchange, each block only ever sees a normalised copy of the
# stream, and the gradient has a path through the sums untouched by any LayerNorm: pre-LN models are reported to
# train stably without a learning-rate warm-up (Xiong et al., 2020, "On Layer Normalization in the Transformer
# Architecture").

# %%
def random_layer_params(H, F, rng):
    shapes = {"attention.self.query": (H, H), "attention.self.key": (H, H), "attention.self.value": (H, H),
              "attention.output.dense": (H, H), "intermediate.dense": (F, H), "output.dense": (H, F)}
    params = {}
    for name, (n_out, n_in) in shapes.items():
        params[name + ".weight"] = rng.standard_normal((n_out, n_in)) / math.sqrt(n_in)  # (out, in)
        params[name + ".bias"] = np.zeros(n_out)  # (out,)
    for name in ("attention.output.LayerNorm", "output.LayerNorm", "attention.LayerNorm", "intermediate.LayerNorm"):
        params[name + ".weight"], params[name + ".bias"] = np.ones(H), np.zeros(H)  # (H,)
    return params


depth, Hd = quick(48, 16), 64
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for model_type, label in (("bert", "post-LN"), ("roberta-prelayernorm", "pre-LN")):
    cfg = BertConfig(vocab_size=8, hidden_size=Hd, num_hidden_layers=depth, num_attention_heads=4,
                     intermediate_size=4 * Hd, model_type=model_type, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(0)
    h = rng.standard_normal((2, 16, Hd))  # (B, T, H)
    scale, change = [h.std()], []
    for _ in range(depth):
        out = encoder_layer_forward(h, random_layer_params(Hd, 4 * Hd, rng), "", None, cfg, None, False)[0]  # (B, T, H)
        change.append(np.linalg.norm(out - h) / np.linalg.norm(h))
        scale.append(out.std())
        h = out
    axes[0].plot(scale, label=label)
    axes[1].plot(range(1, depth + 1), change, label=label)
    print(f"{label}: residual stream std after layer {depth}: {scale[-1]:.2f}; "
          f"relative change made by the last layer: {change[-1]:.2f}")
axes[0].set(xlabel="layers", ylabel="std of the residual stream", title="activation scale with depth")
axes[1].set(xlabel="layer", ylabel="|out - in| / |in|", title="how much each layer changes the stream")
for ax in axes:
    ax.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The whole layer, forward and backward
#
# BERT's (post-LN) layer, with dropout left out (it is off at evaluation time; in training its backward
# multiplies the gradient by the same mask and the same $1/(1-p)$ scale as the forward, chapter 4):
#
# $$h = \mathrm{LN}_1\big(x + \mathrm{Attention}(x)\,W_o^\top + b_o\big),\qquad
#   \text{out} = \mathrm{LN}_2\big(h + \mathrm{FFN}(h)\big).$$
#
# Attention is chapter 4's; here we call minibert's `self_attention_forward`/`backward`, which chapter 4 proved
# equal to the plain version. Everything else is the plain NumPy of this chapter. The backward walks the forward
# **in exact reverse order**; at each residual sum the incoming gradient goes to **both** branches, and where
# the branches met again (at $x$ and at $h$) their gradients are added.

# %%
ATTN = "attention.self."


def layer_forward(x, params, additive_mask, num_heads, eps):
    P = params.__getitem__
    ctx, _, c_attn = self_attention_forward(x, params, ATTN, additive_mask, num_heads, 0.0, None, False)  # (B, T, H)
    a = linear(ctx, P("attention.output.dense.weight"), P("attention.output.dense.bias"))  # (B, T, H)
    h, c_ln1 = layernorm(x + a, P("attention.output.LayerNorm.weight"), P("attention.output.LayerNorm.bias"),
                         eps)  # (B, T, H)
    f = linear(h, P("intermediate.dense.weight"), P("intermediate.dense.bias"))  # (B, T, F)
    g = gelu(f)  # (B, T, F)
    y = linear(g, P("output.dense.weight"), P("output.dense.bias"))  # (B, T, H)
    out, c_ln2 = layernorm(h + y, P("output.LayerNorm.weight"), P("output.LayerNorm.bias"), eps)  # (B, T, H)
    return out, (c_attn, ctx, c_ln1, h, f, g, c_ln2)


def layer_backward(dout, cache, params):
    c_attn, ctx, c_ln1, h, f, g, c_ln2 = cache
    P, grads = params.__getitem__, {}
    # out = LN2(h + y)
    ds2, grads["output.LayerNorm.weight"], grads["output.LayerNorm.bias"] = layernorm_backward(
        dout, c_ln2, P("output.LayerNorm.weight"))  # (B, T, H): d(h + y), to both h and y
    # y = g W2^T + b2
    dg, grads["output.dense.weight"], grads["output.dense.bias"] = linear_backward(
        ds2, g, P("output.dense.weight"))  # (B, T, F)
    # g = GELU(f)
    df = dg * gelu_derivative(f)  # (B, T, F)
    # f = h W1^T + b1
    dh, grads["intermediate.dense.weight"], grads["intermediate.dense.bias"] = linear_backward(
        df, h, P("intermediate.dense.weight"))  # (B, T, H)
    dh = dh + ds2  # (B, T, H): the residual branch joins the feed-forward branch
    # h = LN1(x + a)
    ds1, grads["attention.output.LayerNorm.weight"], grads["attention.output.LayerNorm.bias"] = layernorm_backward(
        dh, c_ln1, P("attention.output.LayerNorm.weight"))  # (B, T, H): d(x + a), to both x and a
    # a = ctx Wo^T + bo
    dctx, grads["attention.output.dense.weight"], grads["attention.output.dense.bias"] = linear_backward(
        ds1, ctx, P("attention.output.dense.weight"))  # (B, T, H)
    # ctx = Attention(x): minibert's backward adds its gradients into a dict of zeros
    grads.update({n: np.zeros_like(v) for n, v in params.items() if n.startswith(ATTN)})
    dx = self_attention_backward(dctx, c_attn, grads, ATTN)  # (B, T, H)
    return dx + ds1, grads  # (B, T, H): the residual branch joins the attention branch


# %% [markdown]
# ## The check
#
# A small layer in float64 (B = 2, T = 4, H = 8, two heads, F = 32), the second sequence with one padding token,
# and the loss $L = \sum \text{out} \odot G$ for a fixed random $G$. minibert's `encoder_layer_forward(x, params,
# prefix, additive_mask, config, rng, training)` returns `(out, probs, cache)`; `encoder_layer_backward(dout,
# cache, params, grads, prefix, config)` **adds** into `grads` and returns $dx$.

# %%
B, T, H, A, F = 2, 4, 8, 2, 32
rng = np.random.default_rng(0)
params = {name: value * 0.5 if name.endswith("weight") else value + 0.1 * rng.standard_normal(value.shape)
          for name, value in random_layer_params(H, F, rng).items()  # every bias and LayerNorm not 0 or 1
          if not name.startswith(("attention.LayerNorm", "intermediate.LayerNorm"))}  # post-LN names only
print(f"B = {B}, T = {T}, H = {H}, A = {A}, F = {F}; {sum(v.size for v in params.values())} parameters")
x = rng.standard_normal((B, T, H))  # (B, T, H)
attention_mask = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])  # (B, T): 1 = real token, 0 = padding
additive_mask = (1.0 - attention_mask[:, None, None, :]) * np.finfo(np.float64).min  # (B, 1, 1, T)
G = rng.standard_normal((B, T, H))  # (B, T, H) = dL/dout
config = BertConfig(vocab_size=8, hidden_size=H, num_hidden_layers=1, num_attention_heads=A, intermediate_size=F,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

out, cache = layer_forward(x, params, additive_mask, A, config.layer_norm_eps)
dx, grads = layer_backward(G, cache, params)


def minibert_layer(x, params):
    return encoder_layer_forward(x, params, "", additive_mask, config, None, False)


def loss():
    return float((minibert_layer(x, params)[0] * G).sum())


out_mb, _, cache_mb = minibert_layer(x, params)
grads_mb = {name: np.zeros_like(value) for name, value in params.items()}
dx_mb = encoder_layer_backward(G.copy(), cache_mb, params, grads_mb, "", config)
check("output: ours vs minibert", out, out_mb)
check("dx: ours vs minibert", dx, dx_mb)
check("dx: minibert vs finite differences", dx_mb, numerical_gradient(loss, x))
for name in params:
    check(f"d {name}: ours vs minibert", grads[name], grads_mb[name])
    check(f"d {name}: minibert vs finite diff.", grads_mb[name], numerical_gradient(loss, params[name]))

# %% [markdown]
# **In float32,** minibert's GELU is the polynomial above, and every sum is rounded to 7 digits. So the float32
# layer matches the exact float64 one only to a few units in the 6th digit, not to the 1e-15 of float64: we
# allow 1e-5 (relative) plus 1e-5 (absolute), far above float32's rounding yet far below any real mistake (a
# wrong sign or a missing term changes numbers by their own size).

# %%
p32 = {name: value.astype(np.float32) for name, value in params.items()}
mask32 = np.where(additive_mask < 0, np.finfo(np.float32).min, 0).astype(np.float32)  # (B, 1, 1, T)
out32, _, cache32 = encoder_layer_forward(x.astype(np.float32), p32, "", mask32, config, None, False)
g32 = {name: np.zeros_like(value) for name, value in p32.items()}
dx32 = encoder_layer_backward(G.astype(np.float32), cache32, p32, g32, "", config)
check("float32 output: minibert vs ours (float64)", out32, out, rtol=1e-5, atol=1e-5)
check("float32 dx: minibert vs ours (float64)", dx32, dx, rtol=1e-5, atol=1e-5)
print("largest float32 parameter-gradient difference:",
      f"{max(float(np.abs(g32[n] - grads[n]).max()) for n in params):.2e}")
for name in params:
    np.testing.assert_allclose(g32[name], grads[name], rtol=1e-5, atol=1e-5, err_msg=name)

# %% [markdown]
# **Against `transformers`.** Its `BertLayer` has the same parameter names, so the dict loads unchanged.

# %%
torch = torch_or_none()
if torch is not None:
    import transformers

    hf_config = transformers.BertConfig(hidden_size=H, num_attention_heads=A, intermediate_size=F,
                                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    hf_config._attn_implementation = "eager"
    theirs = transformers.models.bert.modeling_bert.BertLayer(hf_config).double().eval()
    theirs.load_state_dict({name: torch.tensor(value) for name, value in params.items()})
    x_t = torch.tensor(x, requires_grad=True)
    out_t = theirs(x_t, attention_mask=torch.tensor(additive_mask))
    out_t = out_t[0] if isinstance(out_t, tuple) else out_t
    (out_t * torch.tensor(G)).sum().backward()
    check("output: ours vs transformers", out, out_t.detach().numpy())
    check("dx: ours vs transformers", dx, x_t.grad.numpy())
    for name, param in theirs.named_parameters():
        check(f"d {name}: ours vs transformers", grads[name], param.grad.numpy())

# %% [markdown]
# ## Summary
#
# - GELU is $x\Phi(x)$: smooth, slightly negative below 0; the tanh approximation is close but not equal
#   (difference printed above). minibert computes the exact one, with a polynomial erf in float32.
# - The feed-forward block, $H \to 4H \to H$ per token, holds most of a layer's weights.
# - Post-LN (BERT) normalises after each residual sum; pre-LN normalises each block's input and leaves the
#   residual stream alone, which then grows with depth.
# - The layer's backward is its forward read backwards: LayerNorm, linear, GELU, linear, a residual join,
#   LayerNorm, linear, attention, a residual join. It equals minibert's layer, finite differences and
#   `transformers`' `BertLayer`, gradient by gradient.
#
# ## Exercises
#
# **1. The tanh GELU's derivative.** Write `gelu_tanh_derivative(x)`, the derivative of
# $\tfrac{x}{2}\big(1 + \tanh(u)\big)$, $u = \sqrt{2/\pi}\,(x + 0.044715\,x^3)$. The test compares it with
# minibert's `gelu_tanh_backward`.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def gelu_tanh_derivative(x):
    raise NotImplementedError


def test_gelu_tanh_derivative(gelu_tanh_derivative):
    x = np.linspace(-5, 5, 101)  # (N,)
    reference = gelu_tanh_backward(np.ones_like(x), gelu_tanh_forward(x)[1])
    expect("gelu_tanh_derivative on [-5, 5] against gelu_tanh_backward", gelu_tanh_derivative(x), reference,
           rtol=1e-10, atol=1e-12)


exercise(1, gelu_tanh_derivative, "05_encoder_layer", test_gelu_tanh_derivative)


# %% [markdown]
# **2. RMSNorm's backward.** LLaMA and T5 replace LayerNorm with RMSNorm, which skips the mean:
# $y = \gamma \odot x / \sqrt{\overline{x^2} + \epsilon}$. Write `rmsnorm_backward(dy, x, w, eps)` returning
# $dx$. (Follow chapter 3's derivation of LayerNorm's backward with $\mu = 0$: one path fewer; the test uses
# finite differences.)

# %%
def rmsnorm_backward(dy, x, w, eps):
    raise NotImplementedError


def test_rmsnorm_backward(rmsnorm_backward):
    r = np.random.default_rng(5)
    x, w, dy = r.standard_normal((3, 6)), r.standard_normal(6), r.standard_normal((3, 6))  # (N, H), (H,), (N, H)

    def loss():
        return float((w * x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * dy).sum())
    expect("rmsnorm_backward against finite differences", rmsnorm_backward(dy, x, w, 1e-6),
           numerical_gradient(loss, x), atol=1e-7)


exercise(2, rmsnorm_backward, "05_encoder_layer", test_rmsnorm_backward)


# %% [markdown]
# **3. A ReLU feed-forward block, backwards.** The original Transformer used ReLU. Write
# `relu_ffn_backward(dy, h, w1, b1, w2)` for $y = \max(0, h W_1^\top + b_1) W_2^\top + b_2$, returning
# `(dh, dw1, db1, dw2)`. The test compares with minibert's `linear` and `relu` layers.

# %%
def relu_ffn_backward(dy, h, w1, b1, w2):
    raise NotImplementedError


def test_relu_ffn_backward(relu_ffn_backward):
    from minibert.layers.linear import linear_backward as lb, linear_forward as lf
    r = np.random.default_rng(6)
    h, dy = r.standard_normal((2, 3, 4)), r.standard_normal((2, 3, 4))  # (B, T, H)
    w1, b1, w2, b2 = r.standard_normal((16, 4)), r.standard_normal(16), r.standard_normal((4, 16)), np.zeros(4)
    f, c1 = lf(h, w1, b1)  # (B, T, F)
    g, c_relu = relu_forward(f)  # (B, T, F)
    _, c2 = lf(g, w2, b2)  # (B, T, H)
    dw1, db1, dw2, db2 = np.zeros_like(w1), np.zeros_like(b1), np.zeros_like(w2), np.zeros_like(b2)
    dh = lb(relu_backward(lb(dy, c2, w2, dw2, db2), c_relu), c1, w1, dw1, db1)
    got = relu_ffn_backward(dy, h, w1, b1, w2)
    expect("relu_ffn_backward returns 4 arrays", len(got), 4)
    for name, mine, ref in zip(("dh", "dw1", "db1", "dw2"), got, (dh, dw1, db1, dw2)):
        expect(f"{name} against minibert's linear and relu layers", mine, ref, rtol=1e-10, atol=1e-12)


exercise(3, relu_ffn_backward, "05_encoder_layer", test_relu_ffn_backward)
