"""Training batches: every example once per epoch, less padding when grouped by length, and still reshuffled."""

import math

import numpy as np
import pytest

from minibert.finetune.train import collate, predict_logits, training_batches


@pytest.mark.parametrize("group", [True, False])
def test_each_example_once_per_epoch(group):
    lengths = np.random.default_rng(0).integers(5, 200, size=541)
    batches = training_batches(lengths, 16, np.random.default_rng(1), group)
    assert len(batches) == math.ceil(541 / 16)  # the schedule counts on this
    assert sorted(np.concatenate(batches).tolist()) == list(range(541))
    assert all(1 <= len(b) <= 16 for b in batches)


def test_grouping_saves_padding_but_batches_still_change():
    lengths = np.random.default_rng(0).integers(5, 200, size=2000)
    padded = lambda batches: sum(len(b) * lengths[b].max() for b in batches)  # noqa: E731
    rng = np.random.default_rng(1)
    grouped, plain = training_batches(lengths, 16, rng, True), training_batches(lengths, 16, rng, False)
    assert padded(grouped) < 0.8 * padded(plain)
    again = training_batches(lengths, 16, rng, True)
    assert {frozenset(b.tolist()) for b in grouped} != {frozenset(b.tolist()) for b in again}


def test_collate_pads_to_the_longest_of_the_batch():
    encoded = [(np.array([2, 7, 3]), np.array([0, 0, 0])), (np.array([2, 5, 3, 9, 3]), np.array([0, 0, 0, 1, 1]))]
    ids, types, mask = collate(encoded, [0, 1], pad_id=0)
    assert ids.tolist() == [[2, 7, 3, 0, 0], [2, 5, 3, 9, 3]]
    assert types.tolist() == [[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]]
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]


@pytest.mark.parametrize("workers", [2, 3])
def test_batches_on_several_threads_give_the_same_logits(workers):
    from minibert import BertConfig
    from minibert.models.classification import BertForSequenceClassification
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=24, max_position_embeddings=32)
    model = BertForSequenceClassification(config, num_labels=3, seed=0)
    rng = np.random.default_rng(0)
    encoded = [(rng.integers(5, 50, size=n), np.zeros(n, dtype=np.int64)) for n in rng.integers(3, 30, size=40)]
    one_at_a_time = predict_logits(model, encoded, pad_id=0, batch_size=4, workers=1)
    np.testing.assert_array_equal(predict_logits(model, encoded, pad_id=0, batch_size=4, workers=workers),
                                  one_at_a_time)
    assert model.training  # put back in the mode it was found in
