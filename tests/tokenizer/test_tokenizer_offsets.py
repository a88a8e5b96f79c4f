"""Character offsets (return_offsets_mapping) equal BertTokenizerFast's on the MiniLM vocabulary: uncased,
cased, and cased with strip_accents; hard cases, Wikipedia summaries, pairs with truncation, random Unicode."""

from __future__ import annotations

import pytest

from test_tokenizer_parity import random_text, rust_backend

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402

# What offsets are hardest on: characters the normaliser changes, splits, drops or expands.
OFFSET_CASES = [
    "Héllo Wörld", "cafe\u0301 re\u0301sume\u0301 with combining accents", "ÀÉÎÕÜ àéîõü ÇÑ",
    "İstanbul ß ẞ ΟΔΟΣ", "中文字符和日本語", "混合English中文mixed", "a\u3000b\u00a0c\u2028d\u2029e\tf\ng\rh",
    "   leading and trailing   ", "x\x00y\x01z \ufffd gone", "!!!...???,,,", "(a)[b]{c}<d>", "e.g. U.S.A.",
    "unaffable pneumonoultramicroscopicsilicovolcanoconiosis", "unknown: 👨‍👩‍👧 ☃ \U00011938 ꙮ",
    "[CLS] literal [SEP] and [MASK]s here", "[MASK][MASK]x[UNK]", "word[MASK]word", "\u212b \u00c5 A\u030a ﬁ",
]


@pytest.fixture(scope="module")
def flavours(minilm_dir, hf_uncased, hf_cased, mb_uncased, mb_cased):
    """(name, reference, minibert) for uncased, cased, and cased with accents stripped."""
    transformers = pytest.importorskip("transformers")
    from minibert.tokenizer import WordPieceTokenizer
    hf_strip = transformers.BertTokenizerFast.from_pretrained(str(minilm_dir), do_lower_case=False,
                                                              strip_accents=True)
    mb_strip = WordPieceTokenizer.from_pretrained(minilm_dir, do_lower_case=False, strip_accents=True)
    return [("uncased", hf_uncased, mb_uncased), ("cased", hf_cased, mb_cased), ("strip", hf_strip, mb_strip)]


def assert_offsets(mb, text, ref_ids, ref_offsets, pair=None, **kwargs):
    mine = mb.encode(text, pair, return_offsets_mapping=True, **kwargs)
    assert mine.input_ids == list(ref_ids), (text, pair)
    assert mine.offsets == [tuple(o) for o in ref_offsets], (text, pair)
    plain = mb.encode(text, pair, **kwargs)  # the offsets path gives the fast path's ids and word ids
    assert (mine.input_ids, mine.word_ids) == (plain.input_ids, plain.word_ids)


def test_hard_cases(flavours, hard_cases):
    for _name, hf, mb in flavours:
        for text in hard_cases + OFFSET_CASES:
            ref = hf(text, return_offsets_mapping=True)
            assert_offsets(mb, text, ref["input_ids"], ref["offset_mapping"])


def test_offsets_point_at_the_token_text(mb_cased):
    # Independent of the reference: in cased mode every piece is literally the characters it covers.
    text = "hello, naïve [MASK] world!"  # the uncased vocabulary read cased: "naïve" is one [UNK] word
    e = mb_cased.encode(text, return_offsets_mapping=True)
    assert e.offsets[0] == e.offsets[-1] == (0, 0)
    covered = [text[s:t] for s, t in e.offsets]
    assert covered[e.tokens.index("[MASK]")] == "[MASK]"
    assert covered[e.tokens.index("[UNK]")] == "naïve"  # an unknown word covers the whole word
    for token, span in zip(e.tokens[1:-1], covered[1:-1]):
        assert token == "[UNK]" or token.removeprefix("##") == span


def test_summaries(hf_uncased, mb_uncased, summaries):
    texts = summaries[::10]
    for text, ref in zip(texts, rust_backend(hf_uncased).encode_batch(texts)):
        assert_offsets(mb_uncased, text, ref.ids, ref.offsets)


@pytest.mark.parametrize("max_length", [5, 24, 512])
def test_pairs_with_truncation(max_length, hf_uncased, mb_uncased, summaries):
    questions = ["What is it?", "Who wrote Héllo?"] + [s[:60] for s in summaries[100:110]]
    contexts = summaries[200:212]
    ref = hf_uncased(questions, contexts, truncation=True, max_length=max_length, return_offsets_mapping=True)
    for i, (q, c) in enumerate(zip(questions, contexts)):
        assert_offsets(mb_uncased, q, ref["input_ids"][i], ref["offset_mapping"][i], pair=c, truncation=True,
                       max_length=max_length)


@settings(max_examples=60, deadline=None)
@given(text=random_text)
def test_random_unicode(text, flavours):
    for _name, hf, mb in flavours:
        ref = hf(text, return_offsets_mapping=True)
        assert_offsets(mb, text, ref["input_ids"], ref["offset_mapping"])
