# %% [markdown]
# # 9. Descendants: RoBERTa, ALBERT, DistilBERT, ELECTRA (and DeBERTa)
#
# BERT's encoder outlived its recipe. Its best-known descendants keep the layer you built in chapter 5 and change
# one thing around it each:
#
# | model | what it changes |
# |---|---|
# | RoBERTa (Liu et al., 2019) | the recipe (no next-sentence task, more data, dynamic masking) and positions that skip padding |
# | pre-LN (RoBERTa-PreLayerNorm) | LayerNorm *before* attention and feed-forward, one more at the end |
# | ALBERT (Lan et al., 2019) | narrow embedding tables projected up, one layer's weights shared by every layer |
# | DistilBERT (Sanh et al., 2019) | half the layers, no token types, no pooler, trained to copy a teacher |
# | ELECTRA (Clark et al., 2020) | a small generator fills the masks; the model learns to spot replaced tokens, at every position |
# | DeBERTa (He et al., 2020) | attention scores that also read *relative* positions; no absolute position table |
#
# DeBERTa is the newest switch: this chapter includes it wherever minibert's configs offer it (section 1 checks,
# and says so when they do not yet).
#
# minibert builds each one from the same encoder by a config switch. In this chapter you will find each switch and
# the lines of minibert that read it, count each model's parameters from its config, rebuild ELECTRA's new piece
# (replaced-token detection, forward and backward) in NumPy and check it against minibert, finite differences and
# `transformers`, and train them all on the same small CPU budget.

# %%
import dataclasses
import inspect
import re
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from minibert.course import check, exercise, numerical_gradient, quick, stamp, torch_or_none

import minibert
from minibert import (
    AdamW,
    BertConfig,
    DistilBertConfig,
    clip_grad_norm,
    train_wordpiece,
)
from minibert.config import FAMILY_PRESETS, MODEL_TYPES, PRESET_NAMES
from minibert.data.builtin import load_wiki_summaries
from minibert.data.masking import Masker
from minibert.layers.gelu_select import use_numba_gelu
from minibert.layers.embedding import roberta_position_ids
from minibert.layers.heads import RTD, rtd_head_backward, rtd_head_forward
from minibert.layers.loss import (
    IGNORE_INDEX,
    bce_with_logits_backward,
    bce_with_logits_forward,
)
from minibert.models.auto import model_class
from minibert.models.base import forward_only
from minibert.models.electra import ElectraForPreTraining, generator_config
from minibert.models.electra_pretraining import ElectraPretrainer, replace_masked

CHAPTER = "09_descendants"  # for the stamp on each figure of timings
use_numba_gelu(False)  # NumPy's exact GELU, as `minibert pretrain` runs it (numba's would compile first, ~seconds)
SOURCE = Path(minibert.__file__).resolve().parent  # minibert's own source files, read below


print(stamp(CHAPTER))

# %% [markdown]
# ## 1. The switches, as config differences
#
# Each descendant of the mini is a `BertConfig` with a few fields changed (`minibert/config.py`, `FAMILY_PRESETS`).
# DistilBERT has its own config class, since its `config.json` names the fields differently; ELECTRA is two
# models, a discriminator of the mini's size and a generator a quarter as wide. The differences below are computed
# from the configs, with the properties the code reads (`roberta_positions`, `shared_layers`, ...).

# %%
mini = BertConfig.preset("mini")
SWITCHES = ("model_type", "roberta_positions", "layer_norm_position", "shared_layers", "embedding_width",
            "mlm_head_act", "has_token_types", "attention_output_dropout")


def described(cfg):
    """A config's fields and switches; a switch a config class lacks has BERT's value (True: it has the part)."""
    fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name != "extra"}
    return {**fields, **{s: getattr(cfg, s, True) for s in SWITCHES}}


def difference(base, other):
    a, b = described(base), described(other)
    return {k: (a.get(k), b[k]) for k in b if a.get(k) != b[k]}


