# %% [markdown]
# # 1. What BERT is
#
# BERT is a stack of transformer **encoder** layers trained to fill in hidden words. In this chapter you will
#
# - see how BERT differs from the other two transformer families (decoder-only like GPT, encoder-decoder like
#   T5) by the one thing that separates them: which tokens each token may look at, drawn as attention masks;
# - count BERT's parameters twice, by formula from the config and from the arrays of real models, for every
#   preset from tiny to BERT-large, and see where the different totals you may read for one model come from;
# - push one sentence through a real (untrained) mini BERT and print the shape of every tensor on the way.
#
# Shapes use the letters of the whole course: B batch, T tokens, H hidden width, A attention heads,
# D = H / A head width, F feed-forward width, V vocabulary size.

# %%
import os

# NumPy's exact GELU rather than the numba-compiled one: compiling it takes longer than this chapter's one forward
# pass (minibert/layers/gelu_select.py).
os.environ.setdefault("MINIBERT_NUMBA", "0")

import inspect
import warnings

import matplotlib.pyplot as plt
import numpy as np

import minibert
from minibert import BertConfig, BertForMaskedLM, BertModel, BertForPreTraining
from minibert.data.builtin import load_wiki_summaries
from minibert.data.masking import Masker
from minibert.course import QUICK, check, exercise, quick

print("quick mode" if QUICK else "full mode", "| minibert", minibert.__version__)

# %% [markdown]
# ## Three families of transformer, told apart by their attention masks
#
# Every transformer layer lets each token gather information from other tokens (attention, chapter 4). What a
# token is *allowed* to see is a boolean matrix, the attention mask: row $i$ says which positions token $i$ may
# read.
#
# - **Encoder-only (BERT).** Every token sees every token, left and right: a full mask. The model reads a whole
#   sentence at once, so it is good at *understanding* text (classification, tagging, search), and it is trained
#   by hiding some words and asking for them back (masked language modelling).
# - **Decoder-only (GPT).** Token $i$ sees tokens $0..i$ only: a lower-triangular, *causal* mask. It can be
#   trained to predict the next token at every position at once, and it generates text one token at a time.
# - **Encoder-decoder (the original Transformer, T5).** An encoder with a full mask reads the input; a decoder
#   with a causal mask writes the output, and *cross-attention* lets every output token read every input token
#   (a $T_\text{out} \times T_\text{in}$ mask).
#
# (In a real batch BERT's mask also hides the padding added to short sentences: chapter 4.)
#
# The cell below makes these masks as arrays and draws them.

# %%
T_in, T_out = 6, 4
full = np.ones((T_in, T_in), dtype=bool)  # (T, T) encoder self-attention: everyone sees everyone
causal = np.tril(np.ones((T_in, T_in), dtype=bool))  # (T, T) decoder self-attention: i sees 0..i
causal_out = np.tril(np.ones((T_out, T_out), dtype=bool))  # (T_out, T_out) the decoder's own causal mask
cross = np.ones((T_out, T_in), dtype=bool)  # (T_out, T_in) each output token reads the whole input

panels = [("encoder-only (BERT)\nself-attention: full", full),
          ("decoder-only (GPT)\nself-attention: causal", causal),
          ("encoder-decoder (T5)\ndecoder self-attention: causal", causal_out),
          ("encoder-decoder (T5)\ncross-attention: output reads input", cross)]
fig, axes = plt.subplots(1, 4, figsize=(13, 3.6), gridspec_kw={"width_ratios": [6, 6, 4, 6]})
for ax, (title, mask) in zip(axes, panels):
    ax.imshow(mask, cmap="Blues", vmin=0, vmax=1.3)
    ax.set_title(title, fontsize=9)
    ax.set_xticks(range(mask.shape[1]))
    ax.set_yticks(range(mask.shape[0]))
    ax.set_xlabel("key: position read")
    ax.set_ylabel("query: position reading")
    for (i, j), allowed in np.ndenumerate(mask):
        ax.text(j, i, "1" if allowed else "0", ha="center", va="center", fontsize=7,
                color="white" if allowed else "grey")
fig.suptitle("Who may attend to whom (1 = allowed); the encoder of T5 uses the full mask on the left")
fig.tight_layout()
plt.show()

print(f"a BERT token reads {full.sum(axis=1).tolist()} positions; a GPT token reads {causal.sum(axis=1).tolist()}")

