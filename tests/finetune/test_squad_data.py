"""SQuAD files: the hand-written v1.1 and v2.0 fixtures, and every bad-input error as one line."""

import json

import pytest

from heads_helpers import FIXTURES
from minibert.finetune.squad_data import read_squad


def test_v1_fixture():
    examples, v2 = read_squad(FIXTURES / "squad_v1_small.json")
    assert not v2 and [e.id for e in examples] == ["r1", "r2", "r3", "c1", "c2"]
    assert examples[0].answers == [("The Danube", 0), ("Danube", 4)]  # every accepted answer is kept
    for e in examples:
        for text, start in e.answers:
            assert e.context[start:start + len(text)] == text


def test_v2_fixture_has_an_unanswerable_question():
    examples, v2 = read_squad(FIXTURES / "squad_v2_small.json")
    assert v2 and [e.is_impossible for e in examples] == [False, False, True] and examples[2].answers == []


def squad(qas, context="Anna was born in Oslo."):
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


@pytest.mark.parametrize("data, message", [
    (squad([{"id": "q1", "question": "Where?", "answers": [{"text": "Oslo", "answer_start": 3}]}]),
     r"question q1: answer_start 3 does not point at the answer 'Oslo'; the context there reads 'a wa'"),
    (squad([{"id": "q1", "question": "Where?", "answers": [{"text": "Oslo", "answer_start": "17"}]}]),
     "answer_start must be an integer, got '17'"),
    (squad([{"id": "q1", "question": "Where?", "answers": []}]), "q1 has no answer and is not marked is_impossible"),
    (squad([{"id": "q1", "question": "Where?", "answers": [{"text": "Oslo", "answer_start": 17}]}] * 2),
     "question id 'q1' appears twice"),
    (squad([{"id": "q1", "answers": []}]), r"question q1: expected 'question' as a str"),
    ({"data": [{"title": "t"}]}, r"data\[0\]: expected 'paragraphs' as a list"),
    ({"version": "1.1"}, "the top level: expected 'data' as a list"),
    (squad([]), "no questions in the file"),
])
def test_bad_files(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_squad(path)


def test_not_json(tmp_path):
    (tmp_path / "x.json").write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_squad(tmp_path / "x.json")


def test_a_folder_is_named_a_folder(tmp_path):
    (tmp_path / "train.json").mkdir()
    with pytest.raises(FileNotFoundError, match="train.json: is a folder; expected a SQuAD .json file"):
        read_squad(tmp_path / "train.json")
