"""SentenceEncoder on a tiny random model: batching, sorting and padding never change a text's vector, mean
pooling skips padding, normalisation, and clear errors for a missing vocabulary or a mismatched one."""

import warnings

import numpy as np
import pytest

from minibert import BertForPreTraining, BertModel
from minibert.embeddings import (SentenceEncoder, cosine_similarity, encode_sentences, l2_normalize, mean_pool,
                                 pad_batch)
from minibert.tokenizer import WordPieceTokenizer
from tiny_checkpoint import make_tiny_checkpoint

WORDS = "the cat dog sat ran on mat fast slow big small house tree ##s ##ed ##ing".split()
VOCAB = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + list("abcdefghijklmnopqrstuvwxyz")
                           + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]))
TEXTS = ["the cat sat on the mat", "a dog", "big trees and small houses ran fast", "", "the", "cats sat",
         "a slow dog sat on a big mat near the small house"]


def make_checkpoint(folder, cls=BertModel, seed=0):
    return make_tiny_checkpoint(folder, VOCAB, cls=cls, seed=seed, hidden_size=32, num_attention_heads=4,
                                intermediate_size=48)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return SentenceEncoder.from_pretrained(make_checkpoint(tmp_path_factory.mktemp("tiny")))


def test_batching_and_sorting_keep_each_text_its_own_vector(encoder):
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])  # no padding at all
    for batch_size in (1, 2, 3, 32):
        together = encoder.encode(TEXTS, batch_size=batch_size)
        assert together.shape == (len(TEXTS), 32)
        np.testing.assert_allclose(together, alone, atol=2e-6, err_msg=f"batch_size={batch_size}")


@pytest.mark.parametrize("workers", [2, 3])
def test_batches_on_several_threads_give_the_same_vectors(encoder, workers):
    texts = TEXTS * 5  # 35 texts, 12 batches of 3: every worker runs several, finishing out of order
    one_at_a_time = encoder.encode(texts, batch_size=3, workers=1)
    np.testing.assert_array_equal(encoder.encode(texts, batch_size=3, workers=workers), one_at_a_time)
    token_ids = encoder.tokenize(texts)
    np.testing.assert_array_equal(encoder.encode_token_ids(token_ids, batch_size=3, workers=workers), one_at_a_time)


def test_vectors_are_mean_pooled_hidden_states(encoder):
    ids = encoder.tokenizer.encode(TEXTS[0]).input_ids
    hidden = encoder.model(np.array([ids])).last_hidden_state[0]  # (T, H)
    raw = encoder.encode([TEXTS[0]], normalize=False)[0]
    np.testing.assert_allclose(raw, hidden.mean(axis=0), atol=1e-6)
    normalized = encoder.encode([TEXTS[0]])[0]
    np.testing.assert_allclose(normalized, raw / np.linalg.norm(raw), atol=1e-6)
    assert abs(np.linalg.norm(raw) - 1.0) > 1e-3  # the raw vector really was not unit length


def test_long_text_is_truncated_to_the_position_limit(encoder):
    long_text = " ".join(["cat"] * 100)
    assert encoder.max_length == 16
    vector = encoder.encode([long_text, "a dog"])[0]
    np.testing.assert_allclose(vector, encoder.encode([" ".join(["cat"] * 14)])[0], atol=1e-6)  # 14 + CLS + SEP


def test_tokenize_with_lengths_cuts_as_the_tokenizer_does(encoder):
    """One tokenization gives the cut ids and the lengths before the cut (the embed command's note needs both)."""
    texts = [" ".join(["cat"] * 100), "a dog", " ".join(["cat"] * 14), " ".join(["cat"] * 15), ""]
    ids, lengths = encoder.tokenize_with_lengths(texts)
    assert ids == [list(encoder.tokenizer.encode(t, max_length=16, truncation=True).input_ids) for t in texts]
    assert ids == encoder.tokenize(texts)
    assert lengths == [len(encoder.tokenizer.encode(t).input_ids) for t in texts] == [102, 4, 16, 17, 2]
    assert ids[0][-1] == encoder.tokenizer.sep_token_id and len(ids[0]) == 16