deberta_presets = [n for n in PRESET_NAMES if "deberta" in n]  # minibert may offer DeBERTa: then it is included
deberta_label = lambda n: "DeBERTa" if len(deberta_presets) == 1 else f"DeBERTa ({n})"
descendants = {
    "RoBERTa": BertConfig.preset("roberta-mini"),
    "pre-LN": BertConfig.preset("preln-mini"),
    "ALBERT": BertConfig.preset("albert-mini"),
    "DistilBERT": DistilBertConfig.from_bert(mini, num_hidden_layers=(mini.num_hidden_layers + 1) // 2),
    "ELECTRA generator": generator_config(mini),
    **{deberta_label(n): BertConfig.preset(n) for n in deberta_presets},
}
for name, cfg in descendants.items():
    print(f"{name} against the mini:")
    for key, (was, now) in difference(mini, cfg).items():
        print(f"    {key:<28} {was!s:>10} -> {now}")
if not deberta_presets:
    known = [t for t in MODEL_TYPES if "deberta" in t]
    state = f"model_type {known[0]} exists, but no preset of the mini" if known else "not in this minibert yet"
    print(f"DeBERTa: {state} (model types: {', '.join(MODEL_TYPES)}); this chapter adds it by itself once a preset "
          f"named *deberta* exists.")

# %% [markdown]
# ## 2. The lines that read each switch
#
# A switch is only as real as the code that reads it. The cell below searches minibert's source (the installed
# files, so it shows the code you run) for every line that reads each switch.

# %%
def lines_reading(attribute, folders=("models", "layers"), pattern=None):
    """file:line and text of each code line of minibert/<folders> that reads `<something>.attribute` (or that
    matches the regular expression `pattern`, case-insensitive)."""
    reads = rf"\w\.{attribute}\b|getattr\([^)]*\"{attribute}\""  # config.shared_layers, getattr(cfg, "...")
    pattern = re.compile(pattern, re.IGNORECASE) if pattern else re.compile(reads)
    found = []
    for folder in folders:
        for path in sorted((SOURCE / folder).glob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#")[0]
                if pattern.search(code):
                    found.append(f"minibert/{folder}/{path.name}:{number}: {line.strip()}")
    return found


for who, attributes in (("RoBERTa", ["roberta_positions", "mlm_head_act"]), ("pre-LN", ["layer_norm_position"]),
                        ("ALBERT", ["shared_layers", "embedding_width"]),
                        ("DistilBERT", ["has_token_types", "attention_output_dropout"])):
    print(f"--- {who}")
    for attribute in attributes:
        lines = lines_reading(attribute)
        assert lines, f"no line of minibert reads .{attribute} any more: this section needs updating"
        for line in lines:
            print("   ", line)
if deberta_presets:
    print("--- DeBERTa: the lines that name it")
    for line in lines_reading(None, pattern="deberta"):
        print("   ", line)

# %% [markdown]
# Some switches are short functions. Here are RoBERTa's positions, ALBERT's sharing (every layer reads layer 0's
# weights), ELECTRA's generator size and its corrupted input, read from minibert (not copied):

# %%
from minibert.models.bert import BertEncoder

print(inspect.getsource(roberta_position_ids))
print(inspect.getsource(BertEncoder.layer_prefix))
print(inspect.getsource(generator_config))
print(inspect.getsource(replace_masked))

# %% [markdown]
# DistilBERT changes almost nothing in the computation (no token types, no dropout after the attention's output)
# but renames every parameter; minibert runs BERT's code on DistilBERT's arrays through a table:

# %%
from minibert.models.distilbert import LAYER_NAMES

for bert_name, distil_name in LAYER_NAMES.items():
    print(f"    bert: encoder.layer.N.{bert_name:<30} distilbert: transformer.layer.N.{distil_name}")

# %% [markdown]
# ## 3. Parameters, from the configs
#
# Build each model of section 1 (without drawing weights) and count its parameters, split into the embedding
# tables, the encoder layers and the heads. ALBERT's two changes both cut parameters: the word table is $V \times E$
# instead of $V \times H$ (plus an $E \times H$ projection), and $L$ layers store one layer's weights.

# %%
def part(name):
    if "embeddings." in name or "embedding_hidden_mapping" in name or "embeddings_project" in name:
        return "embeddings"
    if ".layer." in name or "encoder" in name or name.startswith(("LayerNorm", "bert.LayerNorm")):
        return "layers"
    return "heads"


def mlm_model(cfg, **kw):
    """The masked-LM model of a config: BertForMaskedLM, DistilBertForMaskedLM, ... (minibert picks by model_type)."""
    return model_class(cfg, "mlm")(cfg, init_weights=False, **kw)


built = {"BERT (mini)": mlm_model(mini), **{n: mlm_model(c) for n, c in descendants.items()
                                            if not n.startswith("ELECTRA")}}
built["ELECTRA (both)"] = ElectraPretrainer(mini, generator_config(mini), init_weights=False)
parts = {}
for name, model in built.items():
    split = {"embeddings": 0, "layers": 0, "heads": 0}
    for key, array in model.params.items():
        split[part(key)] += array.size
    assert sum(split.values()) == model.num_parameters(), name
    parts[name] = split
    print(f"{name:<22} {model.num_parameters():>10,} parameters  "
          + "  ".join(f"{k} {v:>9,}" for k, v in split.items()))

# %%
fig, ax = plt.subplots(figsize=(9, 3.6))
left = np.zeros(len(parts))
for key, colour in (("embeddings", "tab:blue"), ("layers", "tab:orange"), ("heads", "tab:green")):
    values = np.array([p[key] for p in parts.values()]) / 1e6
    ax.barh(list(parts), values, left=left, color=colour, label=key)
    left += values
ax.invert_yaxis()
ax.set_xlabel("millions of parameters")
ax.set_title(f"the mini's descendants, counted from their configs\n{stamp(CHAPTER)}", fontsize=9)
ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 4. ELECTRA's new piece, rebuilt: replaced-token detection
#
# A generator (a small masked LM) fills each masked position with a token **sampled** from its softmax. Where the
# sample differs from the original, the token is *replaced* ($y = 1$); a correct guess counts as original ($y = 0$).
# The discriminator reads the corrupted text and scores every token with a small head, then a sigmoid
# binary cross-entropy over the $N$ real (non-padding) tokens:
#
# $$z = hW_1^\top + b_1, \quad a = \mathrm{GELU}(z), \quad x = a w_2^\top + b_2, \qquad
#   \ell = \frac{1}{N} \sum_i \big[\max(x_i, 0) - x_i y_i + \log(1 + e^{-|x_i|})\big]$$
#
# The loss's form never overflows, and its derivative is short: $\partial \ell / \partial x_i = (\sigma(x_i) - y_i)/N$.
# From there back through the head it is chapter 5's linear and GELU backward.

# %%
from math import erf, pi, sqrt

erf_ = np.vectorize(erf)


def rtd_forward(h, y, active, W1, b1, w2, b2):
    # h (B, T, H) hidden states; y (B, T) 1 = replaced; active (B, T) 1 = a real token
    z = h @ W1.T + b1  # (B, T, H)
    phi = 0.5 * (1 + erf_(z / sqrt(2)))  # (B, T, H) the normal CDF: GELU(z) = z phi(z)
    a = z * phi  # (B, T, H)
    x = a @ w2.T + b2  # (B, T, 1)
    x = x[..., 0]  # (B, T) one logit per token
    n = active.sum()
    loss = ((np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))) * active).sum() / n
    return loss, (h, y, active, z, phi, a, x, n)