# %% [markdown]
# BERT gives up generation (it has no left-to-right order to write in) in exchange for context from both sides
# at every layer. The price of the full mask at training time: if every token can see every token, predicting a
# token is trivial unless it is hidden. So BERT hides a share of the tokens (replacing most of them by `[MASK]`)
# and learns only from those positions; the cell below prints the share minibert's masking uses. Chapter 6 does
# that pre-training.

# %%
share = inspect.signature(Masker).parameters["mlm_probability"].default
print(f"masked-LM training hides {share:.0%} of the tokens (minibert.data.masking.Masker's default)")

# %% [markdown]
# ## The sizes: mini, base, large
#
# `minibert.BertConfig` has named presets. BERT-base and BERT-large are the sizes of the original paper; mini is
# the model this course trains on a laptop CPU.

# %%
names = ["tiny", "mini", "small", "base", "large"]
configs = {name: BertConfig.preset(name) for name in names}
print(f"{'preset':<7}{'L layers':>9}{'H':>6}{'A heads':>8}{'D':>5}{'F':>6}{'V':>7}{'positions':>10}")
for name, c in configs.items():
    print(f"{name:<7}{c.num_hidden_layers:>9}{c.hidden_size:>6}{c.num_attention_heads:>8}{c.head_size:>5}"
          f"{c.intermediate_size:>6}{c.vocab_size:>7}{c.max_position_embeddings:>10}")

# %% [markdown]
# ### Counting parameters by formula
#
# Every parameter of BERT belongs to one of three parts. With $P$ positions and 2 segment types:
#
# - **embeddings**: a word table $V \times H$, a position table $P \times H$, a segment table $2 \times H$ and a
#   LayerNorm (scale and shift, $2H$): $(V + P + 2)H + 2H$;
# - **each encoder layer**: four $H \times H$ projections with biases (query, key, value, attention output):
#   $4(H^2 + H)$; a feed-forward block $H \to F \to H$: $(FH + F) + (HF + H)$; two LayerNorms: $4H$. In all
#   $4H^2 + 2FH + 9H + F$;
# - **heads**: the masked-LM head transforms with an $H \times H$ dense layer and a LayerNorm, then multiplies by
#   the *word table itself* (the output weights are *tied* to the input embeddings) and adds a bias of $V$:
#   $H^2 + H + 2H + V$. Pre-training with next-sentence prediction adds a pooler ($H^2 + H$) and a 2-way
#   classifier ($2H + 2$).

