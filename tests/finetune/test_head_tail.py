"""--long-texts head-tail: a long text keeps its first quarter-window and its end (Sun et al. 2019)."""

import numpy as np
import pytest

from minibert.finetune.data import Examples
from minibert.finetune.head_tail import encode_head_tail, head_tail


def test_a_long_text_keeps_its_head_and_tail():
    pieces = list(range(1000))
    kept = head_tail(pieces, 510)
    assert kept == list(range(128)) + list(range(1000 - 382, 1000))  # Sun et al.'s 128 + 382
    assert head_tail(pieces[:510], 510) == pieces[:510]  # a text that fits is whole
    assert head_tail(pieces, 8) == [0, 1] + list(range(994, 1000))


def test_encoded_as_cls_head_tail_sep():
    from minibert.tokenizer import WordPieceTokenizer
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(20)]
    tokenizer = WordPieceTokenizer(vocab)
    text = " ".join(f"w{i}" for i in range(20))
    (ids, types), = encode_head_tail(tokenizer, Examples([text], ["a"]), max_length=10)
    words = [vocab[i] for i in ids]
    assert words == ["[CLS]", "w0", "w1", "w14", "w15", "w16", "w17", "w18", "w19", "[SEP]"]
    assert types.tolist() == [0] * 10 and ids.dtype == np.int64
    with pytest.raises(ValueError, match="text pairs are truncated"):
        encode_head_tail(tokenizer, Examples(["a"], ["x"], ["b"]), max_length=10)
