"""Words to pieces for token classification: the label on a word's first piece, -100 elsewhere, cuts at
max_length, and tags read back from the first pieces."""

import numpy as np

from minibert.finetune.ner_data import TaggedSentences
from minibert.finetune.tagging import encode_tagged, encode_words, padded_labels, predict_word_tags
from minibert.models.token_classification import BertForTokenClassification
from minibert.config import BertConfig
from minibert.tokenizer import WordPieceTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "new", "york", "##er", "is", "big", "."]


def tokenizer():
    return WordPieceTokenizer(VOCAB)


def test_first_piece_gets_the_label():
    data = TaggedSentences([["New", "Yorker", "is", "big", "."]], [["B-LOC", "I-LOC", "O", "O", "O"]])
    tag2id = {"O": 0, "B-LOC": 1, "I-LOC": 2}
    enc = encode_tagged(tokenizer(), data, tag2id, max_length=16)
    ids, types = enc.encoded[0]
    assert tokenizer().convert_ids_to_tokens(ids.tolist()) == ["[CLS]", "new", "york", "##er", "is", "big", ".",
                                                                "[SEP]"]
    assert enc.labels[0].tolist() == [-100, 1, 2, -100, 0, 0, 0, -100]
    assert enc.first_piece[0].tolist() == [1, 2, 4, 5, 6] and not types.any() and enc.cut_words == 0
    assert padded_labels(enc.labels, [0], 10)[0, 8:].tolist() == [-100, -100]


def test_words_beyond_the_window_are_cut_in_order():
    # max_length 5: [CLS] new york ##er [SEP] fits "New Yorker" (3 pieces); "is" and "big" are cut.
    ids, first = encode_words(tokenizer(), ["New", "Yorker", "is", "big"], max_length=5)
    assert len(ids) == 5 and first == [1, 2, -1, -1]
    # A word with no piece at all (control characters only) gets no token but keeps its place.
    ids, first = encode_words(tokenizer(), ["big", "\x00", "."], max_length=16)
    assert first == [1, -1, 2]


def test_predicted_tags_come_from_first_pieces():
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    model = BertForTokenClassification(config, num_labels=3)
    model.set_labels(["O", "B-LOC", "I-LOC"])
    # A head that ignores the input: the bias alone decides, I-LOC everywhere.
    model.params["classifier.weight"][...] = 0
    model.params["classifier.bias"][...] = [0, 0, 5]
    data = TaggedSentences([["New", "Yorker", "is"], ["big"]], [["B-LOC", "I-LOC", "O"], ["O"]])
    enc = encode_tagged(tokenizer(), data, model.label2id, max_length=5)  # "is" is cut from the first
    tags, scores, loss = predict_word_tags(model, enc, 0)
    assert tags == [["I-LOC", "I-LOC", "O"], ["I-LOC"]]  # the cut word is predicted O
    p = np.exp(5) / (np.exp(5) + 2)
    assert np.allclose(scores[0][:2], p) and scores[0][2] == 0.0
    # Labelled pieces: "new" (B-LOC, probability (1-p)/2), "york" (I-LOC, p), "big" (O, (1-p)/2); "is" was cut.
    assert np.isclose(loss, (-2 * np.log((1 - p) / 2) - np.log(p)) / 3, atol=1e-5)