# %%
def embeddings_count(c):
    return (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * c.hidden_size + 2 * c.hidden_size


def layer_count(c):
    H, F = c.hidden_size, c.intermediate_size
    return 4 * (H * H + H) + (F * H + F) + (H * F + H) + 4 * H


def mlm_head_count(c):
    H = c.hidden_size
    return H * H + H + 2 * H + c.vocab_size  # transform dense, LayerNorm, decoder bias (weight tied)


def pooler_nsp_count(c):
    H = c.hidden_size
    return (H * H + H) + (2 * H + 2)


def masked_lm_count(c):
    return embeddings_count(c) + c.num_hidden_layers * layer_count(c) + mlm_head_count(c)


# %% [markdown]
# ### ...and from the arrays of real models
#
# A minibert model keeps its parameters in a dict `params`, name -> NumPy array, under Hugging Face's names. The
# mini model is built with its random initial weights; base and large are built with `init_weights=False`
# (the arrays exist, filled with zeros, so that a count does not wait for BERT-large's random draws). Summing
# the arrays' sizes by the part of the model their names say must give the formula's numbers exactly.

# %%
def part_of(name):
    if ".embeddings." in name or name.startswith("embeddings."):
        return "embeddings"
    if ".encoder.layer." in name or name.startswith("encoder.layer."):
        return "layers"
    return "heads"


real = {}
for name, c in configs.items():
    model = BertForMaskedLM(c, init_weights=(name == "mini"))
    counts = {"embeddings": 0, "layers": 0, "heads": 0}
    for pname, array in model.params.items():
        counts[part_of(pname)] += array.size
    real[name] = counts
    layer0 = sum(a.size for n, a in model.params.items() if ".encoder.layer.0." in n)
    check(f"{name}: one layer, formula = arrays", layer_count(c), layer0, rtol=0, atol=0)
    check(f"{name}: embeddings, formula = arrays", embeddings_count(c), counts["embeddings"], rtol=0, atol=0)
    check(f"{name}: {c.num_hidden_layers} layers, formula = arrays", c.num_hidden_layers * layer_count(c),
          counts["layers"], rtol=0, atol=0)
    check(f"{name}: MLM head, formula = arrays", mlm_head_count(c), counts["heads"], rtol=0, atol=0)
    check(f"{name}: total, formula = num_parameters()", masked_lm_count(c), model.num_parameters(), rtol=0, atol=0)
    del model

for name in names:
    print(f"{name:<6} BertForMaskedLM: {sum(real[name].values()):>12,} parameters")

# %% [markdown]
# ### Which "mini" count is right?
#
# A model of mini's shape is described with different totals depending on what is counted. The model used to
# pre-train with the next-sentence task (`BertForPreTraining`) adds the pooler and the NSP classifier. A bare
# encoder (`BertModel`) has the pooler but no MLM head. And an implementation that does *not* tie the output
# weights to the word table stores a second $V \times H$ matrix. Each is counted here from a real model, except
# the untied one, which minibert does not build (its output weights are always tied): that is the masked-LM count
# plus $VH$.

# %%
mini = configs["mini"]
untied_extra = mini.vocab_size * mini.hidden_size  # a decoder matrix of its own
ways = {
    "BertForMaskedLM\n(tied, what MLM trains)": BertForMaskedLM(mini).num_parameters(),
    "BertForPreTraining\n(+ pooler + NSP)": BertForPreTraining(mini).num_parameters(),
    "BertModel\n(encoder + pooler)": BertModel(mini).num_parameters(),
    "untied decoder\n(MLM + a second V x H)": BertForMaskedLM(mini).num_parameters() + untied_extra,
}
check("BertForPreTraining = MLM + pooler + NSP", ways["BertForPreTraining\n(+ pooler + NSP)"],
      masked_lm_count(mini) + pooler_nsp_count(mini), rtol=0, atol=0)
for label, n in ways.items():
    print(f"{label.replace(chr(10), ' '):<55} {n:>10,}  ({n / 1e6:.2f}M)")
share = real["mini"]["embeddings"] / sum(real["mini"].values())
print(f"mini: {share:.0%} of the masked-LM parameters are the embedding tables")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [5, 4]})
colours = {"embeddings": "#4c72b0", "layers": "#dd8452", "heads": "#55a868"}
bottom = np.zeros(len(names))
for part, colour in colours.items():
    values = np.array([real[n][part] / sum(real[n].values()) for n in names])
    ax1.bar(names, values, bottom=bottom, color=colour, label=part)
    bottom += values
for i, n in enumerate(names):
    ax1.text(i, 1.02, f"{sum(real[n].values()) / 1e6:.1f}M", ha="center", fontsize=9)
ax1.set_ylim(0, 1.25)
ax1.set_ylabel("share of the parameters")
ax1.set_title("BertForMaskedLM by part (total above each bar)")
ax1.legend(loc="upper center", ncol=3, fontsize=8, frameon=False)
labels, values = list(ways), np.array(list(ways.values()))
ax2.barh(labels, values / 1e6, color=["#4c72b0", "#8172b3", "#937860", "#c44e52"])
for y, v in enumerate(values):
    ax2.text(v / 1e6 + 0.05, y, f"{v:,}", va="center", fontsize=8)
ax2.invert_yaxis()
ax2.set_xlim(0, values.max() / 1e6 * 1.35)
ax2.set_xlabel("millions of parameters")
ax2.set_title("mini, counted four ways")
fig.tight_layout()
plt.show()

# %% [markdown]
# The embeddings dominate the small models: the word table $VH$ does not shrink with depth. In base and large the
# layers take over, since each layer grows like $H^2$ and there are many of them.

# %% [markdown]
# ## One sentence through the real mini model
#
# To feed text to the model we need a tokenizer (chapter 2 builds one); here one is trained in a few seconds
# on Wikipedia summaries that come with minibert. The model is freshly initialised, so its predictions mean
# nothing yet: what matters here are the shapes. `model.eval()` switches dropout off.

# %%
docs = load_wiki_summaries()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # a small slice may give fewer than 8192 tokens: fine for this demo
    tokenizer = minibert.train_wordpiece([d["extract"] for d in docs[:quick(4000, 600)]],
                                         vocab_size=mini.vocab_size, progress=False)
print(tokenizer)

sentence = "The capital of France is [MASK]."
enc = tokenizer.encode(sentence)
print("text      ", repr(sentence))
print("tokens    ", enc.tokens)
input_ids = np.array([enc.input_ids])  # (B, T)
print("input_ids ", input_ids.shape, "(B, T)", input_ids[0].tolist())