def rtd_backward(cache, W1, w2):
    h, y, active, z, phi, a, x, n = cache
    dx = (1 / (1 + np.exp(-x)) - y) * active / n  # (B, T)
    dw2 = dx.reshape(1, -1) @ a.reshape(-1, a.shape[-1])  # (1, H)
    db2 = np.array([dx.sum()])  # (1,)
    da = dx[..., None] * w2[0]  # (B, T, H)
    dz = da * (phi + z * np.exp(-z * z / 2) / sqrt(2 * pi))  # (B, T, H) GELU' = phi + z * normal pdf
    dW1 = dz.reshape(-1, dz.shape[-1]).T @ h.reshape(-1, h.shape[-1])  # (H, H)
    db1 = dz.sum((0, 1))  # (H,)
    dh = dz @ W1  # (B, T, H)
    return dh, dW1, db1, dw2, db2


g = np.random.default_rng(0)
Bx, Tx, Hx = 2, 5, 8
h = g.standard_normal((Bx, Tx, Hx))  # (B, T, H) float64
yx = (g.random((Bx, Tx)) < 0.3).astype(np.float64)  # (B, T)
active = np.ones((Bx, Tx))  # (B, T)
active[1, 3:] = 0  # the second sequence has two padding tokens
W1, b1 = g.standard_normal((Hx, Hx)) * 0.3, g.standard_normal(Hx) * 0.1  # (H, H), (H,)
w2, b2 = g.standard_normal((1, Hx)) * 0.3, g.standard_normal(1) * 0.1  # (1, H), (1,)
loss, cache = rtd_forward(h, yx, active, W1, b1, w2, b2)
dh, dW1, db1, dw2, db2 = rtd_backward(cache, W1, w2)

