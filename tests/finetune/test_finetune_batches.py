"""Training batches: every example once per epoch, less padding when grouped by length, and still reshuffled."""

import math

import numpy as np
import pytest

from minibert.finetune.train import collate, training_batches


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