# %%
model = BertForMaskedLM(mini, seed=0).eval()
out = model(input_ids, output_hidden_states=True, output_attentions=True)
B, T = input_ids.shape
H, A, V = mini.hidden_size, mini.num_attention_heads, mini.vocab_size
word_table = model.params["bert.embeddings.word_embeddings.weight"]  # (V, H)
print(f"word table        {word_table.shape}  (V, H)")
print(f"looked-up vectors {word_table[input_ids].shape}  (B, T, H)")
print(f"embeddings out    {out.hidden_states[0].shape}  (B, T, H)   word + position + segment, LayerNorm")
for i in range(mini.num_hidden_layers):
    print(f"layer {i}: attention {out.attentions[i].shape} (B, A, T, T), output {out.hidden_states[i + 1].shape} "
          f"(B, T, H)")
print(f"MLM logits        {out.logits.shape}  (B, T, V)")
assert out.hidden_states[0].shape == (B, T, H) and out.logits.shape == (B, T, V)
assert all(a.shape == (B, A, T, T) for a in out.attentions)
check("each attention row sums to 1", out.attentions[0].sum(axis=-1), np.ones((B, A, T)))

mask_at = enc.tokens.index("[MASK]")
top = np.argsort(out.logits[0, mask_at])[::-1][:5]
print(f"untrained guesses for [MASK] at position {mask_at}: {tokenizer.convert_ids_to_tokens(top.tolist())}")

# %% [markdown]
# Every layer keeps the shape $(B, T, H)$: one vector of width $H$ per token, refined layer after layer. Only at
# the very end does the MLM head turn each vector into $V$ scores, one per vocabulary entry. The untrained
# model's guesses for `[MASK]` are random tokens; after pre-training (chapter 6) they become words.
#
# ## Summary
#
# - BERT is an encoder-only transformer: full attention in both directions, trained by masked language modelling.
# - Its parameters are embeddings $(V + P + 2)H + 2H$, layers $L(4H^2 + 2FH + 9H + F)$ and a small MLM head whose
#   output matrix is the word table; the formula equals the real models' array count for every preset.
# - A sentence becomes ids $(B, T)$, then vectors $(B, T, H)$ through every layer, then scores $(B, T, V)$.

# %% [markdown]
# ## Exercises
#
# 1. Write `causal_mask(T)`: the $(T, T)$ boolean mask of a decoder-only model (True where position $i$ may read
#    position $j$).
# 2. Write `parameters_for(L, H, F, V, P)`: the number of parameters of a `BertForMaskedLM` with those sizes
#    (4 heads, 2 segment types). The test compares it with real minibert models.
# 3. Write `embedding_share(c)`: the fraction of a `BertForMaskedLM`'s parameters that sit in its embeddings, for a
#    `BertConfig` `c`. At what width would mini's layers overtake its embeddings? (Try it.)

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def causal_mask(T):
    raise NotImplementedError


def test_causal_mask(causal_mask):
    m = causal_mask(5)
    expect("causal_mask(5).dtype", str(np.asarray(m).dtype), "bool")
    # row i (the query) may read columns j <= i: the lower triangle, diagonal included
    expect("causal_mask(5)", m, [[j <= i for j in range(5)] for i in range(5)])
    expect("causal_mask(1)", causal_mask(1), [[True]])


exercise(1, causal_mask, "01_what_bert_is", test_causal_mask)


# %%
def parameters_for(L, H, F, V, P):
    raise NotImplementedError


def test_parameters_for(parameters_for):
    for L, H, F, V, P in [(1, 8, 16, 50, 10), (2, 12, 20, 30, 7), (3, 192, 768, 8192, 64)]:
        c = BertConfig(num_hidden_layers=L, hidden_size=H, num_attention_heads=4, intermediate_size=F,
                       vocab_size=V, max_position_embeddings=P)
        expect(f"parameters_for{(L, H, F, V, P)}", parameters_for(L, H, F, V, P),
               BertForMaskedLM(c, init_weights=False).num_parameters())


exercise(2, parameters_for, "01_what_bert_is", test_parameters_for)


# %%
def embedding_share(c):
    raise NotImplementedError


def test_embedding_share(embedding_share):
    for name in ("tiny", "mini", "base"):
        c = BertConfig.preset(name)
        params = BertForMaskedLM(c, init_weights=False).params
        emb = sum(a.size for n, a in params.items() if ".embeddings." in n)
        expect(f"embedding_share({name})", embedding_share(c), emb / sum(a.size for a in params.values()),
               atol=1e-12)


exercise(3, embedding_share, "01_what_bert_is", test_embedding_share)
