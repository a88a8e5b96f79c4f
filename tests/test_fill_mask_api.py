"""fill_mask from Python: only guesses the tokenizer can write, and one clear line for a model without the head or for
a model and tokenizer given the wrong way round."""

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertModel, WordPieceTokenizer
from minibert.fill_mask import FillMask, fill_mask

TOK = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", ".", "the"])


def config(vocab_size):
    return BertConfig.preset("tiny", vocab_size=vocab_size, hidden_size=16, num_attention_heads=2,
                             intermediate_size=32, num_hidden_layers=1, max_position_embeddings=16)


def test_only_ordinary_tokens_of_the_tokenizer_are_guessed():
    # 5 ordinary tokens; the model's vocabulary (50) is larger than the tokenizer's (10), as when a checkpoint's
    # embeddings were padded: ids 10..49 have no text.
    guesses = fill_mask(BertForMaskedLM(config(50), seed=0), TOK, "hello [MASK].", top_k=8)[0]
    assert sorted(g["token_str"] for g in guesses) == sorted(["hello", "world", "##s", ".", "the"])
    assert all(g["score"] >= 0 for g in guesses)
    assert np.sum([g["score"] for g in guesses]) <= 1.0


def test_bad_calls_are_one_clear_error():
    with pytest.raises(ValueError, match="BertModel has no masked-LM head"):
        fill_mask(BertModel(config(10)), TOK, "hello [MASK].")
    with pytest.raises(ValueError, match="top_k must be an integer of at least 1, got 2.5"):
        fill_mask(BertForMaskedLM(config(10)), TOK, "hello [MASK].", top_k=2.5)



def test_fill_encoded_gives_what_a_call_gives():
    """encode checks a text without running the model; fill_encoded then fills it without encoding it again."""
    filler = FillMask(BertForMaskedLM(config(10), seed=0), TOK)
    encoded = filler.encode("hello [MASK] the [MASK].")
    assert filler.fill_encoded(encoded, top_k=3) == filler("hello [MASK] the [MASK].", top_k=3)
    with pytest.raises(ValueError, match="top_k must be an integer of at least 1, got 0"):
        filler.fill_encoded(encoded, top_k=0)
    with pytest.raises(ValueError, match=r"no \[MASK\] in the text"):
        filler.encode("hello world")

def test_an_electra_run_fills_in_with_its_generator():
    from minibert.models.electra import generator_config
    from minibert.models.electra_pretraining import ElectraPretrainer
    disc = config(10)
    model = ElectraPretrainer(disc, generator_config(disc, 0.5), seed=0)
    assert fill_mask(model, TOK, "hello [MASK].", top_k=2) == fill_mask(model.generator, TOK, "hello [MASK].", top_k=2)


@pytest.mark.parametrize("call", [lambda model, tok: FillMask(model, tok),
                                  lambda model, tok: fill_mask(model, tok, "hello [MASK].")],
                         ids=["FillMask", "fill_mask"])
def test_a_model_and_tokenizer_given_the_wrong_way_round_say_so(call):
    model = BertForMaskedLM(config(10))
    with pytest.raises(TypeError, match=r"\(model, tokenizer.*\): got a WordPieceTokenizer as model and a "
                                        r"BertForMaskedLM as tokenizer; swap them: the model comes first") as info:
        call(TOK, model)
    assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match="tokenizer must be a minibert WordPieceTokenizer, got a BertForMaskedLM"):
        call(model, model)
    with pytest.raises(TypeError, match="model must be a minibert model .*got None"):
        call(None, TOK)
    assert call(model, TOK)  # the right order still fills in the [MASK]


def test_the_callers_training_mode_is_back_after_an_error_too():
    model = BertForMaskedLM(config(10), seed=0)
    model.train()
    assert fill_mask(model, TOK, "hello [MASK].") and model.training

    def broken(*args, **kwargs):
        raise RuntimeError("the forward broke")
    model.forward = broken
    with pytest.raises(RuntimeError, match="the forward broke"):
        fill_mask(model, TOK, "hello [MASK].")
    assert model.training
