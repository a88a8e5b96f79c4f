"""Held-out evaluation is a fixed task: same examples and masks every time, whatever the batch size."""

import numpy as np
import pytest

from minibert.config import BertConfig
from minibert.data.masking import Masker
from minibert.models import BertForPreTraining
from minibert.training.evaluate import build_eval_batches, evaluate, most_frequent_token_accuracy, token_counts

CLS, SEP, PAD, MASK = 2, 3, 0, 4


def documents(seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.integers(5, 60, size=rng.integers(3, 12)) for _ in range(rng.integers(1, 5))] for _ in range(40)]


def rows(batches, key):
    """Every sequence's unpadded values of `key`, in order."""
    out = []
    for b in batches:
        for row in range(len(b[key])):
            out.append(b[key][row, :int(b["attention_mask"][row].sum())].tolist())
    return out


@pytest.mark.parametrize("objective", ["mlm", "mlm+nsp"])
def test_masks_and_metrics_do_not_depend_on_the_batch_size(objective):
    masker = Masker(60, MASK, [PAD, 1, CLS, SEP, MASK])
    small = build_eval_batches(documents(), objective, 24, 4, masker, CLS, SEP, PAD, max_examples=30)
    large = build_eval_batches(documents(), objective, 24, 7, masker, CLS, SEP, PAD, max_examples=30)
    assert rows(small, "input_ids") == rows(large, "input_ids") and rows(small, "labels") == rows(large, "labels")
    assert sum(len(b["input_ids"]) for b in small) == 30
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=24), seed=0)
    a = evaluate(model, small, use_nsp=objective == "mlm+nsp")
    b = evaluate(model, large, use_nsp=objective == "mlm+nsp")
    assert a["masked_tokens"] == b["masked_tokens"] > 0
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-5), key
    assert model.training  # evaluation puts the model back in training mode


def test_most_frequent_token_baseline():
    docs = [[np.array([7, 7, 7, 9])], [np.array([7, 8])]]
    batches = [{"labels": np.array([[-100, 7, 9, -100], [7, 8, -100, -100]])}]
    assert most_frequent_token_accuracy(token_counts(docs, 10), batches) == (7, 0.5)


def test_evaluation_keeps_no_layer_activations_and_leaves_the_model_as_it_was():
    """An evaluation runs no backward, so its forwards keep only the layers' inputs (recompute on), not their
    activations; the model's mode and recompute setting are what they were before."""
    masker = Masker(60, MASK, [PAD, 1, CLS, SEP, MASK])
    batches = build_eval_batches(documents(), "mlm", 24, 8, masker, CLS, SEP, PAD, max_examples=16)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=24), seed=0)
    assert model.training and not model.recompute
    metrics = evaluate(model, batches, use_nsp=False)
    assert model.training and not model.recompute
    layers = model.bert._cache[2]  # per layer: its input and dropout state only, not the layer's cache
    assert all(len(entry) == 6 and entry[0].ndim == 3 for entry in layers)  # (input, generator, state, ...)
    by_hand = model.eval().forward(batches[0]["input_ids"], token_type_ids=batches[0]["token_type_ids"],
                                   attention_mask=batches[0]["attention_mask"], labels=batches[0]["labels"])
    assert len(model.bert._cache[2][0]) > 5  # the same forward without recompute keeps the layer's cache
    first = evaluate(model, batches[:1], use_nsp=False)
    assert first["mlm_loss"] == float(by_hand.mlm_loss) and metrics["masked_tokens"] > first["masked_tokens"]


def test_evaluation_restores_the_model_when_a_forward_fails():
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=24), seed=0)
    bad = [{"input_ids": np.full((2, 30), 5), "token_type_ids": None, "attention_mask": np.ones((2, 30), int),
            "labels": np.full((2, 30), -100), "next_sentence_label": None}]  # 30 tokens > 24 positions
    with pytest.raises(ValueError):
        evaluate(model, bad, use_nsp=False)
    assert model.training and not model.recompute


@pytest.mark.parametrize("size", [2, 3])
def test_ranks_share_the_evaluation_and_their_sums_make_the_whole(size):
    """With several ranks, rank r evaluates batches r, r + N, ... and the sums are added over the ranks: every
    rank gets the metrics of the whole held-out set."""
    masker = Masker(60, MASK, [PAD, 1, CLS, SEP, MASK])
    batches = build_eval_batches(documents(), "mlm+nsp", 24, 4, masker, CLS, SEP, PAD, max_examples=30)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=60, max_position_embeddings=24), seed=0)
    whole = evaluate(model, batches, use_nsp=True)

    class Rank:  # stands in for a communicator: allreduce_sum_ returns what `total` says
        def __init__(self, rank, total=None):
            self.rank, self.size, self.total, self.sent = rank, size, total, None

        def allreduce_sum_(self, v):
            self.sent = v.copy()
            return v if self.total is None else self.total.copy()

    parts = [Rank(r) for r in range(size)]
    for comm in parts:
        evaluate(model, batches, use_nsp=True, comm=comm)
    total = sum(comm.sent for comm in parts)
    n_masked = [comm.sent[1] for comm in parts]  # SUMS[1]: each rank's masked tokens
    assert all(n > 0 for n in n_masked) and sum(n_masked) == whole["masked_tokens"]  # disjoint shares, all of it
    for r in range(size):
        shared = evaluate(model, batches, use_nsp=True, comm=Rank(r, total))
        assert shared["masked_tokens"] == whole["masked_tokens"]
        for key in whole:
            assert shared[key] == pytest.approx(whole[key], rel=1e-12), key
