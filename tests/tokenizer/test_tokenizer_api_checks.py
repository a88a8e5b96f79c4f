"""The tokenizer's edges as Hugging Face has them: a max_length alone truncates (with a warning), decode takes
one id; ids that are not integers are refused instead of being cut to integers."""

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
