"""Exact match and F1 with SQuAD's normalisation, on cases counted by hand."""

import pytest

from minibert.finetune.squad_data import QAExample
from minibert.finetune.squad_metrics import exact_match, f1, normalize_answer, squad_scores


@pytest.mark.parametrize("text, normal", [
    ("The Eiffel Tower!", "eiffel tower"), ("  an   apple, a pear ", "apple pear"), ("Theory", "theory"),
    ("5,895 metres", "5895 metres"),
])
def test_normalisation(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match_and_f1():
    assert exact_match("the Black Sea", "Black Sea.") == 1.0
    assert f1("the Black Sea coast", "Black Sea") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert f1("Danube", "Rhine") == 0.0 and f1("", "") == 1.0 and f1("x", "") == 0.0


def test_scores_take_the_best_answer_and_split_v2():
    examples = [QAExample("a", "q", "c", [("Danube", 4), ("The Danube river", 0)]),
                QAExample("b", "q", "c", [("ten", 0)]),
                QAExample("c", "q", "c", [], is_impossible=True),
                QAExample("d", "q", "c", [], is_impossible=True)]
    scores = squad_scores(examples, ["the Danube river basin", "ten", "", "Oslo"])
    # a: EM 0, F1 0.8 (its best answer: "danube river" in "danube river basin": P 2/3, R 1; against "Danube"
    # only 0.5); b: 1/1; c: 1/1 (the empty prediction is right); d: 0/0
    assert scores["exact_match"] == 0.5 and scores["f1"] == pytest.approx(0.7)
    assert scores["has_answer_f1"] == pytest.approx(0.9)
    assert scores["no_answer_exact_match"] == 0.5 and scores["no_answer_count"] == 2
