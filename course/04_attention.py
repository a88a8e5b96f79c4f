# %% [markdown]
# # 4. Attention
#
# Attention is the one place in BERT where tokens look at each other. Everything else (embeddings, the
# feed-forward block, LayerNorm) works on each token alone. In this chapter you will build multi-head
# self-attention in plain NumPy, forward **and** backward, and prove it equal to minibert's layer
# (`minibert/layers/attention.py`), to finite differences and to `transformers`. Then you will look at the
# attention maps of a real trained model, all-MiniLM-L6-v2.
#
# You will build:
# - queries, keys and values, and the split into heads (with the shapes printed at every step);
# - scaled dot products, the softmax and the padding mask;
# - the backward pass, derived one step at a time, including the softmax's
#   $dS = P \odot (dP - \textstyle\sum (dP \odot P))$ and dropout's.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from minibert.course import QUICK, check, exercise, numerical_gradient, torch_or_none
from minibert.layers.attention import self_attention_backward, self_attention_forward, softmax_backward, softmax_forward

print("quick mode" if QUICK else "full mode")

# %% [markdown]
# ## The intuition
#
# Each token asks a question, the **query** $q$: "which other tokens matter to me?". Each token also carries a
# label, the **key** $k$, that says what it offers, and a payload, the **value** $v$. The query of token $i$ is
# compared with the key of every token $j$ by a dot product; the softmax turns those scores into weights that
# sum to 1, and token $i$'s output is the weighted mean of the values. Queries, keys and values are three
# linear maps of the same input: the model learns what to ask, what to advertise and what to hand over.
#
# One set of weights can only ask one kind of question. **Multi-head** attention cuts the $H$ features into $A$
# heads of $D = H / A$ features each; every head does its own attention on its own slice, and the heads'
# outputs are laid side by side again.
#
# ## The maths
#
# For one head, with $X$ the $(T, H)$ input of one sequence ($W_q$, $W_k$, $W_v$ being that head's $D$ rows of
# the full $(H, H)$ matrices, so $Q, K, V$ are $(T, D)$):
#
# $$Q = X W_q^\top + b_q,\quad K = X W_k^\top + b_k,\quad V = X W_v^\top + b_v$$
# $$S = \frac{Q K^\top}{\sqrt{D}} + M,\qquad P = \mathrm{softmax}_\text{rows}(S),\qquad C = P V$$
#
# $M$ is the additive padding mask: 0 for a real key, a huge negative number for a padded one, so that its
# $e^{S}$ is 0. Dividing by $\sqrt{D}$ keeps the scores' spread near 1 whatever the head size (a dot product of
# $D$ unit-variance numbers has variance $D$), so the softmax does not saturate at the start of training.
#
# In training BERT also applies **dropout** to $P$: each probability is zeroed with probability $p$ (0.1 in
# BERT) and the survivors are multiplied by $1/(1-p)$ ("inverted" dropout: the expected value stays $P$, so
# nothing needs rescaling at evaluation time, when dropout is off). With $K$ the 0/1 mask,
# $\tilde P = P \odot K / (1-p)$ and $C = \tilde P V$. Our functions take the mask as an argument (`keep`), so
# that the checks can give ours and minibert's the same one; without it they are the plain version.
#
# ## The code: forward
#
# The parameters use Hugging Face's names, exactly as minibert's layer reads them. A small example: batch
# $B = 2$, $T = 5$ tokens, $H = 8$ features, $A = 2$ heads of $D = 4$. The second sequence has two padding tokens.

# %%
B, T, H, A = 2, 5, 8, 2
D = H // A
PREFIX = "attention.self."
rng = np.random.default_rng(0)
params = {PREFIX + f"{n}.{p}": rng.standard_normal((H, H) if p == "weight" else H) * 0.5
          for n in ("query", "key", "value") for p in ("weight", "bias")}  # float64
x = rng.standard_normal((B, T, H))  # (B, T, H)
attention_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])  # (B, T): 1 = real token, 0 = padding
additive_mask = (1.0 - attention_mask[:, None, None, :]) * np.finfo(np.float64).min  # (B, 1, 1, T)
print(f"B = {B}, T = {T}, H = {H}, A = {A}, D = {D}")
print({k: v.shape for k, v in params.items()})


