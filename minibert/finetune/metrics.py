"""Classification metrics in NumPy: confusion matrix, accuracy, per-class precision/recall/F1, macro-F1.

Conventions are scikit-learn's: rows of the confusion matrix are the true classes, columns the predicted ones;
a precision or recall whose denominator is zero (a class never predicted, or absent from the data) counts as 0;
macro-F1 is the plain mean of the per-class F1 over the classes that occur in the truth or in the predictions
(`sklearn.metrics.f1_score(y_true, y_pred, average="macro")`, whose labels are the union of both). A class the
model knows but that neither occurs nor is predicted (say a test file of positive reviews only) is listed in
the per-class table with support 0, and left out of the macro-F1: nothing about it was measured, and counting
it as F1 = 0 would mark a perfect prediction down (20 positive reviews, all right: macro-F1 1, not 1/3).
"""

from __future__ import annotations

import numpy as np


def confusion_matrix(y_true, y_pred, num_classes: int) -> np.ndarray:
    """(C, C) counts: entry [t, p] is how many examples of class t were predicted as p."""
    y_true, y_pred = np.asarray(y_true, dtype=np.int64), np.asarray(y_pred, dtype=np.int64)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has shape {y_true.shape} but y_pred has {y_pred.shape}")
    flat = np.bincount(y_true * num_classes + y_pred, minlength=num_classes * num_classes)
    return flat.reshape(num_classes, num_classes)


def _safe_divide(a, b):
    return np.divide(a, b, out=np.zeros(a.shape, dtype=np.float64), where=b > 0)


def classification_metrics(y_true, y_pred, label_names: list[str]) -> dict:
    """Accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix, JSON-ready."""
    C = len(label_names)
    cm = confusion_matrix(y_true, y_pred, C)  # (C, C)
    tp = np.diag(cm).astype(np.float64)  # (C,)
    predicted = cm.sum(axis=0)  # (C,) how often each class was predicted
    support = cm.sum(axis=1)  # (C,) how often each class is the truth
    precision = _safe_divide(tp, predicted)
    recall = _safe_divide(tp, support)
    f1 = _safe_divide(2 * precision * recall, precision + recall)
    total = int(cm.sum())
    return {
        "accuracy": float(tp.sum() / total) if total else 0.0,
        "macro_f1": macro_f1(f1, present_classes(cm)),
        "num_examples": total,
        "per_class": {name: {"precision": float(precision[i]), "recall": float(recall[i]), "f1": float(f1[i]),
                             "support": int(support[i])} for i, name in enumerate(label_names)},
        "labels": list(label_names),
        "confusion_matrix": cm.tolist(),
    }


def present_classes(cm) -> np.ndarray:
    """(C,) bool: the classes of a (C, C) confusion matrix that occur in the truth (its rows) or the predictions
    (its columns): those macro-F1 averages over, as scikit-learn does."""
    cm = np.asarray(cm)
    return (cm.sum(axis=1) > 0) | (cm.sum(axis=0) > 0)


def macro_f1(f1, present) -> float:
    """Mean per-class F1 over the `present` classes (present_classes); 0 when there are none (no examples)."""
    present = np.asarray(present, dtype=bool)
    return float(np.asarray(f1)[present].mean()) if present.any() else 0.0


def format_report(metrics: dict) -> str:
    """A per-class table like scikit-learn's classification_report, for the terminal."""
    names = metrics["labels"]
    width = max(12, max(len(n) for n in names) + 2)
    lines = [f"{'':{width}}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}"]
    for name in names:
        m = metrics["per_class"][name]
        lines.append(f"{name:>{width}}{m['precision']:>10.3f}{m['recall']:>10.3f}{m['f1']:>10.3f}{m['support']:>10}")
    lines.append(f"{'accuracy':>{width}}{'':>20}{metrics['accuracy']:>10.3f}{metrics['num_examples']:>10}")
    lines.append(f"{'macro-F1':>{width}}{'':>20}{metrics['macro_f1']:>10.3f}{metrics['num_examples']:>10}")
    present = present_classes(np.asarray(metrics["confusion_matrix"]).reshape(len(names), len(names)))
    absent = [n for n, here in zip(names, present) if not here]
    if absent and len(absent) < len(names):
        lines.append(f"(macro-F1 over the {len(names) - len(absent)} classes in the labels or the predictions, as "
                     f"scikit-learn's; not {', '.join(absent)})")
    return "\n".join(lines)