# minibert's head and loss on the same numbers, under ELECTRA's Hugging Face names
cfg_x = BertConfig(vocab_size=50, hidden_size=Hx, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
params = {RTD + "dense.weight": W1, RTD + "dense.bias": b1, RTD + "dense_prediction.weight": w2,
          RTD + "dense_prediction.bias": b2}
grads = {k: np.zeros_like(v) for k, v in params.items()}
logits, c_head = rtd_head_forward(h, params, cfg_x)  # (B, T)
mb_loss, c_bce = bce_with_logits_forward(logits.reshape(-1), yx.reshape(-1), active.reshape(-1) == 1)
mb_dh = rtd_head_backward(bce_with_logits_backward(c_bce).reshape(Bx, Tx), c_head, params, grads, cfg_x)
check("RTD loss against minibert", loss, mb_loss, rtol=1e-12, atol=1e-14)
check("dh against minibert", dh, mb_dh, rtol=1e-10, atol=1e-12)
check("dW1 against minibert", dW1, grads[RTD + "dense.weight"], rtol=1e-10, atol=1e-12)
check("dw2 against minibert", dw2, grads[RTD + "dense_prediction.weight"], rtol=1e-10, atol=1e-12)
f = lambda: rtd_forward(h, yx, active, W1, b1, w2, b2)[0]
check("dW1 by finite differences", dW1, numerical_gradient(f, W1), rtol=1e-6, atol=1e-9)
check("dh by finite differences", dh, numerical_gradient(f, h), rtol=1e-6, atol=1e-9)
check("db2 by finite differences", db2, numerical_gradient(f, b2), rtol=1e-6, atol=1e-9)
print(f"padding gets no gradient: largest |dh| at padded tokens {np.abs(dh[1, 3:]).max():.1e}")

# %% [markdown]
# The same head, inside minibert's whole discriminator, against `transformers`' `ElectraForPreTraining` with the
# same weights; then our rebuild on minibert's last hidden state gives minibert's loss.

# %%
torch = torch_or_none()
disc_cfg = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=16, model_type="electra")
disc = ElectraForPreTraining(disc_cfg, seed=0, dtype=np.float64).eval()
ids = g.integers(5, 60, (2, 7))  # (B, T)
mask = np.ones((2, 7), np.int64)  # (B, T)
mask[1, 5:] = 0
replaced = (g.random((2, 7)) < 0.3).astype(np.int64)  # (B, T)
out = disc(ids, attention_mask=mask, labels=replaced, output_hidden_states=True)
ours, _ = rtd_forward(out.hidden_states[-1], replaced, mask, *(disc.params[RTD + n] for n in (
    "dense.weight", "dense.bias", "dense_prediction.weight", "dense_prediction.bias")))