# %%
def split_heads(t):
    B, T, H = t.shape
    return t.reshape(B, T, A, H // A).transpose(0, 2, 1, 3)  # (B, T, H) -> (B, T, A, D) -> (B, A, T, D)


def join_heads(t):
    B, A, T, D = t.shape
    return t.transpose(0, 2, 1, 3).reshape(B, T, A * D)  # (B, A, T, D) -> (B, T, A, D) -> (B, T, H)


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))  # shift by the row's max: exp never overflows
    return e / e.sum(axis=-1, keepdims=True)


def attention_forward(x, params, additive_mask, keep=None, p_drop=0.0):
    W = lambda n: params[PREFIX + n + ".weight"]  # noqa: E731
    b = lambda n: params[PREFIX + n + ".bias"]  # noqa: E731
    q = split_heads(x @ W("query").T + b("query"))  # (B, A, T, D)
    k = split_heads(x @ W("key").T + b("key"))  # (B, A, T, D)
    v = split_heads(x @ W("value").T + b("value"))  # (B, A, T, D)
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = q @ k.transpose(0, 1, 3, 2) * scale + additive_mask  # (B, A, T, T)
    p = softmax(s)  # (B, A, T, T): row i says how much query i takes from each key
    p_dropped = p if keep is None else p * keep / (1.0 - p_drop)  # (B, A, T, T) dropout: zeros, survivors scaled
    out = join_heads(p_dropped @ v)  # (B, T, H)
    return out, (x, q, k, v, p, p_dropped, keep, p_drop, scale)


out, cache = attention_forward(x, params, additive_mask)  # (B, T, H)

# The shape walk, printed from the arrays themselves
_, q, k, v, p, *_ = cache
for name, letters, t in [("x", "B, T, H", x), ("x Wq^T + bq", "B, T, H", x @ params[PREFIX + "query.weight"].T),
                         ("... reshaped", "B, T, A, D", (x @ params[PREFIX + "query.weight"].T).reshape(B, T, A, D)),
                         ("q: heads to the front", "B, A, T, D", q), ("k, v likewise", "B, A, T, D", v),
                         ("scores, probs", "B, A, T, T", p), ("probs v", "B, A, T, D", p @ v),
                         ("out: heads joined", "B, T, H", out)]:
    print(f"{name:<22} ({letters:<10}) = {t.shape}")

# %% [markdown]
# ### What the mask does to a row
#
# Take the second sequence (three real tokens, two padding) and the first head. The scores of the padded keys
# become a huge negative number before the softmax, so their probabilities are exactly 0 and the three real keys
# share all of the weight. (A padded *query* row still gets computed; its output is simply never used.)

# %%
s_row = (q @ k.transpose(0, 1, 3, 2))[1, 0, 0] / math.sqrt(D)  # (T,) scores of query 0, sequence 1, head 0
print("scores             ", np.round(s_row, 3))
print("softmax, no mask   ", np.round(softmax(s_row), 3))
print("softmax, with mask ", np.round(softmax(s_row + additive_mask[1, 0, 0]), 3))
print("row sum with mask  ", softmax(s_row + additive_mask[1, 0, 0]).sum())
print("padded keys, exactly:", softmax(s_row + additive_mask[1, 0, 0])[attention_mask[1] == 0])

fig, axes = plt.subplots(1, 2, figsize=(9, 3), sharey=True)
for ax, row, title in [(axes[0], softmax(s_row), "no mask"),
                       (axes[1], softmax(s_row + additive_mask[1, 0, 0]), "with the padding mask")]:
    ax.bar(range(T), row, color=["C0" if attention_mask[1, j] else "C3" for j in range(T)])
    ax.set_title(title)
    ax.set_xlabel("key position")
