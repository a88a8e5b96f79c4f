"""SQuAD v1.1 / v2.0 files: questions on paragraphs, answers as character spans of the paragraph.

    {"version": "v2.0", "data": [{"title": ..., "paragraphs": [{"context": "...", "qas": [
        {"id": "...", "question": "...", "answers": [{"text": "...", "answer_start": 42}], "is_impossible": false}
    ]}]}]}

v2.0 adds questions with no answer in the paragraph ("is_impossible": true, empty "answers"). Every answer is
checked against its paragraph (the text must sit at answer_start) before any model is loaded: one line naming
the file, the question id and both texts when it does not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class QAExample:
    id: str
    question: str
    context: str
    answers: list[tuple[str, int]] = field(default_factory=list)  # (text, character start); all accepted ones
    is_impossible: bool = False


def _field(obj, key, kind, where):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise ValueError(f"{where}: expected {key!r} as a {kind.__name__ if isinstance(kind, type) else 'value'}, "
                         f"got {type(value).__name__}")
    return value


def read_squad(path) -> tuple[list[QAExample], bool]:
    """(examples, is_v2): every question of the file; is_v2 when it has unanswerable questions or says v2."""
    path = Path(path)
    from minibert.io.atomic import check_input_file, read_text_file
    check_input_file(path, expected="a SQuAD .json file")
    try:
        data = json.loads(read_text_file(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}); expected a SQuAD file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level is a {type(data).__name__}; expected a SQuAD file: an object "
                         f"whose 'data' is the list of articles")
    articles = _field(data, "data", list, f"{path}: the top level")
    examples, seen = [], set()
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(_field(article, "paragraphs", list, f"{path}: data[{a}]")):
            where = f"{path}: data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", str, where)
            for q, qa in enumerate(_field(paragraph, "qas", list, where)):
                qid = str(qa.get("id", f"{a}.{p}.{q}")) if isinstance(qa, dict) else f"{a}.{p}.{q}"
                question = _field(qa, "question", str, f"{path}: question {qid}")
                if qid in seen:
                    raise ValueError(f"{path}: question id {qid!r} appears twice")
                seen.add(qid)
                impossible = bool(qa.get("is_impossible", False))
                answers = []
                for answer in qa.get("answers") or []:
                    text = _field(answer, "text", str, f"{path}: question {qid}: an answer")
                    start = answer.get("answer_start")
                    if not isinstance(start, int) or isinstance(start, bool):
                        raise ValueError(f"{path}: question {qid}: answer_start must be an integer, got {start!r}")
                    if context[start:start + len(text)] != text:
                        raise ValueError(f"{path}: question {qid}: answer_start {start} does not point at the answer "
                                         f"{text[:40]!r}; the context there reads "
                                         f"{context[start:start + len(text)][:40]!r}")
                    answers.append((text, start))
                if not impossible and not answers:
                    raise ValueError(f"{path}: question {qid} has no answer and is not marked is_impossible")
                examples.append(QAExample(qid, question, context, answers, impossible))
    if not examples:
        raise ValueError(f"{path}: no questions in the file")
    is_v2 = str(data.get("version", "")).lstrip("v").startswith("2") or any(e.is_impossible for e in examples)
    return examples, is_v2
