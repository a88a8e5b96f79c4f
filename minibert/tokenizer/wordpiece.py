"""The WordPiece tokenizer: text -> ids the model reads, ids -> text, in Hugging Face's file format.

Encoding a text takes four steps:

1. special tokens written literally in the text ("[MASK]") are cut out first and kept whole, as
   Hugging Face does (they are matched in the raw text, before any lowercasing);
2. the basic tokenizer (basic.py) cleans and normalises the rest and cuts it into words;
3. WordPiece cuts each word into vocabulary pieces, greedily taking the longest piece that is in the
   vocabulary, then the longest continuation ("##" + piece), and so on:
       "unaffable" -> "un", "##aff", "##able"
   A word that cannot be covered this way, or is longer than 100 characters, becomes one [UNK];
4. [CLS] A [SEP] (B [SEP]) are added, with token types 0 for A and 1 for B.

Step 3 depends only on the word, and natural text repeats words all the time, so results are kept in a
dictionary, keyed by what lies between two spaces ("world," -> ids of "world" and ","): the speed then
comes almost entirely from the whole-text regular expressions of step 2.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized

import numpy as np

from minibert.io.model_folder import resolve_tokenizer_folder
from minibert.tokenizer.basic import BasicTokenizer
from minibert.tokenizer.hf_files import (check_added_tokens, length_setting, read_tokenizer_folder, tokenizer_json,
                                         write_tokenizer_folder)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SPECIAL_TOKENS_BY_ROLE = dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"), SPECIAL_TOKENS))
CACHE_LIMIT = 500_000  # entries kept in the text -> ids cache before it is emptied
# Hugging Face's decoder "cleanup": applied to each token (with its leading space) in turn. With BERT's
# punctuation splitting only the first four can ever fire, but decoding arbitrary ids may meet the rest.
_CLEANUP = [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")]


class Encoding:
    """One encoded text (or pair of texts): lists of the same length, as Hugging Face names them."""

    __slots__ = ("input_ids", "token_type_ids", "attention_mask", "word_ids", "offsets", "_id_to_token")

    def __init__(self, input_ids, token_type_ids, word_ids, id_to_token, offsets=None):
        self.input_ids: list[int] = input_ids
        self.token_type_ids: list[int] = token_type_ids
        self.attention_mask: list[int] = [1] * len(input_ids)
        # Index of the word each token comes from (None for [CLS]/[SEP]); counts restart at 0 in the second
        # text of a pair, like Hugging Face's `word_ids()`. Whole-word masking groups tokens by it.
        self.word_ids: list[int | None] = word_ids
        # (start, end) of the characters each token covers in its own text ((0, 0) for [CLS]/[SEP]), like
        # Hugging Face's offset_mapping; only when encode() was asked for them (return_offsets_mapping=True).
        self.offsets: list[tuple[int, int]] | None = offsets
        self._id_to_token = id_to_token

    @property
    def tokens(self) -> list[str]:
        return [self._id_to_token[i] for i in self.input_ids]

    def __len__(self) -> int:
        return len(self.input_ids)

    def __repr__(self) -> str:
        return f"Encoding(tokens={self.tokens!r}, input_ids={self.input_ids!r})"


class BatchEncoding(dict):
    """A padded batch: a dict of (B, T) int64 arrays `input_ids`, `token_type_ids`, `attention_mask`,
    also readable as attributes, so `model.forward(**batch)` works. Two extras that are not model inputs:
    `word_ids` ((B, T) int64, -1 for special and padding tokens) and `encodings` (the unpadded Encodings).
    """

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class WordPieceTokenizer:
    """BERT's tokenizer. Load one with `WordPieceTokenizer.from_pretrained(dir)` or train one with
    `train_wordpiece(...)`; `tok.encode("Hello world")` gives the model's input."""

    def __init__(self, vocab: Sequence[str], do_lower_case: bool = True, strip_accents: bool | None = None,
                 tokenize_chinese_chars: bool = True, model_max_length: int = 512,
                 max_input_chars_per_word: int = 100, unk_token: str = "[UNK]", pad_token: str = "[PAD]",
                 cls_token: str = "[CLS]", sep_token: str = "[SEP]", mask_token: str = "[MASK]"):
        self.ids_to_tokens: list[str] = list(vocab)
        self.vocab: dict[str, int] = {token: i for i, token in enumerate(self.ids_to_tokens)}
        if len(self.vocab) != len(self.ids_to_tokens):
            dup = next(t for i, t in enumerate(self.ids_to_tokens) if self.vocab[t] != i)
            raise ValueError(f"vocabulary has duplicate token {dup!r}")
        if unk_token not in self.vocab:
            raise ValueError(f"vocabulary has no unknown token {unk_token!r}")
        self.basic = BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars)
        self.model_max_length = length_setting(model_max_length, "model_max_length")
        self.max_input_chars_per_word = length_setting(max_input_chars_per_word, "max_input_chars_per_word")
        self.unk_token, self.pad_token, self.cls_token = unk_token, pad_token, cls_token
        self.sep_token, self.mask_token = sep_token, mask_token
        self.unk_token_id: int = self.vocab[unk_token]
        self.pad_token_id: int | None = self.vocab.get(pad_token)
        self.cls_token_id: int | None = self.vocab.get(cls_token)
        self.sep_token_id: int | None = self.vocab.get(sep_token)
        self.mask_token_id: int | None = self.vocab.get(mask_token)
        specials = [t for t in (pad_token, unk_token, cls_token, sep_token, mask_token) if t in self.vocab]
        self.all_special_tokens: list[str] = specials
        self.all_special_ids: list[int] = [self.vocab[t] for t in specials]
        # Special tokens written in the text: longest first, so that of two that start at the same place
        # the longer one wins (as Hugging Face's leftmost-longest matching does).
        alternatives = "|".join(re.escape(t) for t in sorted(specials, key=len, reverse=True))
        self._special_re = re.compile(f"({alternatives})")
        # Cheap test that skips the search in most texts: every BERT special token starts with "[".
        firsts = {t[0] for t in specials}
        self._special_hint = firsts.pop() if len(firsts) == 1 else None
        # No piece is longer than the longest token: the greedy search can start there.
        self._longest = max(len(t) for t in self.ids_to_tokens)
        self._cache: dict[str, tuple] = {}  # see _encode_part

    # ---- settings ---------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.ids_to_tokens)

    def __len__(self) -> int:
        return len(self.ids_to_tokens)

    @property
    def do_lower_case(self) -> bool:
        return self.basic.do_lower_case

    @property
    def strip_accents(self) -> bool | None:
        return self.basic.strip_accents

    @property
    def tokenize_chinese_chars(self) -> bool:
        return self.basic.tokenize_chinese_chars

    def __repr__(self) -> str:
        return (f"WordPieceTokenizer(vocab_size={self.vocab_size}, do_lower_case={self.do_lower_case}, "
                f"strip_accents={self.strip_accents}, tokenize_chinese_chars={self.tokenize_chinese_chars}, "
                f"model_max_length={self.model_max_length})")

    def clear_cache(self) -> None:
        """Forget the chunk -> ids cache (it only saves time; ~30 MB after tokenizing a corpus like wiki)."""
        self._cache.clear()

    # ---- text -> pieces ---------------------------------------------------------------------------------
    def wordpiece(self, word: str) -> list[int]:
        """Greedy longest-match-first: the ids of the pieces of one (normalised) word."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_token_id]
        vocab, ids, start, n = self.vocab, [], 0, len(word)
        while start < n:
            end = min(n, start + self._longest)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in vocab:
                    ids.append(vocab[piece])
                    break
                end -= 1
            else:  # not even one character matched: the whole word is unknown
                return [self.unk_token_id]
            start = end
        return ids

    def _encode_text(self, text: str) -> tuple[list[int], list[int]]:
        """Ids and word indices of one text, without special tokens."""
        if not isinstance(text, str):
            raise ValueError(f"expected a str to tokenize, got {type(text).__name__}")
        ids: list[int] = []
        word_ids: list[int] = []
        n_words = 0
        if len(self._cache) > CACHE_LIMIT:
            self._cache.clear()
        # split() with a capturing group: odd positions are the special tokens found in the text.
        hint = self._special_hint
        parts = self._special_re.split(text) if hint is None or hint in text else [text]
        for i, part in enumerate(parts):
            if i % 2:
                ids.append(self.vocab[part])
                word_ids.append(n_words)
                n_words += 1
            else:
                n_words = self._encode_part(part, ids, word_ids, n_words)
        return ids, word_ids

    def _encode_part(self, text: str, ids: list[int], word_ids: list[int], n_words: int) -> int:
        """Append the ids and word indices of `text` (no special tokens in it); return the new word count.

        The cache is keyed by what lies between two spaces of the normalised text ("world," or "hello"),
        and holds its ids, the word index of each id relative to the chunk, and its number of words. Most
        chunks are already in it: then neither the word split nor WordPiece runs.
        """
        cache = self._cache
        # After normalisation the only white space left is " ", so split() cuts exactly there.
        for chunk in self.basic.normalize(text).split():
            entry = cache.get(chunk)
            if entry is None:
                entry = cache[chunk] = self._encode_chunk(chunk)
            chunk_ids, offsets, n = entry
            ids += chunk_ids
            if offsets is None:  # one word of one piece, the common case
                word_ids.append(n_words)
            else:
                word_ids += [n_words + o for o in offsets]
            n_words += n
        return n_words

    def _encode_chunk(self, chunk: str) -> tuple[list[int], tuple[int, ...] | None, int]:
        ids: list[int] = []
        offsets: list[int] = []
        words = self.basic.split_words(chunk)
        for w, word in enumerate(words):
            pieces = self.wordpiece(word)
            ids += pieces
            offsets += [w] * len(pieces)
        if len(ids) == 1:
            return ids, None, 1
        return ids, tuple(offsets), len(words)

    def tokenize(self, text: str) -> list[str]:
        """The pieces of `text`, without special tokens: "Hello!" -> ['hello', '!']."""
        return self.convert_ids_to_tokens(self._encode_text(text)[0])

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> int | list[int]:
        """Token(s) -> id(s); a token not in the vocabulary gives the [UNK] id."""
        if isinstance(tokens, str):
            return self.vocab.get(tokens, self.unk_token_id)
        return [self.vocab.get(t, self.unk_token_id) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Id(s) -> token(s)."""
        if isinstance(ids, (int, np.integer)):
            return self.convert_ids_to_tokens([ids])[0]
        ids = [int(i) for i in ids]
        if ids and not 0 <= min(ids) <= max(ids) < len(self.ids_to_tokens):  # (-1 would silently wrap around)
            bad = next(i for i in ids if not 0 <= i < len(self.ids_to_tokens))
            raise ValueError(f"id {bad} is not in the vocabulary (ids go from 0 to {len(self.ids_to_tokens) - 1})")
        return [self.ids_to_tokens[i] for i in ids]

    # ---- model input ------------------------------------------------------------------------------------
    def encode(self, text: str, text_pair: str | None = None, max_length: int | None = None,
               truncation: bool | str | None = None, add_special_tokens: bool = True,
               return_offsets_mapping: bool = False) -> Encoding:
        """Encode one text, or a pair, as `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`.

        truncation: True / "longest_first": cut tokens from the end of the longer text until everything fits in
        `max_length` (default: `model_max_length`); False: never cut. None (the default) is False, except that a
        `max_length` given on its own truncates with a warning, as Hugging Face does.
        return_offsets_mapping: also give `.offsets`, each token's character span in its text (offsets.py).
        """
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer))):
            raise ValueError(f"max_length must be an integer, got {max_length!r}")
        if truncation is None:
            truncation = max_length is not None
            if truncation:
                warnings.warn("max_length was given without truncation: truncating to it ('longest_first'), as "
                              "Hugging Face does; pass truncation=True to say so, or False to keep every token",
                              stacklevel=2)
        a, a_words, a_offsets = self._encode_one(text, return_offsets_mapping)
        b, b_words, b_offsets = self._encode_one(text_pair, return_offsets_mapping) if text_pair is not None \
            else (None, None, None)
        if truncation not in (False, "do_not_truncate"):
            if truncation not in (True, "longest_first"):
                raise ValueError(f"truncation must be True, False or 'longest_first', got {truncation!r}")
            max_length = self.model_max_length if max_length is None else max_length
            n_special = (2 if b is None else 3) if add_special_tokens else 0
            budget = max_length - n_special
            if budget < 0:
                raise ValueError(f"max_length={max_length} leaves no room for the {n_special} special tokens")
            n_a, n_b = (budget, 0) if b is None else longest_first(len(a), len(b), budget)
            a, a_words, a_offsets = (x if x is None else x[:n_a] for x in (a, a_words, a_offsets))
            if b is not None:
                b, b_words, b_offsets = (x if x is None else x[:n_b] for x in (b, b_words, b_offsets))
        offsets = None
        if add_special_tokens:
            if self.cls_token_id is None or self.sep_token_id is None:
                raise ValueError(f"vocabulary lacks {self.cls_token} or {self.sep_token}; "
                                 "use add_special_tokens=False")
            cls, sep = self.cls_token_id, self.sep_token_id
            ids = [cls] + a + [sep]
            words = [None] + a_words + [None]
            types = [0] * len(ids)
            if return_offsets_mapping:
                offsets = [(0, 0)] + a_offsets + [(0, 0)] + ([] if b is None else b_offsets + [(0, 0)])
            if b is not None:
                ids += b + [sep]
                words += b_words + [None]
                types += [1] * (len(b) + 1)
        else:
            ids, words = a + (b or []), a_words + (b_words or [])
            types = [0] * len(a) + [1] * len(b or [])
            if return_offsets_mapping:
                offsets = a_offsets + (b_offsets or [])
        return Encoding(ids, types, words, self.ids_to_tokens, offsets)

    def _encode_one(self, text: str, with_offsets: bool):
        """(ids, word ids, offsets or None) of one text without special tokens."""
        if with_offsets:
            from minibert.tokenizer.offsets import encode_with_offsets
            return encode_with_offsets(self, text)
        return (*self._encode_text(text), None)

    def encode_batch(self, texts: str | Sequence[str], text_pairs: Sequence[str] | None = None,
                     max_length: int | None = None, padding: bool | str = True, truncation: bool | str = True,
                     add_special_tokens: bool = True) -> BatchEncoding:
        """Encode many texts into (B, T) int64 arrays, padded with [PAD] to the longest
        (padding=True / "longest") or to `max_length` (padding="max_length"). `texts` is one str or a list (tuple,
        1-D array) of str, and so is `text_pairs` when given; a generator or a set is refused (_batch_of_texts)."""
        texts = _batch_of_texts(texts, "texts")
        if text_pairs is not None:
            text_pairs = _batch_of_texts(text_pairs, "text_pairs", none_allowed=True)
        if text_pairs is not None and len(text_pairs) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(text_pairs)} text_pairs")
        pairs = text_pairs if text_pairs is not None else [None] * len(texts)
        encodings = [self.encode(t, p, max_length, truncation, add_special_tokens) for t, p in zip(texts, pairs)]
        longest = max((len(e) for e in encodings), default=0)
        if padding in (True, "longest"):
            width = longest
        elif padding == "max_length":
            if max_length is None:
                raise ValueError("padding='max_length' needs max_length")
            if longest > max_length:
                raise ValueError(f"a sequence has {longest} tokens, more than max_length={max_length}; "
                                 "use truncation=True")
            width = max_length
        elif padding in (False, "do_not_pad"):
            if any(len(e) != longest for e in encodings):
                raise ValueError("sequences have different lengths; use padding=True to stack them")
            width = longest
        else:
            raise ValueError(f"padding must be True, False, 'longest' or 'max_length', got {padding!r}")
        pad = self.pad_token_id if self.pad_token_id is not None else 0
        shape = (len(encodings), width)
        input_ids = np.full(shape, pad, dtype=np.int64)
        token_type_ids = np.zeros(shape, dtype=np.int64)
        attention_mask = np.zeros(shape, dtype=np.int64)
        word_ids = np.full(shape, -1, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e)
            input_ids[row, :n] = e.input_ids
            token_type_ids[row, :n] = e.token_type_ids
            attention_mask[row, :n] = 1
            word_ids[row, :n] = [-1 if w is None else w for w in e.word_ids]
        batch = BatchEncoding(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        batch.word_ids = word_ids
        batch.encodings = encodings
        return batch

    __call__ = encode_batch

    # ---- ids -> text ------------------------------------------------------------------------------------
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """Join the pieces back into text: "##" pieces glue to the one before, the others get a space,
        and the space before . , ! ? is removed (Hugging Face's WordPiece decoder with cleanup)."""
        ids = np.asarray(ids)
        if ids.ndim == 0:  # one id, as Hugging Face takes it
            ids = ids[None]
        if ids.size and ids.dtype.kind not in "iu":
            raise ValueError(f"decode takes integer token ids, got dtype {ids.dtype}")
        if ids.ndim > 1:
            raise ValueError(f"decode takes one sequence of ids, got shape {ids.shape}; use batch_decode")
        skip = set(self.all_special_ids) if skip_special_tokens else set()
        tokens = self.convert_ids_to_tokens([i for i in ids.tolist() if i not in skip])
        out = []
        for i, token in enumerate(tokens):
            if i > 0:
                token = token[2:] if token.startswith("##") else " " + token
            for dirty, clean in _CLEANUP:
                if dirty in token:
                    token = token.replace(dirty, clean)
            out.append(token)
        return "".join(out)

    def batch_decode(self, batch, skip_special_tokens: bool = True) -> list[str]:
        return [self.decode(row, skip_special_tokens) for row in batch]

    # ---- files ------------------------------------------------------------------------------------------
    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """Write vocab.txt, tokenizer.json and tokenizer_config.json: the folder loads here, in transformers'
        `BertTokenizerFast.from_pretrained` and in `tokenizers.Tokenizer.from_file(".../tokenizer.json")`, with the
        same ids (hf_files.py). A tokenizer already in the folder is replaced whole."""
        write_tokenizer_folder(self, directory)

    def tokenizer_json(self) -> dict:
        """This tokenizer in the `tokenizers` library's format: the JSON transformers' BertTokenizerFast saves."""
        return tokenizer_json(self)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, **overrides) -> WordPieceTokenizer:
        """Load a folder with vocab.txt (+ tokenizer_config.json) or tokenizer.json, as Hugging Face BERT checkpoints
        and `save_pretrained` write it; also a vocab.txt file, a run folder (its latest checkpoint's tokenizer) or
        "minilm" (minibert.io.model_folder.resolve_tokenizer_folder). Keyword arguments override the saved settings:
        `from_pretrained(dir, do_lower_case=False)`. A folder with added tokens beyond the special tokens, which
        Hugging Face would split off the text whole, is refused (hf_files.check_added_tokens)."""
        path = resolve_tokenizer_folder(path, option=None)
        vocab, kwargs, added = read_tokenizer_folder(path)
        named_by_files = tuple(kwargs.get(role, default) for role, default in SPECIAL_TOKENS_BY_ROLE.items())
        try:
            tokenizer = cls(vocab, **{**kwargs, **overrides})
        except ValueError as e:  # e.g. a text file given as the vocabulary: say which file
            raise ValueError(f"{path}: not a usable WordPiece tokenizer: {e}") from None
        check_added_tokens(tokenizer, added, named_by_files)
        return tokenizer