axes[0].set_ylabel("attention weight of query 0")
fig.suptitle("sequence 1, head 0 (red: padded keys)")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The backward, step by step
#
# We are given $dO = \partial L / \partial\,\text{out}$, $(B, T, H)$, and walk the forward backwards.
#
# 1. **Join heads** was a reshape: its backward is the inverse reshape, `split_heads(dO)` $\to dC$, $(B, A, T, D)$.
# 2. **$C = \tilde P V$**, a matmul: $d\tilde P = dC\,V^\top$ and $dV = \tilde P^\top dC$, with the
#    probabilities *after* dropout, the ones that multiplied $V$.
# 3. **Dropout** multiplied each entry by a constant, $K/(1-p)$: the gradient goes back through the same
#    mask **and** the same scale, $dP = d\tilde P \odot K / (1-p)$. (Without dropout, $\tilde P = P$ and this
#    step does nothing.)
# 4. **Softmax**, row by row. With $p_j = e^{s_j} / \sum_k e^{s_k}$, the Jacobian is
#    $\partial p_j / \partial s_i = p_j(\delta_{ij} - p_i)$, so
#    $ds_i = \sum_j dp_j\, p_j (\delta_{ij} - p_i) = p_i\,(dp_i - \sum_j dp_j p_j)$, i.e.
#    $$dS = P \odot \big(dP - \textstyle\sum_\text{row}(dP \odot P)\big).$$
#    One pass, no $(T, T)$ Jacobian per row. The mask was a constant added to $S$: it has no gradient, and a
#    padded key gets $ds = 0$ because its $p = 0$.
# 5. **$S = Q K^\top \cdot \text{scale}$**: $dQ = dS\,K \cdot \text{scale}$ and $dK = dS^\top Q \cdot \text{scale}$.
# 6. **Split heads** was a reshape: `join_heads` brings $dQ, dK, dV$ back to $(B, T, H)$.
# 7. **The three linear maps** $Y = X W^\top + b$: $dW = \sum_\text{tokens} dY^\top X$,
#    $db = \sum_\text{tokens} dY$, and $X$ fed all three, so its gradient is the **sum** of three:
#    $dX = dQ W_q + dK W_k + dV W_v$.

# %%
def attention_backward(dout, cache, params):
    x, q, k, v, p, p_dropped, keep, p_drop, scale = cache
    dctx = split_heads(dout)  # (B, A, T, D)     step 1
    dp = dctx @ v.transpose(0, 1, 3, 2)  # (B, A, T, T)  step 2: gradient of the dropped probabilities
    dv = p_dropped.transpose(0, 1, 3, 2) @ dctx  # (B, A, T, D)
    if keep is not None:
        dp = dp * keep / (1.0 - p_drop)  # (B, A, T, T)  step 3: the same mask, the same 1/(1-p)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))  # (B, A, T, T)  step 4
    dq = ds @ k * scale  # (B, A, T, D)  step 5
    dk = ds.transpose(0, 1, 3, 2) @ q * scale  # (B, A, T, D)
    grads, dx = {}, np.zeros_like(x)  # dx (B, T, H)
    for n, dy in (("query", dq), ("key", dk), ("value", dv)):
        dy = join_heads(dy)  # (B, T, H)          step 6
        grads[PREFIX + n + ".weight"] = dy.reshape(-1, dy.shape[-1]).T @ x.reshape(-1, x.shape[-1])  # (H, H) step 7
        grads[PREFIX + n + ".bias"] = dy.sum(axis=(0, 1))  # (H,)
        dx += dy @ params[PREFIX + n + ".weight"]  # (B, T, H)
    return dx, grads


# A loss that makes every output matter differently: L = sum(out * G), so dL/dout = G
G = rng.standard_normal((B, T, H))  # (B, T, H)
dx, grads = attention_backward(G, cache, params)
print({k: v.shape for k, v in grads.items()}, "dx", dx.shape)

# %% [markdown]
# ## The check
#
# **Against minibert.** `self_attention_forward(x, params, prefix, additive_mask, num_heads, p_drop, rng,
# training)` returns `(context, probs, cache)`. It computes the same thing differently, for speed: one matmul for
# $q, k, v$ together, the $1/\sqrt{D}$ folded into the query weights, a softmax in place. Its cache holds the
# input, the stacked (and scaled) weights, $q, k, v$ per head, the probabilities before and after dropout, the
# dropout mask and the scale: exactly what its backward reads. `self_attention_backward(dcontext, cache, grads,
# prefix)` **adds** each parameter's gradient into `grads` (so start from zeros) and returns $dx$.
#
# **Against finite differences.** In float64, nudging one number by $\pm 10^{-6}$ and watching $L$ gives each
# gradient to about 8 digits: it checks ours and minibert's without trusting either.

