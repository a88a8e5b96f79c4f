"""The tokenizer's edges as Hugging Face has them: a max_length alone truncates (with a warning), decode takes
one id; ids that are not integers are refused instead of being cut to integers; a batch is a str or a list of str,
and None, a generator or a set is one clear TypeError."""

import numpy as np
import pytest

from minibert.tokenizer import WordPieceTokenizer

TOK = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", ".", "the"])


def test_a_max_length_alone_truncates_with_a_warning():
    with pytest.warns(UserWarning, match="max_length was given without truncation"):
        assert TOK.encode("hello world the", max_length=4).input_ids == [2, 5, 6, 3]
    assert len(TOK.encode("hello world the", max_length=4, truncation=False).input_ids) == 5  # said: keep all
    with pytest.raises(ValueError, match="max_length must be an integer, got '3'"):
        TOK.encode("hello", max_length="3", truncation=True)


def test_decode_takes_one_id_and_refuses_what_is_no_id():
    assert TOK.decode(5) == TOK.decode(np.int64(5)) == TOK.decode([5]) == "hello"
    for bad in ([5.9, 6.2], ["5"], "hello"):
        with pytest.raises(ValueError, match="decode takes integer token ids"):
            TOK.decode(bad)
    assert TOK.decode([]) == ""


def test_the_same_as_hugging_face_on_minilm():
    transformers = pytest.importorskip("transformers")
    from minibert.data.builtin import minilm_dir
    theirs = transformers.BertTokenizerFast.from_pretrained(str(minilm_dir()))
    ours = WordPieceTokenizer.from_pretrained(minilm_dir())
    text = "The quick brown fox jumps over the lazy dog."
    with pytest.warns(UserWarning):
        assert ours.encode(text, max_length=6).input_ids == theirs(text, max_length=6)["input_ids"]
    assert ours.decode(7592) == theirs.decode(7592)


@pytest.mark.parametrize("encode", [TOK.encode_batch, TOK], ids=["encode_batch", "__call__"])
def test_a_batch_that_is_no_batch_of_texts_is_one_clear_type_error(encode):
    def texts():
        yield from ("hello world", "the")

    cases = [(None, "got None"), (texts(), r"got a generator, .*pass list\(texts\)"),
             (iter(["hello"]), r"got a list_iterator, .*pass list\(texts\)"),
             ({"hello", "the"}, r"got a set, which has no order"), (b"hello", "got bytes: decode it"),
             (TOK.encode_batch(["hello"]), "got a BatchEncoding, a mapping"), (5, "got int")]
    for bad, detail in cases:
        with pytest.raises(TypeError, match=r"^texts must be a str or a list of str, " + detail) as info:
            encode(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match=r"^text_pairs must be None, a str or a list of str, got a generator"):
        encode(["hello", "the"], (t for t in ["world", "hello"]))


def test_any_sized_ordered_collection_of_texts_is_a_batch():
    texts = ["hello world", "the", "hellos ."]
    expected = TOK.encode_batch(texts)
    for same in (tuple(texts), np.array(texts), {t: 0 for t in texts}.keys()):
        np.testing.assert_array_equal(TOK.encode_batch(same).input_ids, expected.input_ids)
    np.testing.assert_array_equal(TOK(texts[1]).input_ids, TOK.encode_batch([texts[1]]).input_ids)


def test_hugging_face_refuses_a_generator_and_a_set_as_we_do(mb_uncased, hf_uncased):
    # The choice above follows theirs: a list or a tuple is a batch, a generator or a set is not (their fast
    # tokenizer says so with a ValueError, the `tokenizers` backend with a TypeError; we say TypeError).
    texts = ["The quick brown fox.", "jumps over the lazy dog"]
    ids = hf_uncased(texts)["input_ids"]
    for batch in (texts, tuple(texts)):
        assert [e.input_ids for e in mb_uncased(batch).encodings] == ids == hf_uncased(tuple(texts))["input_ids"]
    for make in (lambda: (t for t in texts), lambda: set(texts)):
        with pytest.raises((TypeError, ValueError)):
            hf_uncased(make())
        with pytest.raises(TypeError):
            hf_uncased.backend_tokenizer.encode_batch(make())
        with pytest.raises(TypeError):
            mb_uncased(make())
