"""Properties that need no reference library: any string at all encodes without error, and text already in
normal form survives encode -> decode unchanged (the minbpe-style round trip)."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from minibert.tokenizer import WordPieceTokenizer  # noqa: E402

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "##a", "##b", "##c", "ab", "##bc", "abc",
         ".", ",", "!", "?"]
TOK = WordPieceTokenizer(VOCAB)
CASED = WordPieceTokenizer(VOCAB, do_lower_case=False, tokenize_chinese_chars=False)

# Every code point, lone surrogates included (a Python str may hold them even though UTF-8 cannot).
any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())


@settings(max_examples=200, deadline=None)
@given(text=st.text(any_char, max_size=40), pair=st.one_of(st.none(), st.text(any_char, max_size=20)),
       max_length=st.integers(3, 30))
def test_any_string_encodes(text, pair, max_length):
    for tok in (TOK, CASED):
        e = tok.encode(text, pair)
        assert len(e.input_ids) == len(e.token_type_ids) == len(e.attention_mask) == len(e.word_ids)
        assert e.input_ids[0] == tok.cls_token_id and e.input_ids[-1] == tok.sep_token_id
        assert all(0 <= i < tok.vocab_size for i in e.input_ids)
        assert len(tok.encode(text, pair, truncation=True, max_length=max_length)) <= max_length
        tok.decode(e.input_ids)
        batch = tok.encode_batch([text, text + "a"], max_length=max_length)
        assert batch.input_ids.shape[1] <= max_length


words = st.text("abc", min_size=1, max_size=8)
normal_text = st.lists(st.one_of(words, st.sampled_from(".,!?")), max_size=12).map(
    lambda parts: "".join(p if i == 0 or p in ".,!?" else " " + p for i, p in enumerate(parts)))


@settings(max_examples=200, deadline=None)
@given(text=normal_text)
def test_normal_text_round_trips(text):
    assert TOK.decode(TOK.encode(text).input_ids) == text