# %%
def minibert_attention(x, params):
    return self_attention_forward(x, params, PREFIX, additive_mask, A, 0.0, None, False)


ctx_mb, probs_mb, cache_mb = minibert_attention(x, params)
grads_mb = {k: np.zeros_like(v) for k, v in params.items()}
dx_mb = self_attention_backward(G.copy(), cache_mb, grads_mb, PREFIX)


def loss():
    return float((minibert_attention(x, params)[0] * G).sum())


check("output: ours vs minibert", out, ctx_mb)
check("probabilities: ours vs minibert", p, probs_mb)
check("dx: ours vs minibert", dx, dx_mb)
check("dx: minibert vs finite differences", dx_mb, numerical_gradient(loss, x))
for name in params:
    check(f"d {name[len(PREFIX):]}: ours vs minibert", grads[name], grads_mb[name])
    check(f"d {name[len(PREFIX):]}: minibert vs finite diff.", grads_mb[name], numerical_gradient(loss, params[name]))

# %% [markdown]
# One gradient is zero: the key bias's. It adds $q_i \cdot b_k$ to *every* score of row $i$ alike, and a softmax
# does not change when its whole row shifts. (Finite differences agree; the size printed is rounding.)

# %%
print("largest |d key.bias|:", float(np.abs(grads[PREFIX + "key.bias"]).max()))

# %% [markdown]
# The softmax backward on its own, in float64, against finite differences of minibert's `softmax_forward`
# (which works in place, hence the copies):

# %%
for shape in [(3, T, T), (2, 1, 40)]:  # our small rows, and two rows of 40 keys
    scores = rng.standard_normal(shape)  # (rows, queries, keys)
    dprobs = rng.standard_normal(shape)  # (rows, queries, keys)
    probs = softmax_forward(scores.copy())
    check(f"softmax backward vs finite differences, {shape}", softmax_backward(dprobs.copy(), probs),
          numerical_gradient(lambda: float((softmax_forward(scores.copy()) * dprobs).sum()), scores))

# %% [markdown]
# ### With dropout
#
# The checks above ran without dropout, where $\tilde P = P$: a backward that used $P$ where it needs $\tilde P$
# (in $dV$), or forgot the $1/(1-p)$ (in $dP$), would pass them. So once more with dropout on, $p = 0.1$: minibert's
# layer draws its mask from the generator it is given, `rng.random(shape, dtype=np.float32) >= p` (minibert/
# layers/dropout.py); we draw the same mask from a generator with the same seed and hand it to our functions.
# Finite differences rerun minibert's forward with a fresh generator of that seed each time, so every nudge sees
# the same mask.

# %%
P_DROP, SEED = 0.1, 11
keep = np.random.default_rng(SEED).random((B, A, T, T), dtype=np.float32) >= P_DROP  # (B, A, T, T) survivors
out_d, cache_d = attention_forward(x, params, additive_mask, keep, P_DROP)
dx_d, grads_d = attention_backward(G, cache_d, params)


def minibert_attention_dropout(x, params):
    return self_attention_forward(x, params, PREFIX, additive_mask, A, P_DROP, np.random.default_rng(SEED), True)


ctx_d_mb, _, cache_d_mb = minibert_attention_dropout(x, params)
grads_d_mb = {k: np.zeros_like(v) for k, v in params.items()}
dx_d_mb = self_attention_backward(G.copy(), cache_d_mb, grads_d_mb, PREFIX)
print(f"dropout zeroed {1 - keep.mean():.1%} of the probabilities")
check("dropout: output, ours vs minibert", out_d, ctx_d_mb)
check("dropout: dx, ours vs minibert", dx_d, dx_d_mb)
for name in params:
    check(f"dropout: d {name[len(PREFIX):]}, ours vs minibert", grads_d[name], grads_d_mb[name])
check("dropout: dx, ours vs finite differences", dx_d,
      numerical_gradient(lambda: float((minibert_attention_dropout(x, params)[0] * G).sum()), x))
check("dropout: d value.weight, ours vs finite differences", grads_d[PREFIX + "value.weight"],
      numerical_gradient(lambda: float((minibert_attention_dropout(x, params)[0] * G).sum()),
                         params[PREFIX + "value.weight"]))
