"""Wrappers around a caller's model leave its train/eval mode alone (a fine-tuning loop that embeds or fills
masks on the side keeps its dropout), max_length is checked the same way however the encoder is made, progress
bars are minibert's notebook-aware ones, and a cosine never leaves [-1, 1]."""

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertModel, WordPieceTokenizer
from minibert.embeddings import SentenceEncoder, encode_sentences
from minibert.fill_mask import FillMask
from tiny_checkpoint import make_tiny_checkpoint

WORDS = "the cat dog sat ran on mat hello world".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + list("abcdefghijklmnopqrstuvwxyz")
TOK = WordPieceTokenizer(VOCAB)


def config():
    return BertConfig.preset("tiny", vocab_size=len(VOCAB), hidden_size=16, num_attention_heads=2,
                             intermediate_size=32, num_hidden_layers=1, max_position_embeddings=16)


@pytest.mark.parametrize("training", [True, False])
def test_wrappers_leave_the_callers_mode_alone(training):
    body, mlm = BertModel(config()).train(training), BertForMaskedLM(config()).train(training)
    encoder = SentenceEncoder(body, TOK)
    assert body.training is training
    encoder.encode(["the cat sat"])
    assert body.training is training
    encode_sentences(["the dog ran"], model=body, tokenizer=TOK)
    assert body.training is training
    filler = FillMask(mlm, TOK)
    assert mlm.training is training
    filler("the [MASK] sat")
    assert mlm.training is training


def test_embeddings_are_eval_mode_numbers_whatever_the_callers_mode():
    body = BertModel(config(), seed=1)
    encoder = SentenceEncoder(body.eval(), TOK)
    expected = encoder.encode(["the cat sat on the mat"])
    body.train()  # dropout on for the caller's training: the embeddings still run without it
    np.testing.assert_array_equal(encoder.encode(["the cat sat on the mat"]), expected)
    assert body.training


def test_max_length_beyond_the_positions_is_refused_by_both_ways_in(tmp_path):
    folder = make_tiny_checkpoint(tmp_path, VOCAB)  # 16 positions
    loaded = SentenceEncoder.from_pretrained(folder)
    with pytest.raises(ValueError, match=r"max_length must be in 2\.\.16") as made:
        SentenceEncoder(loaded.model, loaded.tokenizer, max_length=1000)
    with pytest.raises(ValueError, match=r"max_length must be in 2\.\.16") as from_folder:
        SentenceEncoder.from_pretrained(folder, max_length=1000)
    assert str(made.value) == str(from_folder.value)
    assert SentenceEncoder.from_pretrained(folder, max_length=8).max_length == 8


def test_a_saved_max_seq_length_beyond_the_positions_is_still_clamped(tmp_path):
    folder = make_tiny_checkpoint(tmp_path, VOCAB)
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 512}')  # a file's default, not an ask
    assert SentenceEncoder.from_pretrained(folder).max_length == 16


def test_progress_bars_are_minibert_s(monkeypatch):
    import minibert._progress

    made = []

    def recording_tqdm(iterable, **kwargs):
        made.append(kwargs.get("desc"))
        return iterable
    monkeypatch.setattr(minibert._progress, "tqdm", recording_tqdm)
    SentenceEncoder(BertModel(config()), TOK).encode(["the cat", "a dog"], progress=True)
    assert made == ["embedding"]


def test_similarity_of_a_text_with_itself_is_at_most_one():
    encoder = SentenceEncoder(BertModel(config(), seed=0), TOK)
    for text in ("hello", "the cat sat on the mat", "world world"):
        s = encoder.similarity(text, text)
        assert -1.0 <= s <= 1.0 and s == pytest.approx(1.0, abs=1e-6)