def _batch_of_texts(texts, name: str, none_allowed: bool = False) -> list:
    """encode_batch's `texts` (or `text_pairs`, named by `name`) as a list, or a one-line TypeError. One str is a
    batch of one; a list, a tuple, a 1-D array or another sized collection is taken in its order. Refused, as
    Hugging Face's tokenizers refuse them (so that code moves between the two unchanged): a generator or another
    iterator (pass list(...)), and a set, whose order, and so the order of the batch's rows, is arbitrary. A
    mapping is refused too: its keys are no batch of texts (a BatchEncoding, say, is already tokenized)."""
    if isinstance(texts, str):
        return [texts]
    expected = f"{name} must be {'None, ' if none_allowed else ''}a str or a list of str"
    kind = type(texts).__name__
    if texts is None:
        raise TypeError(f"{expected}, got None")
    if isinstance(texts, (bytes, bytearray)):
        raise TypeError(f"{expected}, got {kind}: decode it to str first (e.g. .decode('utf-8'))")
    if isinstance(texts, Iterator):
        raise TypeError(f"{expected}, got a {kind}, which can be read only once and has no length: pass "
                        f"list({name}) (Hugging Face's tokenizers refuse it too)")
    if isinstance(texts, (set, frozenset)):
        raise TypeError(f"{expected}, got a {kind}, which has no order for the batch's rows to follow: pass a "
                        f"list (e.g. sorted({name}))")
    if isinstance(texts, Mapping):
        raise TypeError(f"{expected}, got a {kind}, a mapping: its keys are no batch of texts")
    if not (isinstance(texts, Iterable) and isinstance(texts, Sized)):
        raise TypeError(f"{expected}, got {kind}")
    return list(texts)


def longest_first(n_a: int, n_b: int, budget: int) -> tuple[int, int]:
    """How many tokens of each text to keep so that n_a + n_b <= budget, removing tokens one at a time
    from whichever text is longer (Hugging Face's "longest_first"). If both must be cut, they end up
    with half the budget each, the longer text getting the odd token (the second text if they tie)."""
    if n_a + n_b <= budget:
        return n_a, n_b
    short, long_ = min(n_a, n_b), max(n_a, n_b)
    if short <= budget // 2:  # only the longer text needs cutting
        long_ = budget - short
    else:
        short, long_ = budget // 2, budget - budget // 2
    return (short, long_) if n_a <= n_b else (long_, short)