def test_mean_pool_ignores_padding():
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((3, 5, 4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    expected = np.stack([hidden[b, mask[b] == 1].mean(axis=0) for b in range(3)])
    np.testing.assert_allclose(mean_pool(hidden, mask), expected)
    hidden[mask == 0] = 1e6  # whatever sits at padded positions never leaks in
    np.testing.assert_allclose(mean_pool(hidden, mask), expected)


def test_helpers():
    ids, mask = pad_batch([[2, 5, 3], [2, 3]], pad_id=0)
    np.testing.assert_array_equal(ids, [[2, 5, 3], [2, 3, 0]])
    np.testing.assert_array_equal(mask, [[1, 1, 1], [1, 1, 0]])
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    assert cosine_similarity(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(2 ** -0.5)
    assert cosine_similarity(x[:1], np.eye(2)).shape == (1, 2)


def test_encode_sentences_accepts_model_and_tokenizer(encoder):
    expected = encoder.encode(TEXTS[:3])
    got = encode_sentences(TEXTS[:3], model=encoder.model, tokenizer=encoder.tokenizer, batch_size=2)
    np.testing.assert_allclose(got, expected, atol=2e-6)
    np.testing.assert_allclose(encode_sentences(TEXTS[:3], model=encoder), expected, atol=2e-6)
    with pytest.raises(ValueError, match="also needs tokenizer="):
        encode_sentences(TEXTS, model=encoder.model)
    assert encoder.encode([]).shape == (0, 32)
    assert encoder.encode("a dog").shape == (1, 32)


def test_pretraining_checkpoint_works_as_encoder_without_noise(tmp_path, encoder):
    make_checkpoint(tmp_path, cls=BertForPreTraining, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the unused MLM/NSP heads are expected here, not worth a warning
        from_folder = SentenceEncoder.from_pretrained(tmp_path)
    task_model = BertForPreTraining.from_pretrained(tmp_path)  # a task model object works too (its .bert body)
    np.testing.assert_allclose(SentenceEncoder(task_model, from_folder.tokenizer).encode(TEXTS),
                               from_folder.encode(TEXTS), atol=1e-6)


def test_bad_input(tmp_path, encoder):
    make_checkpoint(tmp_path)
    (tmp_path / "vocab.txt").unlink()
    (tmp_path / "tokenizer.json").unlink()  # (saved beside vocab.txt: without both, no tokenizer is left)
    with pytest.raises(FileNotFoundError, match=r"vocab\.txt: missing"):
        SentenceEncoder.from_pretrained(tmp_path)
    bigger = WordPieceTokenizer(VOCAB + ["extra", "words"])
    expected = f"tokenizer has {len(VOCAB) + 2} tokens but the model's embedding matrix has only {len(VOCAB)} rows"
    with pytest.raises(ValueError, match=expected):
        SentenceEncoder(encoder.model, bigger)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        encoder.encode(TEXTS, batch_size=0)
    with pytest.raises(ValueError, match="text 1 is a int"):
        encoder.encode(["ok", 3])
    with pytest.raises(ValueError, match="max_length must be in 2..16"):
        SentenceEncoder(encoder.model, encoder.tokenizer, max_length=17)
    with pytest.raises(FileNotFoundError, match="no such run or model folder"):
        SentenceEncoder.from_pretrained(tmp_path / "missing")


def test_save_and_reload_gives_the_same_vectors(tmp_path, encoder):
    short = SentenceEncoder(encoder.model, encoder.tokenizer, max_length=8)
    short.save_pretrained(tmp_path / "saved")
    again = SentenceEncoder.from_pretrained(tmp_path / "saved")
    assert again.max_length == 8  # kept in sentence_bert_config.json
    np.testing.assert_array_equal(again.encode(TEXTS), short.encode(TEXTS))


def test_a_max_length_set_too_small_after_construction_is_refused_not_misread(encoder):
    # (the constructor checks max_length; the attribute is checked again where the texts are cut)
    import copy
    small = copy.copy(encoder)
    small.max_length = 1
    with pytest.raises(ValueError, match="max_length must be in 2..16"):
        small.tokenize(["cat cat cat"])
