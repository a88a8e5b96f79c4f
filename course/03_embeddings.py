# %% [markdown]
# # 3. Embeddings
#
# The tokenizer (chapter 2) gives integer ids. The embedding layer turns each id into a vector of width $H$, the
# form every later layer works on. BERT's input vector for a token is the sum of three learned vectors, one for
# the token itself, one for its segment (sentence A or B), one for its position, normalised by a LayerNorm. In this
# chapter you will
#
# - derive LayerNorm's backward step by step, and check it against minibert's `layernorm_backward`;
# - write the embedding layer's forward and backward passes in plain NumPy, and check them against minibert's
#   layer, against finite differences, and against Hugging Face's `BertEmbeddings` on the same weights;
# - look at the three parts of one real sentence in a real pre-trained model (the all-MiniLM-L6-v2 checkpoint
#   that comes with minibert);
# - compare BERT's learned position vectors with the fixed sinusoidal ones of the original Transformer, and run a
#   small experiment on whether the choice matters for a tiny model.

# %%
import os

# NumPy's exact GELU rather than the numba-compiled one: compiling it takes longer than the small models of this
# chapter run (minibert/layers/gelu_select.py).
os.environ.setdefault("MINIBERT_NUMBA", "0")

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

import minibert
from minibert import AdamW, BertConfig, BertForMaskedLM, BertModel, WordPieceTokenizer, train_wordpiece
from minibert.data.builtin import load_wiki_summaries
from minibert.data.masking import Masker
from minibert.layers.embedding import embedding_backward, embedding_forward, scatter_add_rows
from minibert.course import QUICK, check, exercise, numerical_gradient, quick, torch_or_none

print("quick mode" if QUICK else "full mode", "| minibert", minibert.__version__)

# %% [markdown]
# ## Why three tables, and why positions at all
#
# Attention (chapter 4) compares every token with every other token, but it does not know *where* they are: if
# you shuffle the input tokens, a transformer without position information returns the same output vectors,
# shuffled the same way. The cell shows it on a small random minibert model whose position table is set to zero:
# reversing the input reverses the output, exactly.

# %%
config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=8)
bag = BertModel(config, seed=0, dtype=np.float64).eval()
bag.params["embeddings.position_embeddings.weight"][...] = 0.0  # no position information
ids = np.array([[2, 11, 23, 7, 42, 3]])  # (B, T)
out = bag(ids).last_hidden_state  # (B, T, H)
out_reversed = bag(ids[:, ::-1]).last_hidden_state  # (B, T, H) the same tokens in reverse order
largest = check("no positions: reversed input -> reversed output", out_reversed[:, ::-1], out, rtol=1e-10,
                atol=1e-12)

