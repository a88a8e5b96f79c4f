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
