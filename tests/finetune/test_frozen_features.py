"""benchmarks/frozen_features.py: the probe fits on train, picks C by eval accuracy and scores test once, so a
representation that holds the label scores high and one that does not scores at chance."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("sklearn")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import frozen_features  # noqa: E402


def split(n, seed, informative):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    x = rng.standard_normal((n, 8))
    if informative:
        x[:, 0] += 3.0 * (2 * y - 1)  # the label, readable from one feature
    return x, SimpleNamespace(labels=["neg" if v == 0 else "pos" for v in y])


@pytest.mark.parametrize("informative", [True, False])
def test_the_probe_reads_a_label_only_where_the_features_hold_it(informative):
    parts = {name: split(n, seed, informative) for name, n, seed in (("train", 200, 0), ("eval", 100, 1),
                                                                      ("test", 400, 2))}
    task = SimpleNamespace(**{name: labels for name, (_, labels) in parts.items()})
    result = frozen_features.probe({name: x for name, (x, _) in parts.items()}, task, ["neg", "pos"])
    assert result["C"] in frozen_features.C_GRID
    assert result["num_examples"] == 400  # scored on test, not on eval
    if informative:
        assert result["accuracy"] > 0.95 and result["eval_accuracy"] > 0.95
    else:
        assert 0.4 < result["accuracy"] < 0.6


def test_max_examples_keeps_the_first_texts_of_each_split():
    from minibert.finetune.data import Examples
    from minibert.finetune.tasks import Task

    def examples(prefix, n):
        return Examples([f"{prefix} {i}" for i in range(n)], ["pos" if i % 2 else "neg" for i in range(n)])

    task = Task("t", "a toy task", examples("train", 10), examples("eval", 3), examples("test", 6))
    cut = frozen_features.first_of_each_split(task, 4)
    assert cut.train.texts == ["train 0", "train 1", "train 2", "train 3"] and cut.train.labels[:2] == ["neg", "pos"]
    assert cut.eval.texts == ["eval 0", "eval 1", "eval 2"]  # (fewer than 4: whole)
    assert len(cut.test) == 4 and cut.name == "t"
