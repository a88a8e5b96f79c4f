"""Learning a WordPiece vocabulary from text.

1. Count words. The corpus is read as a stream (files 1 MiB at a time; .jsonl and .gz as `pretrain` reads
   them), cut into words by the same basic tokenizer that will later encode text, and only the table
   word -> count is kept in memory.
2. Start from characters. Every word is spelled as its first character and "##"-continuations:
   "hugs" -> h ##u ##g ##s. These characters are the first vocabulary entries (after the special tokens).
3. Merge, again and again, the adjacent pair of symbols with the best score (counts weighted by word
   frequency). The merged symbol ("##gs") joins the vocabulary; stop at `vocab_size`, or when no pair
   appears `min_frequency` times. Two scores:

   - `score="frequency"` (the default): the most frequent pair, count(a b). This is BPE's rule, and what
     Hugging Face's `tokenizers` WordPieceTrainer does under the hood (8,097 of the 8,192 tokens it learns
     on the built-in Wikipedia summaries are the same); pre-training uses it. Frequent words become whole
     tokens: 1.45 tokens per word on those summaries.
   - `score="wordpiece"`: the WordPiece ratio count(a b) / (count(a) * count(b)), which favours pairs
     whose parts are rare on their own: "##g ##s" only wins if "##g" and "##s" mostly appear together.
     That has a price on a real corpus with a small vocabulary: a pair seen twice whose parts are seen
     twice scores 0.5, "t ##h" scores ~1e-6, so the merges go to rare names and foreign words first and
     frequent words ("paris", "music") stay spelled letter by letter at 8192 tokens (4.15 tokens per word).

Doing step 3 naively (recount every pair after every merge) costs a pass over the whole corpus per merge.
Instead:
- pair counts are updated incrementally, only in the words that contain the merged pair (an index
  pair -> words says which ones);
- the best pair comes from a heap (heapq) of (-score, pair) entries, with *lazy invalidation*: entries are
  never removed when a score changes; a fresh entry is pushed instead, and an entry popped from the top
  is checked against the pair's current score. A merge of (a, b) into c makes new pairs with c, which get
  an entry; for the ratio it also lowers count(a) and count(b), which *raises* the score of every other pair
  containing a or b, so those pairs get a fresh entry too (the frequency score of a pair without c can only
  fall: nothing to push, which makes that score's training 3x faster). A popped entry whose score has
  since dropped is pushed back with its current score.
"""

from __future__ import annotations

import heapq
import os
import warnings
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from minibert._plural import counted
from minibert._progress import tqdm

from minibert.tokenizer.basic import BasicTokenizer
from minibert.tokenizer.vocab_io import corpus_files, read_chunks
from minibert.tokenizer.wordpiece import SPECIAL_TOKENS, WordPieceTokenizer

TEXT_BATCH_CHARS = 1 << 20  # in-memory texts are normalised about 1 MB at a time
FILE_NAME_CHECKS = 16  # a corpus of at most this many str items is checked for file names given as texts


def count_words(texts_or_files: Iterable[str | os.PathLike], basic: BasicTokenizer,
                progress: bool = True, text_field: str = "text") -> Counter:
    """word -> number of occurrences. `str` items are texts; `Path` items are files or folders (read by
    vocab_io.read_chunks: plain text, .jsonl records' `text_field`, .gz of either).

    Warns when every `str` item (a few at most) names an existing file: file names given as texts."""
    items = list(texts_or_files) if isinstance(texts_or_files, (list, tuple)) else texts_or_files
    if isinstance(items, list):  # check every file exists before the long work starts
        corpus_files([x for x in items if isinstance(x, os.PathLike)])
    # Counted first: the space-separated chunks of normalised text ("world," "hello"), a C-speed
    # Counter.update over str.split(); each distinct chunk is cut into words only once, at the end.
    chunks: Counter = Counter()
    buffer: list[str] = []
    size = 0
    n_texts = 0
    first_texts: list[str] = []  # the first few, to tell file names passed as texts
    bar = tqdm(desc="counting words", unit="B", unit_scale=True, disable=not progress)

    def flush():
        nonlocal size
        if buffer:
            # "\n" between texts is white space, so joining them never glues two words together.
            chunks.update(basic.normalize("\n".join(buffer)).split())
            bar.update(size)
            buffer.clear()
            size = 0

    for item in items:
        if isinstance(item, os.PathLike):
            flush()
            for path in corpus_files([item]):
                for text, n_bytes in read_chunks(Path(path), text_field=text_field):
                    chunks.update(basic.normalize(text).split())
                    bar.update(n_bytes)
        elif isinstance(item, str):
            n_texts += 1
            if n_texts <= FILE_NAME_CHECKS:
                first_texts.append(item)
            buffer.append(item)
            size += len(item)
            if size >= TEXT_BATCH_CHARS:
                flush()
        else:
            raise ValueError(f"expected texts (str) or files (pathlib.Path), got {type(item).__name__}")
    flush()
    bar.close()
    if 0 < n_texts <= FILE_NAME_CHECKS and all(_names_a_file(text) for text in first_texts):
        warnings.warn(f"the texts are file names ({first_texts[0]!r}{', ...' if n_texts > 1 else ''}), counted as "
                      f"text: str items are texts; to read a file, pass pathlib.Path({first_texts[0]!r})",
                      stacklevel=3)
    counts: Counter = Counter()
    for chunk, n in chunks.items():
        for word in basic.split_words(chunk):
            counts[word] += n
    return counts


