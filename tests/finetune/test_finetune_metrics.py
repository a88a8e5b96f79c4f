"""Our NumPy metrics agree with scikit-learn's (including classes that are never predicted or absent)."""

import numpy as np
import pytest

from minibert.finetune.metrics import classification_metrics, confusion_matrix, format_report

sklearn_metrics = pytest.importorskip("sklearn.metrics")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    C = 5
    y_true = rng.integers(0, C - 1, size=60)  # class 4 never occurs ...
    y_pred = np.where(rng.random(60) < 0.6, y_true, rng.integers(0, C, size=60))
    y_pred[y_pred == 3] = 2  # ... and class 3 is never predicted
    names = [f"c{i}" for i in range(C)]
    m = classification_metrics(y_true, y_pred, names)
    labels = list(range(C))
    assert m["accuracy"] == pytest.approx(sklearn_metrics.accuracy_score(y_true, y_pred))
    # scikit-learn's default labels: the classes in the truth or the predictions (the union)
    assert m["macro_f1"] == pytest.approx(sklearn_metrics.f1_score(y_true, y_pred, average="macro", zero_division=0))
    p, r, f, s = sklearn_metrics.precision_recall_fscore_support(y_true, y_pred, labels=labels, zero_division=0)
    for i, name in enumerate(names):
        got = m["per_class"][name]
        assert (got["precision"], got["recall"], got["f1"], got["support"]) == pytest.approx((p[i], r[i], f[i], s[i]))
    assert m["confusion_matrix"] == sklearn_metrics.confusion_matrix(y_true, y_pred, labels=labels).tolist()


def test_confusion_matrix_rows_are_truth_and_report_lists_every_class():
    cm = confusion_matrix([0, 0, 1, 2], [0, 1, 1, 1], 3)
    assert cm.tolist() == [[1, 1, 0], [0, 1, 0], [0, 1, 0]]
    report = format_report(classification_metrics([0, 0, 1, 2], [0, 1, 1, 1], ["neg", "neu", "pos"]))
    assert all(name in report for name in ("neg", "neu", "pos", "accuracy", "macro-F1"))