print("without dropout, the same step would differ by", f"{float(np.abs(dx_d - dx).max()):.2f} in dx")

# %% [markdown]
# **Against `transformers`.** Its `BertSelfAttention` takes the same Hugging Face parameter names, so the same
# numbers load into it unchanged. We ask for its plain ("eager") attention and let torch's autograd compute
# every gradient.

# %%
torch = torch_or_none()
if torch is not None:
    import transformers

    hf_config = transformers.BertConfig(hidden_size=H, num_attention_heads=A, attention_probs_dropout_prob=0.0)
    hf_config._attn_implementation = "eager"
    theirs = transformers.models.bert.modeling_bert.BertSelfAttention(hf_config).double().eval()
    theirs.load_state_dict({k[len(PREFIX):]: torch.tensor(v) for k, v in params.items()})
    x_t = torch.tensor(x, requires_grad=True)
    ctx_t, probs_t = theirs(x_t, attention_mask=torch.tensor(additive_mask))
    (ctx_t * torch.tensor(G)).sum().backward()
    check("output: ours vs transformers", out, ctx_t.detach().numpy())
    check("probabilities: ours vs transformers", p, probs_t.detach().numpy())
    check("dx: ours vs transformers", dx, x_t.grad.numpy())
    for name, param in theirs.named_parameters():
        check(f"d {name}: ours vs transformers", grads[PREFIX + name], param.grad.numpy())

# %% [markdown]
# ## A real model's attention
#
# all-MiniLM-L6-v2 is a small trained BERT (6 layers, 12 heads, $H = 384$) that ships with minibert's built-in
# data. `minibert attention` draws its attention from the command line; here we call the same public functions
# and draw a few heads ourselves. Rows are the token that attends (the query), columns the token it attends to
# (the key); every row sums to 1.

# %%
from minibert.viz.attention_data import compute_attention, load_model_and_tokenizer  # noqa: E402
from minibert.viz.model_select import resolve_model_folder  # noqa: E402

model, tokenizer = load_model_and_tokenizer(resolve_model_folder("minilm"))
sentence = "the cat sat on the mat because it was tired"
result = compute_attention(model, tokenizer, sentence)
print(f"{len(result.tokens)} tokens, {result.num_layers} layers x {result.num_heads} heads, "
      f"H = {model.config.hidden_size}, "
      f"attentions {result.attentions.shape} (L, A, T, T)")
print("largest |row sum - 1|:", float(np.abs(result.attentions.sum(axis=-1) - 1).max()))

# Measure three habits of every head: how much weight a query puts on the token just before it, on the token
# just after it, and on the two special tokens [CLS] and [SEP] (a mean over the queries)
att = result.attentions  # (L, A, T, T)
Tn = att.shape[-1]
previous = np.diagonal(att, offset=-1, axis1=2, axis2=3).mean(axis=-1)  # (L, A)
following = np.diagonal(att, offset=1, axis1=2, axis2=3).mean(axis=-1)  # (L, A)
special = att[..., [0, Tn - 1]].sum(axis=-1).mean(axis=-1)  # (L, A)
last = result.num_layers - 1
picks = [("most on the previous token", np.unravel_index(previous.argmax(), previous.shape)),
         ("most on the next token", np.unravel_index(following.argmax(), following.shape)),
         ("most on [CLS] and [SEP]", np.unravel_index(special.argmax(), special.shape)),
         ("last layer, least on [CLS] and [SEP]", (last, int(special[last].argmin())))]
for habit, (layer, head) in picks:
    print(f"{habit:<38} layer {layer}, head {head}: previous {previous[layer, head]:.2f}, "
          f"next {following[layer, head]:.2f}, [CLS]+[SEP] {special[layer, head]:.2f}, "
          f"most attended key: {result.tokens[att[layer, head].mean(axis=0).argmax()]}")

# %%
fig, axes = plt.subplots(2, 2, figsize=(11, 10))
labels = result.tokens
for ax, (habit, (layer, head)) in zip(axes.flat, picks):
    image = ax.imshow(att[layer, head], cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(Tn), labels, rotation=90, fontsize=8)
    ax.set_yticks(range(Tn), labels, fontsize=8)
    ax.set_title(f"layer {layer}, head {head}: {habit}", fontsize=10)
    ax.set_xlabel("key (attended to)", fontsize=8)
    ax.set_ylabel("query (attends)", fontsize=8)