def _names_a_file(text: str) -> bool:
    if not text or len(text) > 4096 or "\n" in text:
        return False
    try:
        return os.path.isfile(text)
    except (OSError, ValueError):  # (a NUL character, a name too long for the system)
        return False


def train_wordpiece(texts_or_files: Iterable[str | os.PathLike] | os.PathLike, vocab_size: int = 30522,
                    min_frequency: int = 2, special_tokens: Iterable[str] = SPECIAL_TOKENS,
                    limit_alphabet: int | None = None, do_lower_case: bool = True,
                    strip_accents: bool | None = None, tokenize_chinese_chars: bool = True,
                    max_input_chars_per_word: int = 100, model_max_length: int = 512,
                    progress: bool = True, score: str = "frequency", text_field: str = "text"
                    ) -> WordPieceTokenizer:
    """Learn a WordPiece vocabulary of `vocab_size` tokens and return a tokenizer that uses it.

    texts_or_files: texts (`str`) and/or files or folders (`pathlib.Path`; folders are read recursively),
        or any iterable of texts (a generator works: it is read once, as a stream).
        A file is plain UTF-8 text, or `.jsonl` (the `text_field` string of each record), or `.gz` of either.
    vocab_size: the vocabulary's size: the special tokens, every character of the corpus (as a word start
        "a" and as a continuation "##a"), then merged pieces.
    min_frequency: a pair seen fewer times than this is never merged (the vocabulary may end up smaller;
        far smaller, and a warning says so).
    limit_alphabet: keep only this many most frequent characters; words with other characters are left
        out of training (they would be [UNK] anyway).
    score: "frequency" (the default) merges the most frequent pair, as Hugging Face's trainer does: frequent
        words become whole tokens. "wordpiece" merges the pair with the best count(a b) / (count(a) count(b)),
        which at small vocabularies spells frequent words letter by letter (see the module docstring).
    The normalisation settings (do_lower_case, ...) are those of the returned tokenizer.
    """
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}, got {score!r}")
    if isinstance(texts_or_files, str):
        raise ValueError("texts_or_files must be a list of texts or paths, not one string "
                         "(for a file, pass [pathlib.Path(name)])")
    if isinstance(texts_or_files, os.PathLike):
        texts_or_files = [texts_or_files]
    special_tokens = list(dict.fromkeys(special_tokens))
    if "[UNK]" not in special_tokens:
        raise ValueError(f"special_tokens must contain [UNK], got {special_tokens}")
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be at least 1, got {min_frequency}")
    if vocab_size <= len(special_tokens):
        raise ValueError(too_small_message(vocab_size, len(special_tokens)))
    basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars)
    counts = count_words(texts_or_files, basic, progress, text_field)
    if not counts:
        raise ValueError("the corpus is empty: no words to learn a vocabulary from")
    try:
        symbols = learn_merges(counts, vocab_size - len(special_tokens), min_frequency, limit_alphabet,
                               max_input_chars_per_word, progress, score)
    except AlphabetTooLarge as e:
        e.vocab_size, e.limit_alphabet = vocab_size, limit_alphabet
        raise
    vocab = special_tokens + [s for s in symbols if s not in set(special_tokens)]
    if is_small_vocabulary(len(vocab), vocab_size):
        warnings.warn(f"train_wordpiece: the vocabulary has {counted(len(vocab), 'token')}, "
                      f"{shortfall(vocab_size, min_frequency, limit_alphabet)}", SmallVocabularyWarning, stacklevel=2)
    return WordPieceTokenizer(vocab, do_lower_case=do_lower_case, strip_accents=strip_accents,
                              tokenize_chinese_chars=tokenize_chinese_chars, model_max_length=model_max_length,
                              max_input_chars_per_word=max_input_chars_per_word)


SCORES = ("frequency", "wordpiece")


def is_small_vocabulary(trained: int, vocab_size: int) -> bool:
    """Whether a vocabulary of `trained` tokens is far smaller than the `vocab_size` asked for (under half): said
    by train_wordpiece's SmallVocabularyWarning, and by pretrain in its own terms."""
    return trained < vocab_size // 2