check("our RTD loss on minibert's hidden states", ours, out.loss, rtol=1e-12, atol=1e-14)
if torch is not None:
    with warnings.catch_warnings():  # (its progress bars warn about a notebook without ipywidgets)
        warnings.simplefilter("ignore")
        import transformers
    hf_cfg = transformers.ElectraConfig(vocab_size=60, embedding_size=16, hidden_size=16, num_hidden_layers=2,
                                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=16,
                                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    hf = transformers.ElectraForPreTraining(hf_cfg).double().eval()
    missing, unexpected = hf.load_state_dict({k: torch.tensor(v) for k, v in disc.params.items()}, strict=False)
    assert not unexpected and all(k.endswith("_ids") for k in missing), (missing, unexpected)  # (buffers only)
    with torch.no_grad():
        hf_out = hf(torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(replaced))
    check("discriminator logits against transformers", out.logits, hf_out.logits.numpy(), rtol=1e-9, atol=1e-10)
    # (transformers casts the labels to float32, so its loss carries float32 rounding)
    check("RTD loss against transformers", out.loss, hf_out.loss.item(), rtol=1e-6, atol=1e-7)

# %% [markdown]
# ## 5. The same budget for each: a small race
#
# Which descendant learns most from a fixed amount of compute? Each trains below for the same **CPU seconds** on
# the same masked Wikipedia text (the built-in summaries, a WordPiece vocabulary trained on them), from the same
# seed, with the same optimiser; evaluations are not counted in the budget. The score is the held-out masked-LM
# loss on fixed masks (lower is better), next to the loss of always predicting each token's frequency.
#
# Two entries need a word. **DistilBERT** is trained here from scratch as a masked LM with half the layers; its
# real recipe copies a trained teacher (`minibert distill`, docs/distillation.md). **ELECTRA**'s discriminator
# predicts no tokens, so its MLM loss is its *generator's* (a quarter of the width): not the same measure, drawn
# dashed. RoBERTa's architecture switch (positions) changes little by itself; its gains came from its recipe.

# %%
n_docs, vocab, T = quick(3000, 600), quick(4000, 1000), quick(64, 32)
texts = [d["extract"] for d in load_wiki_summaries()[:n_docs]]
tok = train_wordpiece(texts, vocab_size=vocab, progress=False)
stream = np.concatenate([tok.encode(t, add_special_tokens=False).input_ids for t in texts])  # every token, in order
body = stream[: len(stream) // (T - 2) * (T - 2)].reshape(-1, T - 2)  # (S, T - 2)
seqs = np.concatenate([np.full((len(body), 1), tok.cls_token_id), body,
                       np.full((len(body), 1), tok.sep_token_id)], axis=1)  # (S, T) [CLS] ... [SEP]
held = quick(256, 64)  # held-out sequences
train_seqs, test_seqs = seqs[:-held], seqs[-held:]  # (S_train, T), (S_test, T)
masker = Masker(tok.vocab_size, tok.mask_token_id, tok.all_special_ids, mlm_probability=0.15)
test_ids, test_labels = masker(test_seqs, np.random.default_rng(1))  # fixed held-out masks
counts = np.bincount(train_seqs.reshape(-1), minlength=tok.vocab_size) + 1.0  # (V,) add-one
unigram = float(-np.log(counts / counts.sum())[test_labels[test_labels != IGNORE_INDEX]].mean())
print(f"{len(texts)} summaries, vocabulary {tok.vocab_size}, {len(train_seqs)} training and {held} held-out "
      f"sequences of {T} tokens; predicting each token's frequency scores a loss of {unigram:.3f}")

# %%
H = quick(192, 64)  # the mini's width in the full run, narrower in quick mode
sizes = dict(vocab_size=tok.vocab_size, hidden_size=H, num_attention_heads=max(1, H // 48), intermediate_size=4 * H,
             max_position_embeddings=T, num_hidden_layers=quick(3, 2))
base = BertConfig.preset("mini", **sizes)


def family(name):
    """The mini-family preset `name` (its switches) at this race's sizes."""
    _, switches = FAMILY_PRESETS[name]
    scaled = {}
    if "max_position_embeddings" in switches:  # positions start at pad_token_id + 1
        scaled["max_position_embeddings"] = T + base.pad_token_id + 1
    if "embedding_size" in switches:  # the mini's 64 of 192: a third of the width
        scaled["embedding_size"] = max(8, H // 3)
    return BertConfig.preset(name, **{**sizes, **scaled})


racers = {"BERT": base, "RoBERTa": family("roberta-mini"), "pre-LN": family("preln-mini"),
          "ALBERT": family("albert-mini"),
          "DistilBERT": DistilBertConfig.from_bert(base, num_hidden_layers=(base.num_hidden_layers + 1) // 2),
          **{deberta_label(n): family(n) for n in deberta_presets if n in FAMILY_PRESETS},
          "ELECTRA": "electra"}


def build(cfg):
    if cfg == "electra":
        return ElectraPretrainer(base, generator_config(base), seed=0)
    return model_class(cfg, "mlm")(cfg, seed=0)


def held_out_loss(model, chunk=64):
    """Mean masked-LM loss over every held-out masked token, 64 sequences at a time (to bound memory)."""
    total = 0.0
    with forward_only(model):
        for i in range(0, len(test_ids), chunk):
            ids, labels = test_ids[i:i + chunk], test_labels[i:i + chunk]  # (b, T) each
            out = model(ids, labels=labels)
            loss = out.mlm_loss if isinstance(model, ElectraPretrainer) else out.loss  # (its generator's)
            total += loss * int((labels != IGNORE_INDEX).sum())
    return total / int((test_labels != IGNORE_INDEX).sum())


def race(cfg, seconds, evaluations, batch=16, lr=1e-3):
    """Train for `seconds` of this process's CPU time; return [(cpu seconds, held-out loss)], steps, tokens."""
    model, rng = build(cfg), np.random.default_rng(0)
    opt = AdamW(model.params, model.grads, lr=lr, weight_decay=0.01)
    curve, spent, steps = [(0.0, held_out_loss(model))], 0.0, 0
    for stop in np.linspace(seconds / evaluations, seconds, evaluations):
        while spent < stop:
            t = time.process_time()
            ids, labels = masker(train_seqs[rng.integers(0, len(train_seqs), batch)], rng)  # (B, T) each
            model.zero_grad()
            model(ids, labels=labels)
            model.backward()
            clip_grad_norm(model.grads, 1.0)
            opt.step()
            spent += time.process_time() - t
            steps += 1
        curve.append((spent, held_out_loss(model)))
    return curve, steps, steps * batch * T, model.num_parameters()


budget = quick(30.0, 1.0)
results = {}
for name, cfg in racers.items():
    results[name] = race(cfg, budget, quick(6, 2))
    curve, steps, tokens, n = results[name]
    print(f"{name:<12} {n:>9,} parameters  {steps:>5} steps  {tokens / curve[-1][0]:>7,.0f} tokens/CPU-s  "
          f"held-out MLM loss {curve[0][1]:.3f} -> {curve[-1][1]:.3f}")

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
for name, (curve, steps, _, _) in results.items():
    seconds, losses = zip(*curve)
    ax.plot(seconds, losses, "--" if name == "ELECTRA" else "-", marker="o", ms=3,
            label=f"{name} ({steps} steps)" + (", its generator" if name == "ELECTRA" else ""))
ax.axhline(unigram, color="grey", ls=":", label="token frequencies")
ax.set(xlabel="CPU seconds of training", ylabel="held-out masked-LM loss",
       title=f"the same budget, {budget:.0f} CPU s each, H={H}, {T} tokens\n{stamp(CHAPTER)}")
ax.title.set_fontsize(9)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Read the figure for what it is: one seed, a small model, a short budget on a shared CPU. In quick mode the models
# barely move from where they started; the full run (`cd course && python 09_descendants.py`, a few minutes) trains
# each for half a minute of CPU. What longer runs of the full mini give, with the commands that produced them
# (minutes of pre-training each, and fine-tuning after), is in the repository's docs/descendants.md, also a page
# of the documentation site.
#
# ## Summary
#
# - RoBERTa, pre-LN, ALBERT and DistilBERT are BERT's encoder with one switch each, read by a handful of lines
#   (section 2); ELECTRA adds a second model and a new loss, not a new layer.
# - ALBERT's factorised embeddings and shared layers cut the parameters several times (section 3) but not the
#   compute: every layer still runs.
# - ELECTRA's replaced-token detection is a two-layer head and a sigmoid cross-entropy over every real token:
#   $\partial\ell/\partial x = (\sigma(x) - y)/N$ (section 4).
#
# ## Exercises

# %% [markdown]
# **1.** Write `albert_parameters(cfg)`: the parameters of `BertForMaskedLM(cfg)` for an ALBERT config (word,
# position and token-type tables of width $E$ with their LayerNorm, the projection $E \to H$, **one** encoder layer,
# and the MLM head: dense $H \to E$, LayerNorm over $E$, the output bias; the decoder is the word table).

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def albert_parameters(cfg):
    raise NotImplementedError


def test_albert_parameters(f):
    for cfg in (BertConfig.preset("albert-mini"),
                BertConfig.preset("albert-mini", embedding_size=32, num_hidden_layers=12, vocab_size=1000)):
        expect(f"albert_parameters(E = {cfg.embedding_width}, L = {cfg.num_hidden_layers})", f(cfg),
               model_class(cfg, "mlm")(cfg, init_weights=False).num_parameters())


exercise(1, albert_parameters, "09_descendants", test_albert_parameters)

# %% [markdown]
# **2.** Write `corrupt(input_ids, labels, sampled)` for ELECTRA: `labels` (B, T) holds the original token at the
# masked positions and -100 elsewhere, `sampled` (M,) the generator's tokens for those positions in row-major
# order. Return the discriminator's input (the original text with the samples written in) and its labels
# (1 where a token differs from the original, else 0).

# %%
def corrupt(input_ids, labels, sampled):
    raise NotImplementedError


def test_corrupt(f):
    r = np.random.default_rng(3)
    original = r.integers(5, 30, (3, 8))  # (B, T)
    chosen = r.random((3, 8)) < 0.4  # (B, T) the masked positions
    ids, labels = np.where(chosen, 4, original), np.where(chosen, original, IGNORE_INDEX)  # (B, T) each
    m = int(chosen.sum())
    sampled = np.where(r.random(m) < 0.5, labels[labels != IGNORE_INDEX], r.integers(5, 30, m))  # half are right
    got_ids, got_replaced = f(ids, labels, sampled)
    want_ids, want_replaced = replace_masked(ids, labels, sampled)
    expect("the discriminator's input", got_ids, want_ids)
    expect("the replaced labels (1 where a token differs from the original)", got_replaced, want_replaced)


exercise(2, corrupt, "09_descendants", test_corrupt)

# %% [markdown]
# **3.** Write `positions(input_ids, pad_token_id)`, RoBERTa's position ids: real tokens count from
# `pad_token_id + 1` upwards, skipping padding; padding tokens get `pad_token_id`.

# %%
def positions(input_ids, pad_token_id):
    raise NotImplementedError


def test_positions(f):
    ids = np.array([[5, 6, 7, 1, 1], [1, 8, 1, 9, 4]])  # (B, T), padding id 1
    expect("positions(ids, pad 1)", f(ids, 1), roberta_position_ids(ids, 1))
    expect("positions(ids, pad 0)", f(ids, 0), roberta_position_ids(ids, 0))


exercise(3, positions, "09_descendants", test_positions)
