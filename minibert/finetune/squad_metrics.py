"""Exact match and F1 as the official SQuAD evaluation scripts (v1.1 and v2.0) compute them.

Both compare normalised answers: lowercased, punctuation removed, the articles a/an/the removed, white space
collapsed. F1 is over the bag of words of prediction and answer. A question counts its best score over all its
accepted answers; an unanswerable question (SQuAD 2.0) scores 1 only for the empty prediction.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def f1(prediction: str, truth: str) -> float:
    pred, gold = normalize_answer(prediction).split(), normalize_answer(truth).split()
    if not pred or not gold:  # SQuAD 2.0: an empty answer matches only an empty one
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_scores(examples, predictions: list[str]) -> dict:
    """{"exact_match", "f1"} as fractions (the official scripts print them x 100), and for SQuAD 2.0 data the
    same over answerable ("has_answer_*") and unanswerable ("no_answer_*") questions."""
    if len(examples) != len(predictions):
        raise ValueError(f"{len(examples)} questions but {len(predictions)} predictions")
    em, f = [], []
    for example, prediction in zip(examples, predictions):
        truths = [t for t, _ in example.answers] if not example.is_impossible else [""]
        em.append(max(exact_match(prediction, t) for t in truths))
        f.append(max(f1(prediction, t) for t in truths))
    result = {"exact_match": sum(em) / len(em), "f1": sum(f) / len(f), "num_questions": len(em)}
    if any(e.is_impossible for e in examples):
        for name, keep in (("has_answer", False), ("no_answer", True)):
            idx = [i for i, e in enumerate(examples) if e.is_impossible == keep]
            if idx:
                result[f"{name}_exact_match"] = sum(em[i] for i in idx) / len(idx)
                result[f"{name}_f1"] = sum(f[i] for i in idx) / len(idx)
                result[f"{name}_count"] = len(idx)
    return result