class SmallVocabularyWarning(UserWarning):
    """The trained vocabulary is far smaller than vocab_size: the corpus has too few pairs to merge."""


def _option(name: str, value, cli: bool) -> str:
    """'vocab_size=8192' in Python, '--vocab-size 8192' on the command line."""
    return f"--{name.replace('_', '-')} {value}" if cli else f"{name}={value}"


def shortfall(vocab_size: int, min_frequency: int, limit_alphabet: int | None = None, cli: bool = False) -> str:
    """Why a trained vocabulary has fewer tokens than asked (what train-tokenizer prints, what the warning says)."""
    limited = ("" if limit_alphabet is None else
               f" (and {_option('limit_alphabet', limit_alphabet, cli)} left out the words with other characters)")
    return (f"fewer than {_option('vocab_size', vocab_size, cli)}: the corpus is small, no pair of pieces left "
            f"that appears {_option('min_frequency', min_frequency, cli)} times{limited}")


def too_small_message(vocab_size: int, n_special: int, cli: bool = False) -> str:
    """The error for a vocab_size that cannot hold the special tokens and a character (known before any reading:
    how many more the corpus needs is told once its characters are counted, by AlphabetTooLarge)."""
    return (f"{_option('vocab_size', vocab_size, cli)} leaves no room after the "
            f"{counted(n_special, 'special token')}: the vocabulary must also hold every character of the corpus, "
            f"as a word start (a) and as a ## continuation (##a), so at least {n_special + 1} for a corpus of "
            f"one-letter words and {n_special + 2} for one written with a single letter")


class AlphabetTooLarge(ValueError):
    """vocab_size cannot hold the corpus's characters (as word starts and continuations). train_wordpiece fills
    in vocab_size and limit_alphabet; message(cli=True) names the command's options instead."""

    def __init__(self, room: int, needed: int, characters: int):
        super().__init__(room, needed, characters)
        self.room, self.needed, self.characters = room, needed, characters
        self.vocab_size: int | None = None
        self.limit_alphabet: int | None = None

    def __str__(self) -> str:
        return self.message()

    def message(self, cli: bool = False) -> str:
        vocab_size = "--vocab-size" if cli else "vocab_size"
        limit = "--limit-alphabet" if cli else "limit_alphabet"
        if self.vocab_size is None:  # (learn_merges called directly)
            given, special, fix = "n_symbols leaves", "", f"raise {vocab_size}"
        else:
            n_special = self.vocab_size - self.room
            given = f"{_option('vocab_size', self.vocab_size, cli)} leaves"
            special = f" after the {counted(n_special, 'special token')}"
            fix = f"raise {vocab_size} to at least {n_special + self.needed:,}"
        fix += (f", or lower {limit} (now {self.limit_alphabet:,})" if self.limit_alphabet is not None else
                f", or set {limit} to keep only the most frequent characters")
        return (f"{given} room for {counted(self.room, 'token')}{special}, but the corpus's alphabet needs "
                f"{self.needed:,}: {counted(self.characters, 'character')}, as word starts (a) and as ## "
                f"continuations (##a); {fix}")


