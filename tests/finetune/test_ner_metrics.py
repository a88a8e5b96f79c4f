"""Entity-level scores with CoNLL's definition (exact span and type), checked by hand and against seqeval."""

import pytest

from minibert.finetune.ner_metrics import entity_metrics, entity_spans, format_entity_report


@pytest.mark.parametrize("tags, spans", [
    (["B-PER", "I-PER", "O", "B-LOC"], {("PER", 0, 2), ("LOC", 3, 4)}),
    (["B-PER", "B-PER", "I-PER"], {("PER", 0, 1), ("PER", 1, 3)}),
    (["O", "I-LOC", "I-LOC"], {("LOC", 1, 3)}),  # an I- after O opens an entity (conlleval)
    (["B-PER", "I-LOC", "I-LOC"], {("PER", 0, 1), ("LOC", 1, 3)}),  # a type change too
    (["B-ORG", "I-ORG"], {("ORG", 0, 2)}),  # open at the end of the sentence
    (["O", "O"], set()),
])
def test_entity_spans(tags, spans):
    assert entity_spans(tags) == spans


def test_hand_counted_scores():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O", "B-PER"]]
    pred = [["B-PER", "O", "O", "B-LOC"], ["B-ORG", "O", "B-LOC"]]
    m = entity_metrics(gold, pred)
    # gold: PER(0,2) LOC(3,4) ORG(0,1) PER(2,3); predicted: PER(0,1) LOC(3,4) ORG(0,1) LOC(2,3); 2 right
    assert (m["precision"], m["recall"], m["f1"]) == (0.5, 0.5, 0.5)
    assert m["per_type"]["PER"]["precision"] == 0.0 and m["per_type"]["PER"]["support"] == 2
    assert m["per_type"]["LOC"] == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "support": 1,
                                    "predicted": 2}
    assert m["token_accuracy"] == 5 / 7
    assert "micro avg" in format_entity_report(m) and "LOC" in format_entity_report(m)


def test_nothing_predicted_scores_zero_not_nan():
    m = entity_metrics([["B-PER"]], [["O"]])
    assert (m["precision"], m["recall"], m["f1"]) == (0.0, 0.0, 0.0)


def test_matches_seqeval():
    seqeval = pytest.importorskip("seqeval.metrics")
    import numpy as np
    rng = np.random.default_rng(0)
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"]
    gold = [list(rng.choice(tags, size=rng.integers(1, 12))) for _ in range(300)]
    pred = [[t if rng.random() < 0.7 else str(rng.choice(tags)) for t in s] for s in gold]
    m = entity_metrics(gold, pred)
    assert m["f1"] == pytest.approx(seqeval.f1_score(gold, pred))
    assert m["precision"] == pytest.approx(seqeval.precision_score(gold, pred))
