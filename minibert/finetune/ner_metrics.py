"""Entity-level scores as CoNLL's conlleval computes them: an entity counts as found only when its span and its
type both match exactly. Per type and micro-averaged precision, recall and F1, plus token (word) accuracy.

Spans are read from IOB tags with conlleval's rules, so that a prediction that breaks IOB2 (an I-X after O,
or after another type) still counts as the start of an entity rather than being dropped.
"""

from __future__ import annotations


def entity_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """{(type, first word, last word + 1)} of one sentence's IOB tags."""
    spans, start, kind = set(), None, None
    for i, tag in enumerate(list(tags) + ["O"]):  # a final O closes an open entity
        prefix, name = (tag[:1], tag[2:]) if tag != "O" else ("O", None)
        if start is not None and (prefix in ("O", "B") or name != kind):
            spans.add((kind, start, i))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, name
    return spans


def _prf(tp: int, predicted: int, gold: int) -> dict:
    precision = tp / predicted if predicted else 0.0
    recall = tp / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": gold, "predicted": predicted}


def entity_metrics(gold_tags: list[list[str]], pred_tags: list[list[str]]) -> dict:
    """{"precision", "recall", "f1" (micro), "token_accuracy", "per_type": {type: {...}}, counts}."""
    if len(gold_tags) != len(pred_tags):
        raise ValueError(f"{len(gold_tags)} gold sentences but {len(pred_tags)} predicted")
    counts = {}  # type -> [true positives, predicted, gold]
    correct_words = total_words = 0
    for gold, pred in zip(gold_tags, pred_tags):
        if len(gold) != len(pred):
            raise ValueError(f"a sentence has {len(gold)} gold tags but {len(pred)} predicted")
        correct_words += sum(g == p for g, p in zip(gold, pred))
        total_words += len(gold)
        g_spans, p_spans = entity_spans(gold), entity_spans(pred)
        for kind, *_ in g_spans | p_spans:
            counts.setdefault(kind, [0, 0, 0])
        for span in p_spans:
            counts[span[0]][1] += 1
            counts[span[0]][0] += span in g_spans
        for span in g_spans:
            counts[span[0]][2] += 1
    tp, predicted, gold = (sum(c[k] for c in counts.values()) for k in range(3))
    result = _prf(tp, predicted, gold)
    result["token_accuracy"] = correct_words / total_words if total_words else 0.0
    result["num_sentences"], result["num_words"] = len(gold_tags), total_words
    result["per_type"] = {kind: _prf(*counts[kind]) for kind in sorted(counts)}
    return result


def format_entity_report(metrics: dict) -> str:
    """A conlleval-like table: one row per entity type, then the micro average and token accuracy."""
    names = list(metrics["per_type"])
    width = max([12] + [len(n) + 2 for n in names])
    lines = [f"{'':{width}}{'precision':>10}{'recall':>10}{'f1':>10}{'support':>10}"]
    for name in names:
        m = metrics["per_type"][name]
        lines.append(f"{name:>{width}}{m['precision']:>10.3f}{m['recall']:>10.3f}{m['f1']:>10.3f}{m['support']:>10}")
    lines.append(f"{'micro avg':>{width}}{metrics['precision']:>10.3f}{metrics['recall']:>10.3f}"
                 f"{metrics['f1']:>10.3f}{metrics['support']:>10}")
    lines.append(f"{'token acc.':>{width}}{'':>20}{metrics['token_accuracy']:>10.3f}{metrics['num_words']:>10}")
    return "\n".join(lines)
