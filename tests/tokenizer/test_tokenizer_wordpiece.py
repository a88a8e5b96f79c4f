"""WordPieceTokenizer on a small hand-made vocabulary: greedy matching, special tokens, pairs, truncation,
batches, decoding, saving and loading, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from minibert.tokenizer import Encoding, WordPieceTokenizer
from minibert.tokenizer.wordpiece import longest_first

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff", "able", "the", "cat",
         "##s", "sat", "!", ",", ".", "a", "##a", "b", "##b", "c", "##c", "hello", "world"]


@pytest.fixture
def tok():
    return WordPieceTokenizer(VOCAB)


def test_greedy_longest_match_first(tok):
    assert tok.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tok.tokenize("cats sat.") == ["cat", "##s", "sat", "."]
    assert tok.tokenize("abcab") == ["a", "##b", "##c", "##a", "##b"]
    # One uncoverable character makes the whole word unknown, not just a piece of it.
    assert tok.tokenize("catz hello") == ["[UNK]", "hello"]


def test_words_longer_than_the_limit_are_unknown(tok):
    assert tok.tokenize("a" * 100) == ["a"] + ["##a"] * 99
    assert tok.tokenize("a" * 101) == ["[UNK]"]
    assert WordPieceTokenizer(VOCAB, max_input_chars_per_word=3).tokenize("abca abc") == ["[UNK]", "a", "##b", "##c"]


def test_encode_single_and_pair(tok):
    e = tok.encode("Hello world!")
    assert isinstance(e, Encoding)
    assert e.tokens == ["[CLS]", "hello", "world", "!", "[SEP]"]
    assert e.input_ids == [2, 23, 24, 14, 3]
    assert e.token_type_ids == [0] * 5 and e.attention_mask == [1] * 5
    assert e.word_ids == [None, 0, 1, 2, None]
    p = tok.encode("the cats", "unaffable")
    assert p.tokens == ["[CLS]", "the", "cat", "##s", "[SEP]", "un", "##aff", "##able", "[SEP]"]
    assert p.token_type_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert p.word_ids == [None, 0, 1, 1, None, 0, 0, 0, None]
    assert tok.encode("the cat", add_special_tokens=False).input_ids == [10, 11]


def test_special_tokens_in_text_are_kept_whole(tok):
    e = tok.encode("the [MASK] sat[SEP]x [mask]")
    assert e.tokens == ["[CLS]", "the", "[MASK]", "sat", "[SEP]", "[UNK]", "[UNK]", "[UNK]", "[UNK]", "[SEP]"]
    assert e.word_ids == [None, 0, 1, 2, 3, 4, 5, 6, 7, None]


def test_longest_first_rule():
    assert longest_first(3, 4, 10) == (3, 4)    # fits
    assert longest_first(10, 3, 8) == (5, 3)    # only the longer text is cut
    assert longest_first(3, 10, 8) == (3, 5)
    assert longest_first(6, 7, 8) == (4, 4)     # both cut: half each
    assert longest_first(9, 6, 7) == (4, 3)     # the longer one gets the odd token
    assert longest_first(6, 9, 7) == (3, 4)
    assert longest_first(6, 6, 7) == (3, 4)     # a tie: the second text gets it
    assert longest_first(5, 5, 0) == (0, 0)


def test_truncation(tok):
    text = "a b c a b c a b c"
    assert len(tok.encode(text, truncation=True, max_length=5)) == 5
    assert tok.encode(text, truncation=True, max_length=5).tokens == ["[CLS]", "a", "b", "c", "[SEP]"]
    assert len(tok.encode(text)) == 11  # no truncation unless asked
    p = tok.encode(text, "the cat", truncation="longest_first", max_length=8)
    assert p.tokens == ["[CLS]", "a", "b", "c", "[SEP]", "the", "cat", "[SEP]"]
    with pytest.raises(ValueError, match="max_length=2"):
        tok.encode("a", "b", truncation=True, max_length=2)
    with pytest.raises(ValueError, match="truncation"):
        tok.encode("a", truncation="only_second")


def test_encode_batch_pads_to_arrays(tok):
    batch = tok.encode_batch(["hello world", "a", "the cat sat !"])
    assert batch["input_ids"].shape == (3, 6) and batch["input_ids"].dtype == np.int64
    np.testing.assert_array_equal(batch.input_ids[1], [2, 17, 3, 0, 0, 0])
    np.testing.assert_array_equal(batch.attention_mask[1], [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(batch.word_ids[1], [-1, 0, -1, -1, -1, -1])
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask"}  # model.forward(**batch)
    assert len(batch.encodings) == 3
    fixed = tok.encode_batch(["hello", "a b"], ["world", "c"], padding="max_length", max_length=8)
    assert fixed.input_ids.shape == (2, 8)
    np.testing.assert_array_equal(fixed.token_type_ids[0], [0, 0, 0, 1, 1, 0, 0, 0])
    cut = tok.encode_batch(["a b c a b c"], max_length=4)  # truncation is on by default in batches
    assert cut.input_ids.shape == (1, 4)
    assert tok("hello").input_ids.shape == (1, 3)  # __call__ = encode_batch, a str is a batch of one
    assert tok.encode_batch([]).input_ids.shape == (0, 0)
    with pytest.raises(ValueError, match="different lengths"):
        tok.encode_batch(["a", "a b"], padding=False)
    with pytest.raises(ValueError, match="needs max_length"):
        tok.encode_batch(["a"], padding="max_length")
    with pytest.raises(ValueError, match="text_pairs"):
        tok.encode_batch(["a", "b"], ["c"])


def test_decode(tok):
    ids = tok.encode("Hello, unaffable cats!").input_ids
    assert tok.decode(ids) == "hello, unaffable cats!"
    assert tok.decode(ids, skip_special_tokens=False) == "[CLS] hello, unaffable cats! [SEP]"
    assert tok.decode(np.array(ids)) == "hello, unaffable cats!"
    assert tok.decode([]) == ""
    assert tok.batch_decode(tok.encode_batch(["a", "b c"]).input_ids) == ["a", "b c"]
    with pytest.raises(ValueError, match="id -100 is not in the vocabulary"):
        tok.decode([5, -100])
    with pytest.raises(ValueError, match="batch_decode"):
        tok.decode([[5, 6]])


def test_round_trip_of_normalised_text(tok):
    # minbpe-style: text that is already in normal form comes back unchanged.
    for text in ["hello world", "the cats sat.", "unaffable, able!", "abc cab bca", ""]:
        assert tok.decode(tok.encode(text).input_ids) == text


def test_ids_and_tokens(tok):
    assert tok.vocab_size == len(tok) == len(VOCAB)
    assert tok.vocab["cat"] == 11 and tok.ids_to_tokens[11] == "cat"
    ids = (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id)
    assert ids == (0, 1, 2, 3, 4)
    assert tok.all_special_ids == [0, 1, 2, 3, 4]
    assert tok.convert_tokens_to_ids("cat") == 11
    assert tok.convert_tokens_to_ids(["cat", "nope"]) == [11, 1]
    assert tok.convert_ids_to_tokens(11) == "cat"
    assert tok.convert_ids_to_tokens(np.array([11, 12])) == ["cat", "##s"]


def test_save_and_load_keep_settings(tmp_path):
    tok = WordPieceTokenizer(VOCAB, do_lower_case=False, strip_accents=True, tokenize_chinese_chars=False,
                             model_max_length=128)
    tok.save_pretrained(tmp_path / "tok")
    assert (tmp_path / "tok" / "vocab.txt").read_text(encoding="utf-8").splitlines() == VOCAB
    config = json.loads((tmp_path / "tok" / "tokenizer_config.json").read_text())
    assert config["do_lower_case"] is False and config["strip_accents"] is True
    assert config["tokenize_chinese_chars"] is False and config["model_max_length"] == 128
    again = WordPieceTokenizer.from_pretrained(tmp_path / "tok")
    assert again.ids_to_tokens == VOCAB
    assert (again.do_lower_case, again.strip_accents, again.tokenize_chinese_chars, again.model_max_length) == (
        False, True, False, 128)
    assert WordPieceTokenizer.from_pretrained(tmp_path / "tok", do_lower_case=True).do_lower_case is True
    assert WordPieceTokenizer.from_pretrained(tmp_path / "tok" / "vocab.txt").vocab_size == len(VOCAB)
    assert not [p for p in (tmp_path / "tok").iterdir() if p.name.startswith(".")]  # no temporary files left


def test_load_from_tokenizer_json_only(tmp_path, minilm_dir):
    (tmp_path / "tokenizer.json").write_bytes((minilm_dir / "tokenizer.json").read_bytes())
    tok = WordPieceTokenizer.from_pretrained(tmp_path)
    assert tok.vocab_size == 30522 and tok.do_lower_case is True
    assert tok.tokenize("Héllo unaffable") == ["hello", "una", "##ffa", "##ble"]


def test_bad_vocabularies(tmp_path):
    with pytest.raises(ValueError, match="duplicate token 'cat'"):
        WordPieceTokenizer(VOCAB + ["cat"])
    with pytest.raises(ValueError, match=r"no unknown token '\[UNK\]'"):
        WordPieceTokenizer([t for t in VOCAB if t != "[UNK]"])
    (tmp_path / "dup").mkdir()
    (tmp_path / "dup" / "vocab.txt").write_text("[UNK]\na\nb\na\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"duplicate token 'a' on lines 2 and 4"):
        WordPieceTokenizer.from_pretrained(tmp_path / "dup")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "vocab.txt").write_bytes(b"[UNK]\nab\n\xffc\n")
    with pytest.raises(ValueError, match=r"vocab.txt: not UTF-8 text: byte 0xff at byte offset 9"):
        WordPieceTokenizer.from_pretrained(tmp_path / "bad")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "vocab.txt").write_text("")
    with pytest.raises(ValueError, match="empty vocabulary"):
        WordPieceTokenizer.from_pretrained(tmp_path / "empty")
    with pytest.raises(FileNotFoundError):
        WordPieceTokenizer.from_pretrained(tmp_path / "missing")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(FileNotFoundError, match="no vocab.txt or tokenizer.json in this folder"):
        WordPieceTokenizer.from_pretrained(tmp_path / "nothing")


def test_error_messages_are_one_line(tmp_path):
    (tmp_path / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError) as info:
        WordPieceTokenizer.from_pretrained(tmp_path)
    assert "\n" not in str(info.value)


def test_non_text_input(tok):
    with pytest.raises(ValueError, match="expected a str"):
        tok.encode(None)


def test_clear_cache_empties_the_cache_and_changes_no_output():
    from minibert.tokenizer import WordPieceTokenizer
    tok = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "##s"])
    before = tok.tokenize("hellos world!")
    assert tok._cache
    tok.clear_cache()
    assert not tok._cache
    assert tok.tokenize("hellos world!") == before == ["hello", "##s", "world", "!"]
