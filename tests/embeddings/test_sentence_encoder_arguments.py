"""SentenceEncoder given its model and tokenizer the wrong way round (or something else in their place): one
line that says which argument got what and the right order, instead of an AttributeError from deep inside."""

import numpy as np
import pytest

from minibert import BertConfig, BertModel
from minibert.embeddings import SentenceEncoder, encode_sentences
from minibert.tokenizer import WordPieceTokenizer

TOK = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", ".", "the"])
MODEL = BertModel(BertConfig.preset("tiny", vocab_size=10, hidden_size=16, num_attention_heads=2,
                                    intermediate_size=32, num_hidden_layers=1, max_position_embeddings=16))


@pytest.mark.parametrize("make", [SentenceEncoder, lambda model, tok: encode_sentences(["hello"], model, tok)],
                         ids=["SentenceEncoder", "encode_sentences"])
def test_swapped_arguments_are_one_type_error_naming_both(make):
    with pytest.raises(TypeError, match=r"^SentenceEncoder\(model, tokenizer\): got a WordPieceTokenizer as model "
                                        r"and a BertModel as tokenizer; swap them: the model comes first$"):
        make(TOK, MODEL)


def test_the_wrong_kind_of_object_in_one_place_is_named():
    with pytest.raises(TypeError, match=r"tokenizer must be a minibert WordPieceTokenizer, got a BertModel"):
        SentenceEncoder(MODEL, MODEL)
    with pytest.raises(TypeError, match=r"tokenizer must be a minibert WordPieceTokenizer, got None"):
        SentenceEncoder(MODEL, None)
    with pytest.raises(TypeError, match=r"model must be a minibert model \(e.g. BertModel\), got a WordPieceTokenizer"):
        SentenceEncoder(TOK, TOK)
    assert SentenceEncoder(MODEL, TOK).encode(["hello world"]).shape == (1, 16)  # the right order still works
    assert np.isfinite(encode_sentences(["the"], MODEL, TOK)).all()
