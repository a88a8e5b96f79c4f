"""Batches grouped by length: the same examples, less padding, exact resume."""

import numpy as np
import pytest

from minibert.data.examples import ExampleStream, collate, make_examples
from minibert.data.grouping import length_grouped_order
from minibert.training.settings import PretrainSettings
from test_examples_nsp import CLS, PAD, SEP, make_documents


def test_order_is_a_permutation_of_whole_batches_of_similar_length():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 65, size=1000)
    order = length_grouped_order(lengths, 16, np.random.default_rng(1))
    assert len(order) == 992 and sorted(order) == list(range(992))  # the 8 past the last whole batch wait
    spread = np.ptp(lengths[order].reshape(-1, 16), axis=1).mean()
    random_spread = np.ptp(lengths[:992].reshape(-1, 16), axis=1).mean()
    assert spread < random_spread / 5, (spread, random_spread)
    # batch order is shuffled over the epoch: lengths do not rise window by window
    maxima = lengths[order].reshape(-1, 16).max(axis=1)
    assert not np.all(np.diff(maxima[:16]) >= 0)
    np.testing.assert_array_equal(order, length_grouped_order(lengths, 16, np.random.default_rng(1)))
    assert len(length_grouped_order(lengths[:3], 16, rng)) == 0


@pytest.mark.parametrize("objective", ["mlm", "mlm+nsp"])
def test_grouped_stream_serves_the_epochs_examples_with_less_padding(objective):
    docs, _ = make_documents(120)
    plain = ExampleStream(docs, objective, 24, seed=3, cls_id=CLS, sep_id=SEP)
    grouped = ExampleStream(docs, objective, 24, seed=3, cls_id=CLS, sep_id=SEP, group_batch_size=8)
    made = make_examples(docs, objective, 24, np.random.default_rng([3, 1, 0]), CLS, SEP)
    assert len(plain) == len(made) and len(grouped) == len(made) // 8 * 8
    served = [grouped.take(8) for _ in range(len(grouped) // 8)]
    as_tuples = sorted(tuple(e.tokens.tolist()) for batch in served for e in batch)
    ungrouped = [tuple(e.tokens.tolist()) for e in plain.take(len(plain))]
    assert len(set(as_tuples) - set(ungrouped)) == 0 and len(as_tuples) == len(grouped)  # the same examples
    padded = sum(collate(b, PAD)["input_ids"].size for b in served)
    plain_batches = [ungrouped[i:i + 8] for i in range(0, len(grouped), 8)]
    plain_padded = sum(8 * max(len(e) for e in b) for b in plain_batches)
    assert padded < 0.9 * plain_padded, (padded, plain_padded)
    with pytest.raises(ValueError, match="batches of 8"):
        grouped.take(4)


def test_grouped_stream_resumes_exactly_across_epochs():
    docs, _ = make_documents(60)
    a = ExampleStream(docs, "mlm", 24, seed=5, cls_id=CLS, sep_id=SEP, group_batch_size=4)
    for _ in range(len(a) // 4 + 3):  # into epoch 1
        a.take(4)
    state = a.state_dict()
    assert state["epoch"] == 1
    rest = [e.tokens.tolist() for _ in range(5) for e in a.take(4)]
    b = ExampleStream(docs, "mlm", 24, seed=5, cls_id=CLS, sep_id=SEP, group_batch_size=4)
    b.load_state_dict(state)
    assert [e.tokens.tolist() for _ in range(5) for e in b.take(4)] == rest
    assert [e.tokens.tolist() for e in b.peek(4)] == [e.tokens.tolist() for e in a.take(4)]


def test_runs_saved_before_grouping_existed_resume_ungrouped():
    old = {k: v for k, v in PretrainSettings().to_dict().items() if k != "group_by_length"}
    assert PretrainSettings.from_dict(old).group_by_length is False
    assert PretrainSettings().group_by_length is True
