# %% [markdown]
# # 2. Tokens
#
# A model reads numbers, not text. BERT's tokenizer turns a text into a list of integer ids in two stages:
# **basic tokenization** (clean, lowercase, strip accents, cut into words and punctuation) and **WordPiece**
# (cut each word into pieces from a fixed vocabulary, longest piece first). In this chapter you will
#
# - write both stages in plain Python, plus the special tokens `[CLS]`, `[SEP]` and the segment ids of a pair;
# - train a small vocabulary on Wikipedia summaries with `minibert.train_wordpiece` and watch rare words fall
#   apart into more pieces as the vocabulary shrinks;
# - check that your tokenizer gives exactly the ids of minibert's `WordPieceTokenizer`, and that those equal
#   Hugging Face's `BertTokenizerFast` on the same vocabulary.

# %%
import tempfile
import time
import unicodedata
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np

import minibert
from minibert import WordPieceTokenizer, train_wordpiece
from minibert.data.builtin import load_wiki_summaries
from minibert.tokenizer import BasicTokenizer
from minibert.course import QUICK, check, exercise, quick

print("quick mode" if QUICK else "full mode", "| minibert", minibert.__version__)

# %% [markdown]
# ## Why pieces of words?
#
# Two obvious choices fail. A vocabulary of **characters** is tiny, but sentences become very long sequences and
# every layer must rebuild words from letters. A vocabulary of **whole words** keeps sequences short, but it needs
# hundreds of thousands of entries and still meets words it has never seen (names, typos, new terms).
# **Subwords** sit in between: frequent words are one token (`the`, for one), rare words are spelled with a few
# frequent pieces (examples below), and any word made of known characters can be written. BERT's subword
# scheme is WordPiece: a piece that continues a word is written with a `##` prefix.
#
# ## Stage 1: basic tokenization
#
# Before WordPiece looks at a vocabulary, the text is normalised and cut into words:
#
# 1. drop control characters and turn every kind of white space into a plain space;
# 2. put spaces around Chinese characters (each is a word: Chinese has no spaces);
# 3. lowercase, decompose accented letters (NFD: `é` -> `e` + a combining accent) and drop the accents;
# 4. split on spaces, and make every punctuation character a word of its own. BERT counts all ASCII symbols
#    (`$`, `+`, `^`...) as punctuation, as well as Unicode's punctuation categories.

# %%
def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:  # ASCII symbols
        return True
    return unicodedata.category(ch).startswith("P")


def basic_tokenize(text):
    text = "".join(" " if ch.isspace() else ch for ch in text
                   if ch in "\t\n\r" or not (unicodedata.category(ch).startswith("C") or ch == "\ufffd"))
    text = "".join(f" {ch} " if 0x4E00 <= ord(ch) <= 0x9FFF else ch for ch in text)  # main CJK block
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")  # Mn: the combining accents
    words = []
    for chunk in text.split():
        word = ""
        for ch in chunk:
            if is_punctuation(ch):
                words += [word, ch] if word else [ch]
                word = ""
            else:
                word += ch
        if word:
            words.append(word)
    return words


for text in ["Héllo, WORLD!  中文", "Don't pay $3.50 for Zürich's café-crème.", "tab\there\u00a0no-break"]:
    print(f"{text!r:45} -> {basic_tokenize(text)}")

# %% [markdown]
# minibert's `BasicTokenizer` does the same with whole-string regular expressions (and a few Unicode details this
# short version leaves out: it covers every CJK block, for instance). On real text the two agree word for word:

# %%
docs = [d["extract"] for d in load_wiki_summaries()]
reference = BasicTokenizer()
sample = docs[:quick(2000, 200)]
agree = sum(basic_tokenize(text) == reference.tokenize(text) for text in sample)
print(f"basic_tokenize = BasicTokenizer on {agree} of {len(sample)} Wikipedia summaries")
assert agree == len(sample)

# %% [markdown]
# ## Training a vocabulary
#
# `minibert.train_wordpiece` learns a vocabulary from text, much as BPE does:
#
# 1. count the words of the corpus (with the basic tokenizer above);
# 2. spell every word as characters, the first as itself and the rest as continuations (`hugs` -> `h ##u ##g
#    ##s`); all these characters form the first part of the vocabulary, after the special tokens;
# 3. repeatedly find the adjacent pair of symbols that occurs most often (counting each word as often as it
#    appears), merge it into one new symbol (`##g ##s` -> `##gs`) and add it to the vocabulary, until the
#    vocabulary has the size asked for.
#
# Because each merge depends only on the ones before, the vocabulary of size $k$ is the first $k$ entries of any
# larger vocabulary trained on the same text. The cell checks that with a second, smaller training run, and then
# uses prefixes of one vocabulary to study vocabularies of every size.
#
# We train on part of the Wikipedia summaries that come with minibert and keep others as held-out text.

