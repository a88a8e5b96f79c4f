"""Question + context windows: the same windows as BertTokenizerFast's overflowing tokens with a stride, answers
mapped from characters to tokens and back, and the best valid span across windows."""

import numpy as np
import pytest

from minibert.finetune.qa_features import answer_positions, build_windows, windows_of
from minibert.finetune.qa_predict import answer_questions, best_spans
from minibert.finetune.squad_data import QAExample

CONTEXT = ("The Danube is Europe's second-longest river. It flows through ten countries, from the Black Forest in "
           "Germany to the Black Sea. Vienna, Bratislava, Budapest and Belgrade lie on its banks; its delta in "
           "Romania and Ukraine is a nature reserve. Café owners in Vienna call it « die Donau ».")


@pytest.fixture(scope="module")
def tokenizers():
    from minibert.data.builtin import minilm_dir
    from minibert.tokenizer import WordPieceTokenizer
    try:
        folder = minilm_dir()
    except (FileNotFoundError, ValueError, ImportError):
        pytest.skip("MiniLM checkpoint not installed")
    transformers = pytest.importorskip("transformers")
    return WordPieceTokenizer.from_pretrained(folder), transformers.BertTokenizerFast.from_pretrained(str(folder))


@pytest.mark.parametrize("max_length, stride", [(32, 8), (40, 16), (64, 0), (384, 128)])
def test_windows_equal_transformers_overflow(tokenizers, max_length, stride):
    mine, hf = tokenizers
    question = "Where does the Danube end?"
    ref = hf(question, CONTEXT, truncation="only_second", max_length=max_length, stride=stride,
             return_overflowing_tokens=True, return_offsets_mapping=True)
    windows = windows_of(mine, question, CONTEXT, max_length, stride)
    assert len(windows) == len(ref["input_ids"])
    for w, ids, types, offsets, seq in zip(windows, ref["input_ids"], ref["token_type_ids"],
                                           ref["offset_mapping"], range(len(windows))):
        assert w.input_ids.tolist() == ids and w.token_type_ids.tolist() == types
        context_offsets = [tuple(o) if s == 1 else None for o, s in zip(offsets, ref.sequence_ids(seq))]
        assert w.context_offsets == context_offsets


def test_answer_maps_to_tokens_and_back(tokenizers):
    mine, _ = tokenizers
    answer = ("the Black Sea", CONTEXT.index("the Black Sea"))
    windows = windows_of(mine, "Where does the Danube end?", CONTEXT, 32, 8, answer=answer)
    found = [w for w in windows if w.start_position > 0]
    assert found and len(found) < len(windows)  # in some windows, not in all: the others point at [CLS]
    for w in found:
        a, b = w.context_offsets[w.start_position][0], w.context_offsets[w.end_position][1]
        assert CONTEXT[a:b] == "the Black Sea"
    for w in windows:
        if w.start_position == 0:
            assert w.end_position == 0


def test_answer_cut_by_the_window_edge_is_no_answer():
    offsets = [None, (0, 3), (4, 9), None]  # a window holding context characters 0..9
    assert answer_positions(offsets, ("abc", 0)) == (1, 1)
    assert answer_positions(offsets, ("defgh", 4)) == (2, 2)
    assert answer_positions(offsets, ("fgh xyz", 6)) == (0, 0)  # ends beyond the window


def test_question_longer_than_the_window_is_one_line(tokenizers):
    mine, _ = tokenizers
    examples = [QAExample("q7", "why " * 30, CONTEXT, [("ten", CONTEXT.index("ten"))])]
    with pytest.raises(ValueError, match=r"dev.json: question q7: the question has 30 tokens, which leaves 0 of the "
                                         r"32-token window for the context, not more than --doc-stride 8"):
        build_windows(mine, examples, 32, 8, with_answers=True, source="dev.json")


def test_best_span_respects_the_rules():
    offsets = [None, None, (0, 1), (2, 3), (4, 5), None]  # [CLS] q-token | three context tokens | [SEP]
    start = np.array([9.0, 8.0, 1.5, 3.0, 0.0, 9.0])
    end = np.array([9.0, 8.0, 2.0, 0.0, 1.0, 9.0])
    # Best without rules would be [CLS], the question or [SEP]; inside: (3, 4) = 4 beats (2, 2) = 3.5.
    assert best_spans(start, end, offsets, max_answer_length=30, k=2) == [(4.0, 3, 4), (3.5, 2, 2)]
    assert best_spans(start, end, offsets, max_answer_length=1)[0] == (3.5, 2, 2)  # 2 tokens is too long now
    start[4], end[3], end[4] = 20.0, 10.0, -50.0
    assert best_spans(start, end, offsets, 30)[0] == (13.0, 3, 3)  # (4, 3) = 30 ends before it starts


class FixedModel:
    """Stands in for a QA model: returns preset logits for each window (by its first context token id)."""

    def __init__(self, logits):
        self.logits, self.training = logits, False
        self.bert = type("Body", (), {"_cache": None})()

    def eval(self):
        return self.train(False)

    def train(self, mode=True):  # forward_in_batches puts the model back in the mode it found it in
        self.training = mode
        return self

    def forward(self, input_ids, token_type_ids, attention_mask):
        B, T = input_ids.shape
        start, end = np.full((B, T), -20.0), np.full((B, T), -20.0)
        for row in range(B):
            for t, (s, e) in self.logits[int(input_ids[row].sum())].items():
                start[row, t], end[row, t] = s, e
        return type("Out", (), {"start_logits": start, "end_logits": end})()


def test_best_answer_across_windows_and_the_null_answer(tokenizers):
    mine, _ = tokenizers
    ex = QAExample("x", "Where does the Danube end?", CONTEXT, [("the Black Sea", CONTEXT.index("the Black Sea"))])
    windows = windows_of(mine, ex.question, ex.context, 32, 8)
    keys = [int(w.input_ids.sum()) for w in windows]
    assert len(set(keys)) == len(keys)
    # window 0 votes for its first context token weakly, window 1 strongly for its first two; [CLS] scores 0.
    n_q = int((windows[1].token_type_ids == 0).sum())
    logits = {k: {0: (0.0, 0.0)} for k in keys}
    logits[keys[0]].update({n_q: (2.0, 2.0)})
    logits[keys[1]].update({n_q: (5.0, 1.0), n_q + 1: (0.0, 4.0)})
    results, _ = answer_questions(FixedModel(logits), [ex], windows, 0, max_answer_length=30, k=2)
    first, second = windows[1].context_offsets[n_q], windows[1].context_offsets[n_q + 1]
    assert results[0]["text"] == CONTEXT[first[0]:second[1]] and results[0]["answers"][0]["score"] == 9.0
    assert results[0]["answers"][1]["score"] == 6.0  # 5 + 1: the one-token span in window 1 (window 0 gave 4)
    # SQuAD 2.0: a [CLS] score above the best span means "no answer".
    for k in keys:
        logits[k][0] = (6.0, 6.0)
    results, _ = answer_questions(FixedModel(logits), [ex], windows, 0, max_answer_length=30, allow_null=True)
    assert results[0]["text"] == "" and results[0]["null_score"] == 12.0