def learn_merges(counts: Counter, n_symbols: int, min_frequency: int = 2, limit_alphabet: int | None = None,
                 max_input_chars_per_word: int = 100, progress: bool = False, score_name: str = "frequency"
                 ) -> list[str]:
    """Steps 2 and 3: the alphabet, then merged symbols in the order they were learned (at most n_symbols)."""
    # -- the alphabet: characters by frequency, maybe only the most frequent ones ---------------------------
    words = [(w, f) for w, f in counts.items() if len(w) <= max_input_chars_per_word]
    char_counts: Counter = Counter()
    for w, f in words:
        for ch in w:
            char_counts[ch] += f
    alphabet = sorted(char_counts, key=lambda ch: (-char_counts[ch], ch))
    if limit_alphabet is not None:
        alphabet = alphabet[:limit_alphabet]
    allowed = set(alphabet)
    words = [(w, f) for w, f in words if allowed.issuperset(w)]

    # -- symbols are small ints; `symbol` maps them back to strings --------------------------------------
    initial = sorted({s for w, _ in words for s in [w[0]] + ["##" + ch for ch in w[1:]]},
                     key=lambda s: (s.startswith("##"), s))
    if n_symbols < len(initial):
        raise AlphabetTooLarge(max(n_symbols, 0), len(initial), len({s[-1] for s in initial}))
    symbol: list[str] = list(initial)
    symbol_id = {s: i for i, s in enumerate(symbol)}
    seqs = [[symbol_id[w[0]]] + [symbol_id["##" + ch] for ch in w[1:]] for w, _ in words]
    freqs = [f for _, f in words]

    # -- counts of symbols and of adjacent pairs; a pair (a, b) is stored as the int a << 32 | b ----------
    sym_count = [0] * len(symbol)
    pair_count: dict[int, int] = {}
    where: dict[int, set[int]] = {}  # pair -> indices of the words that contain it (may hold extra ones)
    # symbol -> the pairs it is part of that are frequent enough to be merged (may hold extra ones). A pair
    # seen fewer than min_frequency times can only become frequent by a merge that creates it anew, and
    # merge_pair then adds it here.
    pairs_of: list[set[int]] = [set() for _ in symbol]
    for i, (seq, f) in enumerate(zip(seqs, freqs)):
        for s in seq:
            sym_count[s] += f
        for x, y in zip(seq, seq[1:]):
            key = x << 32 | y
            pair_count[key] = pair_count.get(key, 0) + f
            where.setdefault(key, set()).add(i)
    for key, n in pair_count.items():
        if n >= min_frequency:
            pairs_of[key >> 32].add(key)
            pairs_of[key & 0xFFFFFFFF].add(key)

    def score(key: int) -> float:
        # Both scores depend only on count(a b), count(a) and count(b), which is what the lazy heap relies on.
        if score_name == "frequency":
            return pair_count[key]
        return pair_count[key] / (sym_count[key >> 32] * sym_count[key & 0xFFFFFFFF])

    heap = [(-score(k), k) for k, c in pair_count.items() if c >= min_frequency]
    heapq.heapify(heap)
    push = heapq.heappush
    bar = tqdm(total=n_symbols, initial=len(symbol), desc="merging", unit="tok", disable=not progress)
    n_vocab = len(symbol)
    while n_vocab < n_symbols and heap:
        neg, key = heapq.heappop(heap)
        if pair_count.get(key, 0) < min_frequency:
            continue  # merged already, or seen too rarely
        current = score(key)
        if current != -neg:
            if current < -neg:  # the score fell since this entry was pushed: re-queue it where it belongs
                push(heap, (-current, key))
            continue  # (if it rose, a fresher entry is already in the heap)
        a, b = key >> 32, key & 0xFFFFFFFF
        merged = symbol[a] + symbol[b][2:]  # "##g" + "##s" -> "##gs", "h" + "##u" -> "hu"
        c = symbol_id.get(merged)
        if c is None:  # (two different merges can spell the same string: then reuse it)
            c = symbol_id[merged] = len(symbol)
            symbol.append(merged)
            sym_count.append(0)
            pairs_of.append(set())
            n_vocab += 1
            bar.update(1)
        merge_pair(a, b, c, seqs, freqs, where.pop(key, set()), sym_count, pair_count, where, pairs_of,
                   min_frequency)
        # The new pairs with c get an entry. For the ratio, count(a) and count(b) fell too, which raised the score of
        # every other pair containing a or b: those get a fresh entry as well. (For the frequency score, every pair
        # without c kept or lost count: its entry is one the loop above corrects when popped.)
        for s in ({c} if score_name == "frequency" else {a, b, c}):
            keys = pairs_of[s]
            rare = 0
            for k in keys:
                if pair_count.get(k, 0) >= min_frequency:
                    push(heap, (-score(k), k))
                else:
                    rare += 1
            if rare * 2 > len(keys):  # mostly pairs gone or too rare now: forget those
                pairs_of[s] = {k for k in keys if pair_count.get(k, 0) >= min_frequency}
    bar.close()
    return symbol


def merge_pair(a: int, b: int, c: int, seqs: list[list[int]], freqs: list[int], word_ids: set[int],
               sym_count: list[int], pair_count: dict[int, int], where: dict[int, set[int]],
               pairs_of: list[set[int]], min_frequency: int) -> None:
    """Replace every a b by c in the given words, updating all counts and indexes in place."""
    for i in sorted(word_ids):
        seq = seqs[i]
        new, j, n, found = [], 0, len(seq), 0
        while j < n:  # left to right, so "a a a" with (a, a) gives "c a"
            if seq[j] == a and j + 1 < n and seq[j + 1] == b:
                new.append(c)
                j += 2
                found += 1
            else:
                new.append(seq[j])
                j += 1
        if not found:
            continue
        f = freqs[i]
        # The word's pairs change: take the old ones out, put the new ones in (pairs with c are new).
        for x, y in zip(seq, seq[1:]):
            key = x << 32 | y
            left = pair_count[key] - f
            if left:
                pair_count[key] = left
            else:
                del pair_count[key]
        for x, y in zip(new, new[1:]):
            key = x << 32 | y
            n = pair_count[key] = pair_count.get(key, 0) + f
            if x == c or y == c:
                where.setdefault(key, set()).add(i)
                if n >= min_frequency:
                    pairs_of[x].add(key)
                    pairs_of[y].add(key)
        seqs[i] = new
        sym_count[a] -= f * found
        sym_count[b] -= f * found
        sym_count[c] += f * found