fig.suptitle(f"all-MiniLM-L6-v2: \"{sentence}\"")
fig.tight_layout()
fig.colorbar(image, ax=axes, fraction=0.025, label="attention weight (each row sums to 1)")
plt.show()

# %% [markdown]
# Even in this small model the heads have habits you can measure: one copies from the token before, one from the
# token after (printed above, a mean weight near 1 would be a perfect copy), and many park most of their weight
# on `[CLS]` and `[SEP]`: a head with nothing useful to fetch for a token puts its weight where it changes
# little. The last layer's least-parked head sends its weight to the words themselves: its "most attended key"
# above is the word nearly every token of the sentence gathers from.
#
# ## Summary
#
# - Attention mixes tokens: each output row is a weighted mean of value rows, the weights a softmax of scaled
#   query-key dot products. Heads are a reshape: $(B, T, H) \to (B, A, T, D)$ and back.
# - The padding mask is added before the softmax; padded keys get exactly 0 weight and 0 gradient.
# - The backward is three matmul backwards, one softmax backward $dS = P \odot (dP - \sum dP \odot P)$, and a sum
#   of three gradients into $X$.
# - Dropout on the probabilities goes back through the same mask and the same $1/(1-p)$, and $dV$ reads the
#   probabilities after dropout.
# - Ours equals minibert's layer, finite differences and `transformers`, gradient by gradient, with dropout off
#   and on.
#
# ## Exercises
#
# **1. The heads, by hand.** Write `merge_heads(t)` turning $(B, A, T, D)$ into $(B, T, H)$ with heads side by
# side (head 0's $D$ features first), without calling this chapter's `join_heads`.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def merge_heads(t):
    raise NotImplementedError


def test_merge_heads(merge_heads):
    t = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(float)  # (B, A, T, D)
    m = merge_heads(t)
    expect("merge_heads((2, 3, 4, 5)).shape", np.shape(m), (2, 4, 15))
    expect("batch 1, token 2, features 5:10 (head 1's, second)", m[1, 2, 5:10], t[1, 1, 2])
    expect("split back into heads", split_heads_of(m, 3), t)


def split_heads_of(t, heads):
    B, T, H = t.shape
    return t.reshape(B, T, heads, H // heads).transpose(0, 2, 1, 3)  # (B, A, T, D)


exercise(1, merge_heads, "04_attention", test_merge_heads)


# %% [markdown]
# **2. A causal mask.** A decoder (GPT) lets token $i$ see only keys $j \le i$. Write `causal_mask(T)` returning
# the $(T, T)$ additive mask (0 where allowed, `np.finfo(np.float64).min` where not); the test runs it through
# minibert's `softmax_forward`.

# %%
def causal_mask(T):
    raise NotImplementedError


def test_causal_mask(causal_mask):
    m = causal_mask(4)
    expect("causal_mask(4).shape", np.shape(m), (4, 4))
    p = softmax_forward(np.zeros((1, 4, 4)), m[None])  # (1, T, T) equal scores: uniform over the allowed keys
    expect("softmax of equal scores under the mask", p[0], np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None],
           atol=1e-12)


exercise(2, causal_mask, "04_attention", test_causal_mask)


# %% [markdown]
# **3. The softmax Jacobian.** Write `softmax_jacobian(p)` for one row $p$ of length $T$: the $(T, T)$ matrix
# $J_{ij} = \partial p_j / \partial s_i$. The test checks that $J\, dp$ equals the one-pass formula of minibert's
# `softmax_backward` (which is why nobody builds $J$: it costs $T^2$ per row).

# %%
def softmax_jacobian(p):
    raise NotImplementedError


def test_softmax_jacobian(softmax_jacobian):
    r = np.random.default_rng(4)
    p = softmax(r.standard_normal(6))  # (T,)
    dp = r.standard_normal(6)  # (T,)
    J = softmax_jacobian(p)
    expect("softmax_jacobian(p).shape", np.shape(J), (6, 6))
    expect("J dp against softmax_backward", J @ dp, softmax_backward(dp[None].copy(), p[None])[0], atol=1e-12)


exercise(3, softmax_jacobian, "04_attention", test_softmax_jacobian)
