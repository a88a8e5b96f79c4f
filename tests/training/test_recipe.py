"""The pre-training recipe's parts: training mask rate vs the fixed 15% held-out masks, the MLM output bias
started at the log unigram frequencies, and the options that set them."""

import argparse

import numpy as np
import pytest

from minibert.config import BertConfig
from minibert.data.prepare import prepare_data
from minibert.models import BertForPreTraining
from minibert.layers.loss import IGNORE_INDEX
from minibert.training.evaluate import token_counts
from minibert.training.pretrain import EVAL_MASK_PROB, masking_rate, recipe_parts, unigram_log_probs
from minibert.training.settings import PretrainSettings
from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus


@pytest.fixture(scope="module")
def data_and_settings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("recipe")
    mp = pytest.MonkeyPatch()
    mp.setenv("MINIBERT_CACHE", str(tmp / "cache"))
    corpus = write_corpus(tmp / "animals.txt", synthetic_documents(200))
    settings = tiny_settings(corpus, tmp / "runs", eval_fraction=0.2, eval_examples=128)
    data = prepare_data(settings.corpus, settings.text_field, None, settings.vocab_size, settings.eval_fraction,
                        progress=False, log=lambda *a: None)
    yield data, settings
    mp.undo()


def _model(data):
    return BertForPreTraining(BertConfig.preset("tiny", vocab_size=len(data.tokenizer.vocab)), seed=0)


def test_training_masks_follow_mask_prob_but_held_out_masks_stay_at_15_percent(data_and_settings):
    data, settings = data_and_settings
    settings = PretrainSettings(**{**settings.to_dict(), "betas": settings.betas, "mask_prob": 0.4})
    masker, eval_batches, _, _ = recipe_parts(settings, _model(data), data, 32)
    assert masker.mlm_probability == 0.4
    # The held-out batches are exactly those of a 15% run: masks are independent of the training rate.
    settings15 = PretrainSettings(**{**settings.to_dict(), "betas": settings.betas, "mask_prob": 0.15})
    _, eval15, _, _ = recipe_parts(settings15, _model(data), data, 32)
    for a, b in zip(eval_batches, eval15):
        np.testing.assert_array_equal(a["labels"], b["labels"])
        np.testing.assert_array_equal(a["input_ids"], b["input_ids"])
    targets = sum(int((b["labels"] != IGNORE_INDEX).sum()) for b in eval_batches)
    ordinary = sum(int(b["attention_mask"].sum()) - 2 * len(b["attention_mask"]) for b in eval_batches)
    assert targets / ordinary == pytest.approx(EVAL_MASK_PROB, abs=0.03)
    ids = np.stack([np.arange(5, 37)] * 64)  # (64, 32) ordinary tokens only
    _, labels = masker(ids, np.random.default_rng(0))
    assert (labels != IGNORE_INDEX).mean() == pytest.approx(0.4, abs=0.02)


def test_unigram_output_bias_ranks_tokens_by_their_training_frequency(data_and_settings):
    data, settings = data_and_settings
    V = len(data.tokenizer.vocab)
    settings = PretrainSettings(**{**settings.to_dict(), "betas": settings.betas, "output_bias": "unigram"})
    model = _model(data)
    recipe_parts(settings, model, data, 32)
    bias = model.params["cls.predictions.bias"]  # (V,)
    counts = token_counts(data.train_documents, V)
    np.testing.assert_allclose(bias, unigram_log_probs(counts, data.tokenizer.all_special_ids), rtol=1e-6)
    seen = np.flatnonzero(counts > 0)
    top, rare = seen[np.argmax(counts[seen])], seen[np.argmin(counts[seen])]
    assert bias[top] > bias[rare]
    assert np.exp(bias.astype(np.float64)).sum() == pytest.approx(1.0, abs=1e-6)  # a distribution
    # Before any training the model already predicts the unigram distribution: its held-out loss is that of a
    # frequency guess, far below the uniform guess of a zero bias.
    _, eval_batches, _, _ = recipe_parts(settings, model, data, 32, fresh=False)
    zero_model = _model(data)

    def loss(m):
        b = eval_batches[0]
        return float(m.forward(b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"],
                               labels=b["labels"]).loss)

    assert loss(zero_model) == pytest.approx(np.log(V), abs=0.3)
    assert loss(model) < loss(zero_model) - 0.5  # (2.1 nats on the wiki corpus)


def test_zero_bias_and_resumed_models_keep_their_bias(data_and_settings):
    data, settings = data_and_settings
    zero = PretrainSettings(**{**settings.to_dict(), "betas": settings.betas, "output_bias": "zero"})
    model = _model(data)
    recipe_parts(zero, model, data, 32)
    assert not model.params["cls.predictions.bias"].any()
    unigram = PretrainSettings(**{**settings.to_dict(), "betas": settings.betas, "output_bias": "unigram"})
    model.params["cls.predictions.bias"][...] = 0.5  # as loaded from a checkpoint
    recipe_parts(unigram, model, data, 32, fresh=False)
    assert (model.params["cls.predictions.bias"] == 0.5).all()


def test_bad_recipe_options_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"output_bias \(--output-bias\) must be one of zero, unigram"):
        PretrainSettings(output_bias="uniform").validate()
    with pytest.raises(ValueError, match=r"betas \(--beta2\) must be in \[0, 1\)"):
        PretrainSettings(betas=(0.9, 1.0)).validate()


def test_beta2_option_sets_the_second_adam_beta():
    from minibert.commands.pretrain import _given, add_arguments
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    given = _given(parser.parse_args(["--beta2", "0.95", "--output-bias", "zero"]))
    settings = PretrainSettings(**given)
    assert settings.betas == (PretrainSettings().betas[0], 0.95) and settings.output_bias == "zero"
    assert "betas" not in _given(parser.parse_args([]))


def test_masking_rate_falls_linearly_from_mask_prob_to_mask_prob_end():
    constant = PretrainSettings()
    assert masking_rate(constant, 0, 100) == masking_rate(constant, 99, 100) == constant.mask_prob
    falling = PretrainSettings(mask_prob=0.4, mask_prob_end=0.15)
    rates = [masking_rate(falling, s, 101) for s in range(101)]
    assert rates[0] == pytest.approx(0.4) and rates[-1] == pytest.approx(0.15) and rates[50] == pytest.approx(0.275)
    assert all(a > b for a, b in zip(rates, rates[1:]))
    with pytest.raises(ValueError, match="--mask-prob-end"):
        PretrainSettings(mask_prob_end=1.5).validate()
