"""macro-F1 averages over the classes that occur in the truth or in the predictions (scikit-learn's default
labels, the union of both): a class the model knows but that neither occurs nor is predicted is not counted as
F1 = 0. The same function serves `minibert predict --label-column`, fine-tuning's evaluation and the TF-IDF
baseline, so all three agree."""

import re

import numpy as np
import pytest

from minibert.cli import main
from minibert.config import BertConfig
from minibert.finetune.metrics import classification_metrics, format_report
from minibert.models.classification import BertForSequenceClassification
from minibert.tokenizer import WordPieceTokenizer
from finetune_helpers import FILLERS, KEYWORDS, SPECIALS, make_examples, write_rows

NAMES = ["negative", "neutral", "positive"]


def _f1_by_hand(y_true, y_pred, c):
    tp = sum(t == c and p == c for t, p in zip(y_true, y_pred))
    fp = sum(t != c and p == c for t, p in zip(y_true, y_pred))
    fn = sum(t == c and p != c for t, p in zip(y_true, y_pred))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None  # None: the class was never seen


def test_one_class_all_right_is_a_perfect_macro_f1():
    y = [2] * 20  # 20 positive reviews, all predicted positive; negative and neutral never occur
    m = classification_metrics(y, y, NAMES)
    assert m["accuracy"] == 1.0 and m["macro_f1"] == 1.0
    assert set(m["per_class"]) == set(NAMES)  # the report still lists every class the model knows
    assert m["per_class"]["negative"]["support"] == 0


def test_a_class_only_predicted_or_only_true_still_counts():
    # neutral is predicted once but never true; negative is true once but never predicted
    y_true = [2, 2, 2, 0]
    y_pred = [2, 2, 1, 2]
    m = classification_metrics(y_true, y_pred, NAMES)
    expected = [f for f in (_f1_by_hand(y_true, y_pred, c) for c in range(3)) if f is not None]
    assert len(expected) == 3  # all three classes were seen somewhere
    assert m["macro_f1"] == pytest.approx(sum(expected) / len(expected))
    # with only the positive class seen, the two others drop out of the mean
    m = classification_metrics([2, 2, 2], [2, 2, 2], NAMES + ["unused"])
    assert m["macro_f1"] == 1.0


def test_macro_f1_is_the_mean_over_classes_seen_on_random_data():
    rng = np.random.default_rng(7)
    for _ in range(20):
        C = 6
        y_true = rng.integers(0, 3, size=40)  # classes 3..5 never true ...
        y_pred = np.where(rng.random(40) < 0.5, y_true, rng.integers(0, 5, size=40))  # ... 5 never predicted
        f1s = [f for f in (_f1_by_hand(list(y_true), list(y_pred), c) for c in range(C)) if f is not None]
        m = classification_metrics(y_true, y_pred, [f"c{i}" for i in range(C)])
        assert m["macro_f1"] == pytest.approx(sum(f1s) / len(f1s))


def test_empty_input_gives_zero_not_nan():
    m = classification_metrics([], [], NAMES)
    assert m["macro_f1"] == 0.0 and m["accuracy"] == 0.0


def test_report_says_which_classes_the_mean_leaves_out():
    report = format_report(classification_metrics([2, 2], [2, 2], NAMES))
    assert "negative" in report and "neutral" in report  # (rows with support 0)
    note = [line for line in report.splitlines() if line.startswith("(macro-F1")]
    assert len(note) == 1 and "negative" in note[0] and "neutral" in note[0] and "positive" not in note[0]
    full = format_report(classification_metrics([0, 1, 2], [0, 1, 1], NAMES))
    assert "(macro-F1" not in full  # every class seen: nothing to say


def test_matches_scikit_learn_default_when_installed():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    for _ in range(30):
        C = int(rng.integers(2, 7))
        y_true = rng.integers(0, C, size=int(rng.integers(1, 30)))
        y_pred = np.where(rng.random(len(y_true)) < 0.5, y_true, rng.integers(0, C, size=len(y_true)))
        m = classification_metrics(y_true, y_pred, [f"c{i}" for i in range(C + 2)])  # two classes never seen
        assert m["macro_f1"] == pytest.approx(sklearn_metrics.f1_score(y_true, y_pred, average="macro",
                                                                       zero_division=0))
    y = [2] * 20
    assert classification_metrics(y, y, NAMES)["macro_f1"] == sklearn_metrics.f1_score(y, y, average="macro")


def _always_positive_classifier(path):
    """A tiny classifier whose output bias makes it answer 'positive' for every text."""
    tokenizer = WordPieceTokenizer(SPECIALS + FILLERS + list(KEYWORDS) + ["!", "unseen"])
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32)
    model = BertForSequenceClassification(config, num_labels=3, seed=0)
    model.set_labels(NAMES)
    model.params["classifier.bias"][...] = [-50.0, -50.0, 50.0]
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_predict_on_a_file_of_one_class_all_right_reports_macro_f1_one(tmp_path, capsys):
    model = _always_positive_classifier(tmp_path / "clf")
    rows = [{"review": r["text"], "rating": "positive"} for r in make_examples(20, classes=("positive",))]
    data = write_rows(tmp_path / "pos.csv", rows)
    assert main(["predict", "--model", str(model), "--input", data, "--text-column", "review",
                 "--label-column", "rating", "--no-progress"]) == 0
    err = capsys.readouterr().err
    accuracy = float(re.search(r"^\s*accuracy\s+([\d.]+)", err, re.M).group(1))
    macro = float(re.search(r"^\s*macro-F1\s+([\d.]+)", err, re.M).group(1))
    assert accuracy == 1.0 and macro == accuracy