# %% [markdown]
# So "dog bites man" and "man bites dog" would look the same. BERT gives each position $t$ a learned vector
# $P_t$ and adds it to the token's vector. A third table tells sentence A from sentence B in a pair (the segment,
# or token type, of chapter 2).
#
# ## The maths
#
# For token $t$ of a sequence, with id $x_t$ and segment $s_t$, and tables $W$ ($V \times H$), $P$ (positions
# $\times H$) and $S$ ($2 \times H$):
#
# $$e_t = W_{x_t} + P_t + S_{s_t}, \qquad
#   \mu_t = \tfrac{1}{H}\textstyle\sum_h e_{th}, \quad \sigma^2_t = \tfrac{1}{H}\sum_h (e_{th} - \mu_t)^2,$$
# $$\hat e_t = \frac{e_t - \mu_t}{\sqrt{\sigma^2_t + \epsilon}}, \qquad y_t = \gamma \odot \hat e_t + \beta .$$
#
# LayerNorm gives each token's vector mean 0 and variance 1 over its $H$ entries, then a learned scale $\gamma$
# and shift $\beta$. (BERT then applies dropout; this chapter runs without it.)
#
# **Backward.** Given $\partial L / \partial y$ (call it $dy$, shape $(B, T, H)$): $d\beta = \sum_{b,t} dy$,
# $d\gamma = \sum_{b,t} dy \odot \hat e$. The gradient with respect to $\hat e$ is $g = dy \odot \gamma$. What is
# left is the normalisation itself, and it is the one step of the embeddings whose backward takes some care: each
# $\hat e_h$ depends on **every** $e_i$ of its token, through $\mu$ and $\sigma^2$. We derive it for one token
# (the tokens are independent), as llm.c's LayerNorm walkthrough does, with $r = 1/\sqrt{\sigma^2 + \epsilon}$.
#
# 1. **The pieces' derivatives.** $\partial \mu / \partial e_i = 1/H$. For the variance,
#    $\partial \sigma^2 / \partial e_i = \frac{2}{H}\sum_h (e_h - \mu)(\delta_{hi} - \tfrac1H) = \frac{2}{H}(e_i - \mu)$
#    (the $\tfrac1H$ term drops out because $\sum_h (e_h - \mu) = 0$). So
#    $\partial r / \partial e_i = -\tfrac12 (\sigma^2 + \epsilon)^{-3/2} \cdot \frac{2}{H}(e_i - \mu)
#    = -\frac{r^3 (e_i - \mu)}{H} = -\frac{r^2\, \hat e_i}{H}$.
# 2. **One output, one input.** $\hat e_h = (e_h - \mu)\, r$, a product: by the product rule
#    $$\frac{\partial \hat e_h}{\partial e_i} = r\Big(\delta_{hi} - \frac1H\Big) + (e_h - \mu)\frac{\partial r}{\partial e_i}
#      = r\,\delta_{hi} - \frac{r}{H} - \frac{r}{H}\,\hat e_h \hat e_i .$$
#    Three paths: directly ($r\,\delta_{hi}$), through the mean ($-r/H$), through the spread ($-r \hat e_h \hat e_i/H$).
# 3. **The chain rule** sums over every output $h$:
#    $$de_i = \sum_h g_h \frac{\partial \hat e_h}{\partial e_i}
#      = r\,g_i - \frac{r}{H}\sum_h g_h - \frac{r}{H}\,\hat e_i \sum_h g_h \hat e_h,$$
#    which is llm.c's compact form, the one minibert's `layernorm_backward` computes:
#
# $$de = r\,\big(g - \operatorname{mean}_h(g) - \hat e \odot \operatorname{mean}_h(g \odot \hat e)\big).$$
#
# The cell below computes the three paths as three separate arrays, in float64, and checks that their sum equals
# the compact form, minibert's `layernorm_backward` and finite differences of the forward. The two correction
# terms are what a naive "divide the gradient by the standard deviation" would miss: the cell prints how much
# each one contributes.
# The sum $e$ passes $de$ unchanged to each of its three terms, and a table lookup's gradient is a *scatter-add*:
# row $W_i$ receives the sum of $de_t$ over every token $t$ with $x_t = i$ (a word used three times gets three
# contributions). Row $P_t$ receives $de_t$ summed over the batch; row $S_s$ the sum over tokens of segment $s$.
# As in Hugging Face, the `[PAD]` row of $W$ gets no gradient: padding is not a word to learn.

# %%
from minibert.layers.layernorm import layernorm_backward, layernorm_forward  # noqa: E402

