"""minibert's tokenizer against Hugging Face's BertTokenizerFast on the MiniLM vocabulary: same ids, same token
types, same word ids, same decoded text, on 10,033 Wikipedia summaries, on hard cases and on random Unicode."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402


def rust_backend(hf):
    """The Rust tokenizer inside a BertTokenizerFast, without the padding/truncation it was saved with.
    Encoding 10,033 texts through it is several times faster than through transformers' Python layer;
    test_backend_is_the_reference checks that both give the same."""
    tokenizers = pytest.importorskip("tokenizers")
    rust = tokenizers.Tokenizer.from_str(hf.backend_tokenizer.to_str())
    rust.no_truncation()
    rust.no_padding()
    return rust


def assert_same(mine, ref, text):
    assert mine.input_ids == list(ref.ids), text
    assert mine.token_type_ids == list(ref.type_ids), text
    assert mine.word_ids == list(ref.word_ids), text


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_backend_is_the_reference(cased, hf_uncased, hf_cased, summaries, hard_cases):
    hf = hf_cased if cased else hf_uncased
    texts = summaries[::50] + hard_cases
    rust = rust_backend(hf)
    via_python = hf(texts)
    for i, e in enumerate(rust.encode_batch(texts)):
        assert via_python["input_ids"][i] == e.ids
        assert via_python.word_ids(i) == e.word_ids


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_every_summary(cased, hf_uncased, hf_cased, mb_uncased, mb_cased, summaries):
    hf, mb = (hf_cased, mb_cased) if cased else (hf_uncased, mb_uncased)
    assert len(summaries) == 10033
    # Cased mode on an uncased vocabulary is mostly [UNK]; a fixed fifth of the texts is enough there.
    texts = summaries[::5] if cased else summaries
    for text, ref in zip(texts, rust_backend(hf).encode_batch(texts)):
        assert_same(mb.encode(text), ref, text)


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
def test_hard_cases(cased, hf_uncased, hf_cased, mb_uncased, mb_cased, hard_cases):
    hf, mb = (hf_cased, mb_cased) if cased else (hf_uncased, mb_uncased)
    for text in hard_cases:
        ref = hf(text)
        mine = mb.encode(text)
        assert mine.input_ids == ref["input_ids"], text
        assert mine.word_ids == ref.word_ids(), text
        assert mb.tokenize(text) == hf.tokenize(text), text
        assert mb.decode(mine.input_ids) == hf.decode(ref["input_ids"], skip_special_tokens=True), text
        assert mb.decode(mine.input_ids, skip_special_tokens=False) == hf.decode(ref["input_ids"]), text


@pytest.mark.parametrize("max_length", [3, 4, 5, 8, 17, 64, 128, 512])
def test_pairs_with_truncation(max_length, hf_uncased, mb_uncased, summaries, hard_cases):
    a_texts = summaries[0:400:4] + hard_cases
    b_texts = summaries[1:401:4] + hard_cases[::-1]
    if max_length < 64:
        # Hugging Face keeps what truncation cuts off as "overflowing" pieces of max_length tokens, for
        # both texts of a pair in every combination: with whole summaries and a tiny max_length that takes
        # minutes. Shorter texts test the same rule.
        a_texts, b_texts = [t[:100] for t in a_texts], [t[:80] for t in b_texts]
    ref = hf_uncased(a_texts, b_texts, truncation=True, max_length=max_length)
    for i, (a, b) in enumerate(zip(a_texts, b_texts)):
        mine = mb_uncased.encode(a, b, truncation=True, max_length=max_length)
        assert mine.input_ids == ref["input_ids"][i], (a, b)
        assert mine.token_type_ids == ref["token_type_ids"][i], (a, b)
        assert mine.word_ids == ref.word_ids(i), (a, b)
    single = hf_uncased(a_texts, truncation="longest_first", max_length=max_length)
    for i, a in enumerate(a_texts):
        mine = mb_uncased.encode(a, truncation="longest_first", max_length=max_length)
        assert mine.input_ids == single["input_ids"][i], a


def test_pairs_cased_and_without_special_tokens(hf_cased, mb_cased, summaries):
    a_texts, b_texts = summaries[5:300:7], summaries[6:301:7]
    ref = hf_cased(a_texts, b_texts, truncation=True, max_length=40, add_special_tokens=False)
    for i, (a, b) in enumerate(zip(a_texts, b_texts)):
        mine = mb_cased.encode(a, b, truncation=True, max_length=40, add_special_tokens=False)
        assert mine.input_ids == ref["input_ids"][i]
        assert mine.token_type_ids == ref["token_type_ids"][i]


def test_no_truncation_by_default(hf_uncased, mb_uncased, summaries):
    long_text = " ".join(summaries[:40])
    assert mb_uncased.encode(long_text).input_ids == hf_uncased(long_text)["input_ids"]
    assert len(mb_uncased.encode(long_text)) > 512
    assert len(mb_uncased.encode(long_text, truncation=True)) == 512  # model_max_length


def test_batch_equals_hf_padding(hf_uncased, mb_uncased, summaries):
    texts, pairs = summaries[10:42], summaries[42:74]
    for kwargs in ({"padding": True}, {"padding": "max_length", "max_length": 96}):
        ref = hf_uncased(texts, pairs, truncation=True, max_length=kwargs.get("max_length", 80),
                         padding=kwargs["padding"], return_tensors="np")
        mine = mb_uncased.encode_batch(texts, pairs, truncation=True, max_length=kwargs.get("max_length", 80),
                                       padding=kwargs["padding"])
        for name in ("input_ids", "token_type_ids", "attention_mask"):
            assert mine[name].dtype == np.int64
            np.testing.assert_array_equal(mine[name], ref[name])
            np.testing.assert_array_equal(getattr(mine, name), ref[name])


def test_decode_summaries(hf_uncased, mb_uncased, summaries):
    for text in summaries[::25]:
        ids = mb_uncased.encode(text).input_ids
        assert mb_uncased.decode(ids) == hf_uncased.decode(ids, skip_special_tokens=True)
        assert mb_uncased.decode(np.array(ids), skip_special_tokens=False) == hf_uncased.decode(ids)


def test_vocabulary_and_special_ids(hf_uncased, mb_uncased):
    assert mb_uncased.vocab_size == len(hf_uncased) == 30522
    assert mb_uncased.vocab == hf_uncased.get_vocab()
    for name in ("pad", "unk", "cls", "sep", "mask"):
        assert getattr(mb_uncased, f"{name}_token_id") == getattr(hf_uncased, f"{name}_token_id")
    assert sorted(mb_uncased.all_special_ids) == sorted(hf_uncased.all_special_ids)
    ids = list(range(990, 1010))
    assert mb_uncased.convert_ids_to_tokens(ids) == hf_uncased.convert_ids_to_tokens(ids)
    tokens = ["hello", "##ing", "nosuchtoken", "[MASK]"]
    assert mb_uncased.convert_tokens_to_ids(tokens) == hf_uncased.convert_tokens_to_ids(tokens)


# Random text: any code point (hypothesis leaves out surrogates, which UTF-8 cannot carry), mixed with
# pieces known to be tricky so that they meet in unusual neighbourhoods.
TRICKY = ["[MASK]", "[CLS]", "[", "]", "\u0301", "\u200d", "Σ", "İ", "中", " ", "\t", "\x00", "##", "a" * 101,
          "é", "ﬁ", "\ufffd", "'", ".", "\U00011938"]
random_text = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(TRICKY)), max_size=12).map("".join)


@settings(max_examples=100, deadline=None)
@given(text=random_text, pair=st.one_of(st.none(), random_text), max_length=st.integers(3, 40))
def test_random_unicode_equals_reference(text, pair, max_length, hf_uncased, hf_cased, mb_uncased, mb_cased):
    # Lists, because transformers' single-text call drops an empty text_pair ("" is falsy there) while its
    # batch call and the Rust library encode it as an empty segment B, as minibert does.
    pairs = None if pair is None else [pair]
    for hf, mb in ((hf_uncased, mb_uncased), (hf_cased, mb_cased)):
        ref = hf([text], pairs)
        mine = mb.encode(text, pair)
        assert mine.input_ids == ref["input_ids"][0]
        assert mine.token_type_ids == ref["token_type_ids"][0]
        assert mine.word_ids == ref.word_ids(0)
        assert mb.decode(mine.input_ids) == hf.decode(ref["input_ids"][0], skip_special_tokens=True)
        ref = hf([text], pairs, truncation=True, max_length=max_length)
        assert mb.encode(text, pair, truncation=True, max_length=max_length).input_ids == ref["input_ids"][0]
