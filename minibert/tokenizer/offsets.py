"""Character offsets of every token: which characters of the original text each token came from.

Extractive question answering maps an answer's characters to tokens and back, and NER shows tags on words of
the text: both need, for every token, the span [start, end) of the original string it covers, as Hugging
Face's `return_offsets_mapping=True` gives it ((0, 0) for [CLS], [SEP] and padding).

The fast path of the tokenizer normalises a whole text at once and forgets where each character came from.
Here the text is normalised one character at a time (the normaliser works character by character anyway:
cleaning, CJK spacing, accent stripping and lowercasing never look at a neighbour), and every normalised
character remembers the index of the original character it came from. A token covering normalised
characters [s, e) then covers original characters [align[s], align[e - 1] + 1). Characters the normaliser
drops (control characters, accents) belong to no token. A word that becomes [UNK] covers the whole word.
"""

from __future__ import annotations

from minibert.tokenizer.basic import _WORD_RE


def _normalized_with_alignment(tokenizer, text: str, base: int, memo: dict) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index in the original string it came from."""
    normalize = tokenizer.basic.normalize
    chars, align = [], []
    for i, c in enumerate(text):
        n = memo.get(c)
        if n is None:
            n = memo[c] = normalize(c)
        if n:
            chars.append(n)
            align.extend([base + i] * len(n))
    return "".join(chars), align


def _piece_lengths(tokenizer, pieces: list[int]) -> list[int]:
    """How many characters of the normalised word each WordPiece piece covers ("##" continuations: minus 2)."""
    tokens = tokenizer.ids_to_tokens
    return [len(tokens[p]) - (2 if k else 0) for k, p in enumerate(pieces)]


def encode_with_offsets(tokenizer, text: str) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """(ids, word ids, offsets) of one text without special tokens; ids and word ids equal the fast path's."""
    if not isinstance(text, str):
        raise ValueError(f"expected a str to tokenize, got {type(text).__name__}")
    ids, word_ids, offsets = [], [], []
    n_words, memo, position = 0, {}, 0
    hint = tokenizer._special_hint
    matches = list(tokenizer._special_re.finditer(text)) if hint is None or hint in text else []
    for part_end, special in [(m.start(), m) for m in matches] + [(len(text), None)]:
        normalized, align = _normalized_with_alignment(tokenizer, text[position:part_end], position, memo)
        for word in _WORD_RE.finditer(normalized):
            pieces = tokenizer.wordpiece(word.group())
            if pieces == [tokenizer.unk_token_id]:
                spans = [(word.start(), word.end())]
            else:
                spans, s = [], word.start()
                for length in _piece_lengths(tokenizer, pieces):
                    spans.append((s, s + length))
                    s += length
            for piece, (s, e) in zip(pieces, spans):
                ids.append(piece)
                word_ids.append(n_words)
                offsets.append((align[s], align[e - 1] + 1))
            n_words += 1
        if special is not None:  # a special token written in the text is one word, kept whole
            ids.append(tokenizer.vocab[special.group()])
            word_ids.append(n_words)
            offsets.append((special.start(), special.end()))
            n_words += 1
            position = special.end()
    return ids, word_ids, offsets