rng = np.random.default_rng(2)
e = rng.normal(size=(4, 6))  # (N, H) four tokens' summed embeddings
gamma, beta, dy = 1 + 0.1 * rng.normal(size=6), rng.normal(size=6), rng.normal(size=(4, 6))  # (H,), (H,), (N, H)
mu = e.mean(axis=-1, keepdims=True)  # (N, 1)
r = 1.0 / np.sqrt(((e - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-12)  # (N, 1)
ehat = (e - mu) * r  # (N, H)
g = dy * gamma  # (N, H) dL / d ehat
H_ = e.shape[-1]
direct = r * g  # (N, H) path 1: e_i moves ehat_i
through_mean = -r / H_ * g.sum(axis=-1, keepdims=True)  # (N, 1) path 2: e_i moves the mean, which moves every ehat_h
through_spread = -r / H_ * ehat * (g * ehat).sum(axis=-1, keepdims=True)  # (N, H) path 3: e_i moves r
de_paths = direct + through_mean + through_spread  # (N, H)
compact = r * (g - g.mean(axis=-1, keepdims=True) - ehat * (g * ehat).mean(axis=-1, keepdims=True))  # (N, H)
for name, part in [("direct", direct), ("through the mean", through_mean), ("through the spread", through_spread)]:
    print(f"path {name:<20} largest entry {float(np.abs(part).max()):.3f}")
_, ln_cache = layernorm_forward(e, gamma, beta, 1e-12)
de_mb = layernorm_backward(dy, ln_cache, gamma, np.zeros(6), np.zeros(6))  # (N, H); adds dgamma, dbeta into zeros
check("LayerNorm de: three paths vs the compact form", de_paths, compact, rtol=1e-12, atol=1e-12)
check("LayerNorm de: three paths vs minibert's layernorm_backward", de_paths, de_mb, rtol=1e-10, atol=1e-12)
check("LayerNorm de: three paths vs finite differences", de_paths,
      numerical_gradient(lambda: float((layernorm_forward(e, gamma, beta, 1e-12)[0] * dy).sum()), e),
      rtol=1e-6, atol=1e-8)
print("without the two correction terms, r g alone is off by", f"{float(np.abs(direct - compact).max()):.3f}")

# %% [markdown]
# ## The code
#
# The parameters live in a dict under Hugging Face's names, as minibert's layers keep them.

# %%
WORD, POS, TYPE = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                   "embeddings.token_type_embeddings.weight")
GAMMA, BETA = "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"


def embeddings_forward(params, ids, types, eps=1e-12):
    T = ids.shape[1]
    e = params[WORD][ids] + params[POS][:T] + params[TYPE][types]  # (B, T, H)
    mu = e.mean(axis=-1, keepdims=True)  # (B, T, 1)
    rstd = 1.0 / np.sqrt(((e - mu) ** 2).mean(axis=-1, keepdims=True) + eps)  # (B, T, 1)
    ehat = (e - mu) * rstd  # (B, T, H)
    y = ehat * params[GAMMA] + params[BETA]  # (B, T, H)
    return y, (ids, types, ehat, rstd)


def embeddings_backward(dy, cache, params, pad_id=0):
    ids, types, ehat, rstd = cache
    grads = {name: np.zeros_like(p) for name, p in params.items()}
    grads[GAMMA] = (dy * ehat).sum(axis=(0, 1))  # (H,)
    grads[BETA] = dy.sum(axis=(0, 1))  # (H,)
    g = dy * params[GAMMA]  # (B, T, H)
    de = rstd * (g - g.mean(-1, keepdims=True) - ehat * (g * ehat).mean(-1, keepdims=True))  # (B, T, H)
    real = ids != pad_id  # (B, T)
    np.add.at(grads[WORD], ids[real], de[real])  # (V, H) scatter-add; repeated ids add up
    grads[POS][:ids.shape[1]] = de.sum(axis=0)  # (T, H)
    np.add.at(grads[TYPE], types, de)  # (2, H)
    return grads


# %% [markdown]
# ## Check 1: against minibert's embedding layer
#
# minibert's `embedding_forward` / `embedding_backward` (minibert/layers/embedding.py) take the same parameter
# dict; its scatter-add sorts the ids and sums each run of equal ids, but the numbers must be the
# same. Random float64 tables; the batch has padding at the end of its second sequence.

# %%
def random_params(V, P, H, rng):
    return {WORD: rng.normal(size=(V, H)), POS: rng.normal(size=(P, H)), TYPE: rng.normal(size=(2, H)),
            GAMMA: 1 + 0.1 * rng.normal(size=H), BETA: 0.1 * rng.normal(size=H)}


rng = np.random.default_rng(0)
V, P, H, B, T = 40, 16, 12, 3, 9
params = random_params(V, P, H, rng)
ids = rng.integers(1, V, size=(B, T))  # (B, T)
ids[1, 6:] = 0  # [PAD] at the end of sequence 1
ids[2, :4] = 7  # one word four times: its gradient row adds four contributions
types = (np.arange(T) >= 5).astype(np.int64)[None].repeat(B, axis=0)  # (B, T) A = 0..4, B = 5..8
dy = rng.normal(size=(B, T, H))  # (B, T, H) some upstream gradient

y, cache = embeddings_forward(params, ids, types)
grads = embeddings_backward(dy, cache, params, pad_id=0)

y_mb, cache_mb = embedding_forward(params, "", ids, types, eps=1e-12, p_drop=0.0, rng=None, training=False)
grads_mb = {name: np.zeros_like(p) for name, p in params.items()}
embedding_backward(dy, cache_mb, params, grads_mb, "", pad_token_id=0)

check("forward: y", y, y_mb, rtol=1e-12, atol=1e-12)
for name in params:
    check(f"backward: d {name.removeprefix('embeddings.')}", grads[name], grads_mb[name], rtol=1e-12, atol=1e-12)
assert not grads[WORD][0].any(), "the [PAD] row gets no gradient"

# %% [markdown]
# ## Check 2: finite differences
#
# The gradient of a scalar loss $L = \sum y \odot dy$ is exactly what the backward pass computes for upstream
# gradient $dy$. Nudging each parameter by $\pm 10^{-6}$ in float64 and measuring $L$ gives the same numbers
# independently of any formula (on a smaller problem: one entry at a time). The ids avoid [PAD] here: its row's
# true derivative is not zero, minibert (and Hugging Face) just choose not to train it.

# %%
rng = np.random.default_rng(1)
V, P, H, B, T = 9, 6, 5, 2, 5
small = random_params(V, P, H, rng)
ids_s = rng.integers(1, V, size=(B, T))  # (B, T) no [PAD]
types_s = rng.integers(0, 2, size=(B, T))  # (B, T)
dy_s = rng.normal(size=(B, T, H))  # (B, T, H)
analytic = embeddings_backward(dy_s, embeddings_forward(small, ids_s, types_s)[1], small)


def loss():
    return float((embeddings_forward(small, ids_s, types_s)[0] * dy_s).sum())


for name in small:
    check(f"finite differences: d {name.removeprefix('embeddings.')}", analytic[name],
          numerical_gradient(loss, small[name]), rtol=1e-6, atol=1e-8)

# %% [markdown]
# ## Check 3: against Hugging Face's `BertEmbeddings`
#
# The same weights go into `transformers`' `BertEmbeddings` (in float64, eval mode: no dropout); torch's autograd
# computes the gradients. Hugging Face's word table has `padding_idx=0`, so its [PAD] row gets no gradient either.

# %%
torch = torch_or_none()
if torch is not None:
    from transformers import BertConfig as HFBertConfig
    from transformers.models.bert.modeling_bert import BertEmbeddings

    V, P, H = params[WORD].shape[0], params[POS].shape[0], params[WORD].shape[1]
    hf = BertEmbeddings(HFBertConfig(vocab_size=V, hidden_size=H, max_position_embeddings=P, layer_norm_eps=1e-12,
                                     pad_token_id=0)).double().eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            p.copy_(torch.from_numpy(params["embeddings." + name]))
    y_hf = hf(torch.from_numpy(ids), token_type_ids=torch.from_numpy(types))  # (B, T, H)
    (y_hf * torch.from_numpy(dy)).sum().backward()
    check("transformers forward: y", y, y_hf.detach().numpy(), rtol=1e-12, atol=1e-12)
    for name, p in hf.named_parameters():
        check(f"transformers backward: d {name}", grads["embeddings." + name], p.grad.numpy(), rtol=1e-12,
              atol=1e-12)

# %% [markdown]
# ## The three parts of a real sentence
#
# all-MiniLM-L6-v2 is a small pre-trained BERT (a sentence-embedding model) that comes with minibert; the cell
# prints its sizes. We take one pair of sentences through its embedding tables and draw each part: rows are tokens,
# columns the first 64 dimensions.

# %%
minilm = BertModel.from_pretrained("minilm", dtype=np.float64).eval()
tok = WordPieceTokenizer.from_pretrained("minilm")
c = minilm.config
print(f"MiniLM: {c.num_hidden_layers} layers, H = {c.hidden_size}, V = {c.vocab_size}, "
      f"{c.max_position_embeddings} positions")
enc = tok.encode("The cat sat on the mat.", "It was warm.")
ids_1, types_1 = np.array([enc.input_ids]), np.array([enc.token_type_ids])  # (1, T)
T1 = ids_1.shape[1]
word_part = minilm.params[WORD][ids_1[0]]  # (T, H)
pos_part = minilm.params[POS][:T1]  # (T, H)
type_part = minilm.params[TYPE][types_1[0]]  # (T, H)
out_1, _ = embeddings_forward(minilm.params, ids_1, types_1, minilm.config.layer_norm_eps)  # (1, T, H)
check("MiniLM: our embeddings = minibert's model.hidden_states[0]", out_1,
      minilm(ids_1, token_type_ids=types_1, output_hidden_states=True).hidden_states[0], rtol=1e-10, atol=1e-10)
for name, part in [("word", word_part), ("position", pos_part), ("segment", type_part)]:
    print(f"{name:>9} vectors: mean length {np.linalg.norm(part, axis=1).mean():.2f}")

# %%
panels = [("word", word_part), ("+ segment", type_part), ("+ position", pos_part),
          ("= sum", word_part + type_part + pos_part), ("LayerNorm(sum)", out_1[0])]
fig, axes = plt.subplots(1, 5, figsize=(15, 3.8), sharey=True)
for ax, (title, part) in zip(axes, panels):
    lim = np.percentile(np.abs(part[:, :64]), 99)  # a few large entries would wash out the rest
    ax.imshow(part[:, :64], cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_title(f"{title}\n(colour scale ±{lim:.2f})", fontsize=9)
    ax.set_xlabel("dimension (first 64)")
axes[0].set_yticks(range(T1), enc.tokens, fontsize=8)
fig.suptitle("all-MiniLM-L6-v2's embedding of a sentence pair (red +, blue -; each panel its own scale, clipped "
             "at the 99th percentile)")
fig.tight_layout()
plt.show()

# %% [markdown]
# The word part carries most of the signal; the segment part is one vector for all of A and another for all of B;
# the position part changes from row to row. After the LayerNorm every row has mean 0 and variance 1 (times
# $\gamma$, plus $\beta$), whatever the size of the parts.
#
# ## Learned positions against sinusoidal ones
#
# The original Transformer did not learn its positions: it used fixed waves,
#
# $$PE_{p,\,2i} = \sin\!\big(p / 10000^{2i/H}\big), \qquad PE_{p,\,2i+1} = \cos\!\big(p / 10000^{2i/H}\big),$$
#
# fast waves in the first dimensions and slower ones further on, so that every position gets a distinct pattern
# and $PE_{p+k}$ is a fixed rotation of $PE_p$ for every $p$. BERT learns its table like any other weight. Below,
# the sinusoidal table and MiniLM's learned table (first 128 positions), and for each the cosine similarity between
# every pair of position vectors.

# %%
def sinusoidal(P, H):
    p = np.arange(P)[:, None]  # (P, 1)
    freq = 1.0 / 10000 ** (np.arange(0, H, 2) / H)  # (H/2,)
    pe = np.zeros((P, H))  # (P, H)
    pe[:, 0::2], pe[:, 1::2] = np.sin(p * freq), np.cos(p * freq)
    return pe


def cosine_similarity(table):
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)  # (P, H)
    return unit @ unit.T  # (P, P)


n_pos = 128
sin_table, learned = sinusoidal(n_pos, minilm.config.hidden_size), minilm.params[POS][:n_pos]  # (P, H) each
sims = {"sinusoidal": cosine_similarity(sin_table), "learned (MiniLM)": cosine_similarity(learned)}
for name, sim in sims.items():
    near, far = np.diag(sim, 1).mean(), np.mean([np.diag(sim, k).mean() for k in range(32, 64)])
    print(f"{name:>17}: neighbours {near:.2f}, positions 32-63 apart {far:.2f} (mean cosine similarity)")

fig, axes = plt.subplots(2, 2, figsize=(11, 9), layout="constrained")
for col, (name, table) in enumerate([("sinusoidal", sin_table), ("learned (MiniLM)", learned)]):
    lim = np.percentile(np.abs(table), 99)
    axes[0, col].imshow(table, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    axes[0, col].set_title(f"{name} position table")
    axes[0, col].set_xlabel("dimension")
    axes[0, col].set_ylabel("position")
    image = axes[1, col].imshow(sims[name], cmap="viridis", vmin=-1, vmax=1)
    axes[1, col].set_title(f"{name}:\ncosine similarity of positions")
    axes[1, col].set_xlabel("position")
    axes[1, col].set_ylabel("position")
fig.colorbar(image, ax=axes[1, :], shrink=0.8)
plt.show()

# %% [markdown]
# Both tables give nearby positions similar vectors and distant ones dissimilar vectors: the learned table found
# a smooth, wave-like structure on its own. The learned one is limited to the rows of its table (the longest
# input seen in training); the sinusoidal formula can be evaluated for any position, though a model trained on
# short sequences does not automatically cope with longer ones.
#
# ## A small experiment: does the choice matter here?
#
# Three tiny masked-language models (the cell prints their sizes; sequences of Wikipedia summaries), the same
# seed, data and steps, differing only in their position table:
#
# - **learned**: BERT's table, trained;
# - **sinusoidal**: the fixed waves, scaled to the standard deviation the learned tables start with
#   (`initializer_range`), and frozen: the optimiser is simply not given that array;
# - **none**: a zero table, frozen: the model sees a bag of words (the control).
#
# Each trains with minibert's `BertForMaskedLM` and `AdamW`; the held-out masked-LM loss (the same masked batch for
# all three) is measured along the way.

# %%
docs = [d["extract"] for d in load_wiki_summaries()]
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    small_tok = train_wordpiece(docs[:1000], vocab_size=1024, progress=False)
T_exp, H_exp = 32, 64


def sequences(texts):
    """Consecutive windows of T_exp - 2 tokens, each as [CLS] ... [SEP]: (N, T_exp)."""
    stream = [i for text in texts for i in small_tok.encode(text, add_special_tokens=False).input_ids]
    n = len(stream) // (T_exp - 2)
    body = np.array(stream[:n * (T_exp - 2)]).reshape(n, T_exp - 2)  # (N, T - 2)
    return np.concatenate([np.full((n, 1), small_tok.cls_token_id), body,
                           np.full((n, 1), small_tok.sep_token_id)], axis=1)  # (N, T)


train_seqs = sequences(docs[:quick(6000, 600)])
held_seqs = sequences(docs[-quick(300, 100):])
masker = Masker(small_tok.vocab_size, small_tok.mask_token_id, small_tok.all_special_ids)
held_ids, held_labels = masker(held_seqs[:quick(256, 64)], np.random.default_rng(123))  # one fixed masked batch
print(f"{len(train_seqs)} training sequences, {len(held_ids)} held-out, of {T_exp} tokens")
# A reference that reads no context at all: predict every masked token from the training text's token frequencies.
counts = np.bincount(train_seqs.reshape(-1), minlength=small_tok.vocab_size) + 1.0  # (V,) add-one smoothing
counts[small_tok.all_special_ids] = 0
targets = held_labels[held_labels >= 0]  # (M,) the masked tokens
unigram_loss = float(-np.log(counts[targets] / counts.sum()).mean())
print(f"token frequencies alone (no context): held-out loss {unigram_loss:.3f}")

steps, batch, peak_lr = quick(2000, 30), 32, 3e-3
exp_config = BertConfig(vocab_size=small_tok.vocab_size, hidden_size=H_exp, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=4 * H_exp, max_position_embeddings=T_exp)
print(f"{exp_config.num_hidden_layers} layers, H = {H_exp}, V = {exp_config.vocab_size}, T = {T_exp}, batch {batch}, "
      f"{steps} steps per model, tables initialised with standard deviation {exp_config.initializer_range}")


def train(kind, seed=0):
    model = BertForMaskedLM(exp_config, seed=seed)
    table = model.params["bert." + POS]  # (T, H), a view into the model's weights
    if kind == "sinusoidal":
        table[...] = exp_config.initializer_range * sinusoidal(T_exp, H_exp) / sinusoidal(T_exp, H_exp).std()
    elif kind == "none":
        table[...] = 0.0
    trained = [n for n in model.params if kind == "learned" or n != "bert." + POS]
    opt = AdamW({n: model.params[n] for n in trained}, {n: model.grads[n] for n in trained}, lr=peak_lr)
    rng = np.random.default_rng(seed)
    curve = []
    for step in range(1, steps + 1):
        opt.lr = minibert.linear_warmup_decay(step, peak_lr, steps // 10, steps)
        ids, labels = masker(train_seqs[rng.integers(0, len(train_seqs), batch)], rng)  # (B, T) each
        model.zero_grad()
        model(ids, labels=labels)
        model.backward()
        opt.step()
        if step % (steps // 5) == 0:
            model.eval()
            curve.append((step, float(model(held_ids, labels=held_labels).loss)))
            model.train()
    return model, curve


start = time.perf_counter()
runs = {kind: train(kind) for kind in ("learned", "sinusoidal", "none")}
print(f"{3 * steps} steps in {time.perf_counter() - start:.0f} s")
final = {kind: curve[-1][1] for kind, (_, curve) in runs.items()}
for kind, loss in final.items():
    print(f"{kind:>10}: held-out MLM loss after {steps} steps {loss:.3f} ({loss - final['learned']:+.3f} "
          f"against learned)")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
for kind, (_, curve) in runs.items():
    ax1.plot(*zip(*curve), "o-", label=kind)
ax1.axhline(unigram_loss, color="grey", linestyle="--", label="token frequencies, no context")
ax1.set_xlabel("training step")
ax1.set_ylabel("held-out masked-LM loss")
ax1.set_title(f"tiny BERT, sequences of {T_exp} tokens")
ax1.legend()
learned_table = runs["learned"][0].params["bert." + POS]  # (T, H)
ax2.imshow(cosine_similarity(learned_table), cmap="viridis", vmin=-1, vmax=1)
ax2.set_title(f"the tiny model's learned positions after {steps} steps:\ncosine similarity")
ax2.set_xlabel("position")
ax2.set_ylabel("position")
fig.tight_layout()
plt.show()

best = min(final["learned"], final["sinusoidal"])
if final["none"] - best > 0.02:
    print(f"with positions the loss is lower by {final['none'] - best:.3f}: word order already helps this model")
else:
    print(f"no position information is not worse ({final['none'] - best:+.3f}): this model does not use word "
          f"order yet")
print(f"sinusoidal minus learned: {final['sinusoidal'] - final['learned']:+.3f}")

# %% [markdown]
# The dashed line is what a model gets by knowing only how common each token is. Curves that go below it have
# learned to use the context.
#
# What this can and cannot show. A model without positions still sees *which* tokens surround a mask, only not
# where; the "none" curve says how far that alone gets. The cell above prints whether the models with positions
# got ahead of it. It is one tiny model, one seed, one data set and a short training (in quick mode a handful of
# steps, where the numbers mean nothing): a model this small, trained this briefly, may not have learned to use
# word order yet, and then no position scheme can help it. The experiment cannot show what happens with long
# sequences, with real pre-training (chapter 6), or at positions never seen in training, where learned and
# sinusoidal tables differ most. And a difference of a few hundredths between single runs may be seed noise,
# which this cell does not measure: run it again with another seed before you believe it.
#
# ## Summary
#
# - BERT's input vector is word + position + segment, then LayerNorm (and dropout in training).
# - Without positions a transformer cannot tell word order: shuffled input gives the same vectors, shuffled.
# - LayerNorm's backward has three paths from each input, directly, through the mean and through the spread:
#   $de = r\,(g - \operatorname{mean}(g) - \hat e \odot \operatorname{mean}(g \odot \hat e))$.
# - The backward pass is LayerNorm's backward, then scatter-adds into the three tables (none into [PAD]'s row);
#   our plain NumPy version equals minibert's layer, finite differences and Hugging Face's `BertEmbeddings`.
# - Learned and sinusoidal positions both give nearby positions similar vectors.

# %% [markdown]
# ## Exercises
#
# 1. Write `sinusoidal_table(P, H)`, the $(P, H)$ sinusoidal table above, from the formula. The test also checks
#    its key property: the dot product of $PE_p$ and $PE_{p+k}$ depends only on $k$.
# 2. Write `layernorm_dx(dy, ehat, rstd, gamma)`: the gradient of LayerNorm with respect to its input, given the
#    upstream gradient, the normalised input $\hat e$ and $r$ of the forward. The test compares it with finite
#    differences.
# 3. Write `word_table_grad(ids, de, V, pad_id)`: the gradient of the $(V, H)$ word table from the gradient
#    `de` $(B, T, H)$ of the summed embeddings, without `np.add.at` (hint: a loop, or `np.bincount` per column, or
#    a one-hot matrix product). Repeated ids add up, [PAD]'s row stays zero.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def sinusoidal_table(P, H):
    raise NotImplementedError


def test_sinusoidal_table(sinusoidal_table):
    pe = sinusoidal_table(20, 8)
    expect("sinusoidal_table(20, 8).shape", np.shape(pe), (20, 8))
    expect("row 0 (position 0: sin 0 = 0, cos 0 = 1)", pe[0], [0, 1, 0, 1, 0, 1, 0, 1], atol=1e-12)
    expect("pe[3, 2] = sin(3 / 10000^(2/8))", pe[3, 2], np.sin(3 / 10000 ** (2 / 8)), atol=1e-12)
    expect("pe[3, 3] = cos(3 / 10000^(2/8))", pe[3, 3], np.cos(3 / 10000 ** (2 / 8)), atol=1e-12)
    dots = [pe[p] @ pe[p + 5] for p in range(15)]
    expect("PE_p . PE_(p+5) for p = 0..14 (depends on the offset only)", dots, np.full(15, dots[0]), atol=1e-9)


exercise(1, sinusoidal_table, "03_embeddings", test_sinusoidal_table)


# %%
def layernorm_dx(dy, ehat, rstd, gamma):
    raise NotImplementedError


def test_layernorm_dx(layernorm_dx):
    rng = np.random.default_rng(5)
    e, gamma, dy = rng.normal(size=(2, 3, 6)), rng.normal(size=6), rng.normal(size=(2, 3, 6))

    def forward():
        mu = e.mean(-1, keepdims=True)
        rstd = 1 / np.sqrt(e.var(-1, keepdims=True) + 1e-12)
        return (e - mu) * rstd, rstd

    ehat, rstd = forward()
    numeric = numerical_gradient(lambda: float((forward()[0] * gamma * dy).sum()), e)
    expect("layernorm_dx against finite differences", layernorm_dx(dy, ehat, rstd, gamma), numeric, atol=1e-7)


exercise(2, layernorm_dx, "03_embeddings", test_layernorm_dx)


# %%
def word_table_grad(ids, de, V, pad_id):
    raise NotImplementedError


def test_word_table_grad(word_table_grad):
    rng = np.random.default_rng(6)
    ids = np.array([[3, 3, 1, 0], [2, 3, 0, 0]])
    de = rng.normal(size=(2, 4, 5))
    g = word_table_grad(ids, de, 6, pad_id=0)
    expect("word_table_grad(...).shape", np.shape(g), (6, 5))
    expect("row 3 (id 3 three times: the rows add up)", g[3], de[0, 0] + de[0, 1] + de[1, 1], atol=1e-12)
    expect("row 0 ([PAD]) and row 4 (not in the batch)", g[[0, 4]], np.zeros((2, 5)))
    ids = rng.integers(0, 50, size=(4, 30))  # many repeats, some [PAD]
    de = rng.normal(size=(4, 30, 5))
    reference = np.zeros((50, 5))
    scatter_add_rows(reference, ids[ids != 0], de[ids != 0])  # minibert's scatter-add
    expect("word_table_grad against minibert's scatter-add", word_table_grad(ids, de, 50, pad_id=0), reference,
           atol=1e-12)


exercise(3, word_table_grad, "03_embeddings", test_word_table_grad)