# %%
print(f"{len(docs)} summaries")
n_train, vocab_size = quick(8000, 1000), quick(8192, 2048)
train_docs, held_out = docs[:n_train], docs[n_train:n_train + quick(2000, 200)]
start = time.perf_counter()
tokenizer = train_wordpiece(train_docs, vocab_size=vocab_size, progress=False)
print(f"trained {tokenizer.vocab_size} tokens on {len(train_docs)} summaries in {time.perf_counter() - start:.1f} s")
vocab = tokenizer.ids_to_tokens  # list: id -> token
print("first ids:", vocab[:12])
print("last ids: ", vocab[-8:])

small = train_wordpiece(train_docs, vocab_size=vocab_size // 4, progress=False)
assert small.ids_to_tokens == vocab[:vocab_size // 4]
print(f"a vocabulary trained to {vocab_size // 4} tokens is the first {vocab_size // 4} of this one")

# %% [markdown]
# The special tokens come first, then the single characters (`a`, `##a`, ...), then the merges in the order they
# were learned: the first merges make the most frequent pieces. The alphabet of single characters is the smallest
# vocabulary that can still spell every training word:

# %%
specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
is_merge = [len(t.removeprefix("##")) > 1 and t not in specials for t in vocab]
alphabet_end = is_merge.index(True)
print(f"{alphabet_end - len(specials)} one-character tokens, `a` or `##a` (ids {len(specials)}..{alphabet_end - 1}); "
      f"first merges: {vocab[alphabet_end:alphabet_end + 10]}")

# %% [markdown]
# ## Stage 2: WordPiece, greedy longest-match-first
#
# To cut a word, take the longest prefix that is in the vocabulary; then from where it ended, the longest
# continuation `##...` that is in the vocabulary; and so on to the end of the word. If at some point not even one
# character matches, the whole word becomes `[UNK]` (unknown); so does a word longer than 100 characters.

# %%
def wordpiece(word, vocab_set, max_chars=100):
    if len(word) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):  # longest first
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab_set:
                break
        else:  # no piece matched, not even one character
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


vocab_set = set(vocab)
for word in ["the", "unaffable", "tokenization", "naïve", "😀"]:
    print(f"{word:>15} -> {wordpiece(basic_tokenize(word)[0], vocab_set)}")

# %% [markdown]
# (`naïve` lost its accent in stage 1. A character the training text never had, such as the emoji here, cannot be
# spelled: the word becomes `[UNK]`.)
#
# ## Special tokens and segments
#
# BERT's input always starts with `[CLS]` (its final vector summarises the whole input, for classification) and
# ends each text with `[SEP]`. A *pair* of texts (a question and a passage, two sentences) is written
# `[CLS] A [SEP] B [SEP]`, and a second row of ids, the **segment** or `token_type_ids`, says which text each
# token belongs to: 0 for `[CLS]`, A and its `[SEP]`, 1 for B and its `[SEP]`. `[MASK]` stands for a hidden
# token in pre-training, and `[PAD]` fills short sequences up to the length of the longest in a batch (an
# attention mask of 0 tells the model to ignore it).
#
# (minibert, like Hugging Face, also keeps a special token that is written literally in the text, such as
# "[MASK]", whole; the version below leaves that out.)

# %%
def encode(text, pair=None):
    tokens = ["[CLS]"] + [p for w in basic_tokenize(text) for p in wordpiece(w, vocab_set)] + ["[SEP]"]
    types = [0] * len(tokens)
    if pair is not None:
        second = [p for w in basic_tokenize(pair) for p in wordpiece(w, vocab_set)] + ["[SEP]"]
        tokens, types = tokens + second, types + [1] * len(second)
    return tokens, [token_id[t] for t in tokens], types


token_id = {t: i for i, t in enumerate(vocab)}  # token -> id: its line in the vocabulary


tokens, ids, types = encode("The Eiffel tower stands in Paris.", "It was built in 1889.")
for t, i, s in zip(tokens, ids, types):
    print(f"{t:>10} id {i:>5} segment {s}")
print({t: token_id[t] for t in specials})

# %% [markdown]
# ## The check: the same ids as minibert's tokenizer
#
# minibert's `WordPieceTokenizer` is built from the same vocabulary. On every held-out summary, and on pairs of
# them, our plain version must give the very same ids and segments.

# %%
mismatch = 0
for a, b in zip(held_out, held_out[1:] + [None]):
    _, ids, types = encode(a, b)
    enc = tokenizer.encode(a, b)
    mismatch += (ids != enc.input_ids) or (types != enc.token_type_ids)
print(f"{len(held_out)} held-out pairs, {mismatch} differ from WordPieceTokenizer.encode")
assert mismatch == 0

# %% [markdown]
# ## ...and as Hugging Face's tokenizer
#
# `tokenizer.save_pretrained(folder)` writes `vocab.txt`, `tokenizer.json` and `tokenizer_config.json`, the files
# Hugging Face reads. Loaded into `transformers.BertTokenizerFast`, the vocabulary must give the same ids, also
# when pairs are cut to a maximum length and padded into a batch.

# %%
try:
    from transformers import BertTokenizerFast
except ImportError:
    BertTokenizerFast = None
    print("transformers is not installed: the check against BertTokenizerFast is skipped "
          "(pip install -e '.[dev]' installs it)")
if BertTokenizerFast is not None:
    with tempfile.TemporaryDirectory() as folder:
        tokenizer.save_pretrained(folder)
        hf = BertTokenizerFast.from_pretrained(folder)
    texts = held_out[:quick(500, 100)]
    # pairs cut to 128 tokens (the longer text loses tokens first), padded to the longest
    ours = tokenizer.encode_batch(texts, texts[::-1], max_length=128, truncation=True, padding=True)
    theirs = hf(texts, texts[::-1], max_length=128, truncation=True, padding=True, return_tensors="np")
    for name in ("input_ids", "token_type_ids", "attention_mask"):
        check(f"{name}: WordPieceTokenizer vs BertTokenizerFast", ours[name], theirs[name], rtol=0, atol=0)

# %% [markdown]
# ## How words split: frequency and vocabulary size
#
# The more often a word occurs in the training text, the earlier its pieces get merged into one token. Left: for
# each distinct word of the held-out text, the number of pieces against how often the word occurs in the
# *training* text. Right: prefixes of the vocabulary, from the bare alphabet to the whole vocabulary, and the
# average number of tokens per word they give on held-out text.

# %%
train_counts = Counter(w for text in train_docs for w in reference.tokenize(text))
held_words = Counter(w for text in held_out for w in reference.tokenize(text))
freq = np.array([train_counts[w] for w in held_words])  # (W,) training count of each held-out word
pieces = np.array([len(tokenizer.wordpiece(w)) for w in held_words])  # (W,) pieces at the full vocabulary
unknown = np.array([tokenizer.wordpiece(w) == [tokenizer.unk_token_id] for w in held_words])
print(f"{len(held_words)} distinct held-out words; {unknown.sum()} become [UNK]")

sizes = np.unique(np.geomspace(alphabet_end, len(vocab), quick(8, 6)).astype(int))
per_word = []
held_text = " ".join(held_out)
n_words = len(reference.tokenize(held_text))
# a rare word to follow: the longest held-out word seen exactly once in training (ties: alphabetical)
rare = min((w for w in held_words if train_counts[w] == 1 and w.isalpha()), key=lambda w: (-len(w), w))
for k in sizes:
    prefix = WordPieceTokenizer(vocab[:k])
    per_word.append(len(prefix.tokenize(held_text)) / n_words)
    if k in (sizes[0], sizes[len(sizes) // 2], sizes[-1]):
        print(f"vocabulary {k:>5}: {rare!r} -> {prefix.tokenize(rare)}")
for k, p in zip(sizes, per_word):
    print(f"vocabulary {k:>5}: {p:.2f} tokens per held-out word")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.2))
known = ~unknown
bins = np.unique(np.geomspace(1, freq.max() + 1, 14).astype(int))
which = np.digitize(freq[known] + 1, bins)  # +1: words never seen in training land in the first bin
centres, means = [], []
for b in np.unique(which):
    centres.append(np.mean(freq[known][which == b] + 1))
    means.append(pieces[known][which == b].mean())
jitter = np.random.default_rng(0).uniform(-0.15, 0.15, known.sum())
ax1.scatter(freq[known] + 1, pieces[known] + jitter, s=4, alpha=0.25, color="#4c72b0", label="one word")
ax1.plot(centres, means, "o-", color="#c44e52", label="mean per bin")
ax1.set_xscale("log")
ax1.set_xlabel("count in the training text + 1")
ax1.set_ylabel("WordPiece pieces")
ax1.set_title(f"held-out words at vocabulary {len(vocab)}")
ax1.legend()
ax2.plot(sizes, per_word, "o-", color="#4c72b0")
ax2.set_xscale("log")
ax2.set_xticks(sizes, [str(k) for k in sizes])
ax2.minorticks_off()
ax2.set_xlabel("vocabulary size (prefix of the trained vocabulary)")
ax2.set_ylabel("tokens per word, held-out text")
ax2.set_title("smaller vocabularies spell words in more pieces")
fig.tight_layout()
plt.show()

# %% [markdown]
# Frequent words are almost all one piece; words the training text saw only a few times, or never, are spelled in
# several. A larger vocabulary shortens sequences (attention's cost grows with $T^2$) but makes the embedding
# table $V \times H$ larger, the biggest single array of a small BERT (chapter 1).
#
# ## Summary
#
# - Basic tokenization cleans, lowercases, strips accents and cuts text into words and punctuation.
# - WordPiece cuts each word greedily into the longest vocabulary pieces, `##` marking continuations, `[UNK]` when
#   impossible.
# - The input is `[CLS] A [SEP] (B [SEP])` with segment ids 0 for A and 1 for B.
# - A vocabulary is learned by merging the most frequent adjacent pairs; our plain tokenizer equals minibert's, and
#   minibert's equals Hugging Face's, id for id.

# %% [markdown]
# ## Exercises
#
# 1. Write `join_pieces(tokens)`: turn WordPiece tokens back into words, gluing each `##` piece to the word before
#    it (`["photo", "##syn", "##thesis", "is"]` -> `["photosynthesis", "is"]`).
# 2. Write `pad_batch(sequences, pad_id)`: a list of id lists of different lengths -> `(input_ids, attention_mask)`,
#    two $(B, T)$ int64 arrays padded on the right to the longest sequence, the mask 1 on real tokens.
# 3. Write `segment_ids(n_a, n_b)`: the token type ids of `[CLS] A [SEP] B [SEP]` when A has `n_a` pieces and B
#    has `n_b`.

# %%
from minibert.course import expect  # noqa: E402  (an exercise's check: expected against got)


def join_pieces(tokens):
    raise NotImplementedError


def test_join_pieces(join_pieces):
    expect("join_pieces(photo ##syn ##thesis is green)", join_pieces(["photo", "##syn", "##thesis", "is", "green"]),
           ["photosynthesis", "is", "green"])
    expect("join_pieces([])", join_pieces([]), [])
    text = held_out[0]
    words = reference.tokenize(text)  # an unknown word stays one [UNK]
    expect("join_pieces(a held-out summary's tokens)", join_pieces(tokenizer.tokenize(text)),
           [w if wordpiece(w, vocab_set) != ["[UNK]"] else "[UNK]" for w in words])


exercise(1, join_pieces, "02_tokens", test_join_pieces)


# %%
def pad_batch(sequences, pad_id):
    raise NotImplementedError


def test_pad_batch(pad_batch):
    ids, mask = pad_batch([[2, 7, 3], [2, 3], [2, 9, 9, 3]], pad_id=0)
    expect("dtypes of (input_ids, attention_mask)", (str(ids.dtype), str(mask.dtype)), ("int64", "int64"))
    expect("input_ids", ids, [[2, 7, 3, 0], [2, 3, 0, 0], [2, 9, 9, 3]])
    expect("attention_mask", mask, [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    texts = held_out[:3]
    batch = tokenizer.encode_batch(texts, padding=True)
    ids, mask = pad_batch([tokenizer.encode(t).input_ids for t in texts], tokenizer.pad_token_id)
    expect("input_ids of three summaries", ids, batch.input_ids)
    expect("attention_mask of three summaries", mask, batch.attention_mask)


exercise(2, pad_batch, "02_tokens", test_pad_batch)


# %%
def segment_ids(n_a, n_b):
    raise NotImplementedError


def test_segment_ids(segment_ids):
    expect("segment_ids(2, 1)", segment_ids(2, 1), [0, 0, 0, 0, 1, 1])  # [CLS] a a [SEP] | b [SEP]
    a, b = held_out[1], held_out[2]
    expect("segment_ids of two summaries", segment_ids(len(tokenizer.tokenize(a)), len(tokenizer.tokenize(b))),
           tokenizer.encode(a, b).token_type_ids)


exercise(3, segment_ids, "02_tokens", test_segment_ids)
