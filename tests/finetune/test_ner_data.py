"""CoNLL and JSONL readers for tagged sentences: columns, -DOCSTART-, IOB1 -> IOB2, the tag set, bad input."""

import json

import pytest

from heads_helpers import FIXTURES
from minibert.finetune.ner_data import (TaggedSentences, build_tag_names, check_tags_known, iob1_to_iob2,
                                        read_tagged)


def test_conll_fixture_is_read_and_converted_to_iob2():
    data = read_tagged(FIXTURES / "ner_small.conll")
    assert data.words == [
        ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
        ["Peter", "Blackburn"],
        ["Only", "France", "and", "Britain", "backed", "Fischler", "'s", "proposal", "."]]
    assert data.tags == [  # the file is IOB1 (CoNLL-2003 as distributed): entities open with I-
        ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"],
        ["B-PER", "I-PER"],
        ["O", "B-LOC", "O", "B-LOC", "O", "B-PER", "O", "O", "O"]]


def test_jsonl_fixture_keeps_unicode_words():
    data = read_tagged(FIXTURES / "ner_small.jsonl")
    assert len(data) == 3 and data.words[2][0] == "Café" and data.tags[2][-1] == "I-LOC"


@pytest.mark.parametrize("tags, expected", [
    (["I-PER", "I-PER", "O", "I-LOC"], ["B-PER", "I-PER", "O", "B-LOC"]),
    (["I-PER", "B-PER", "I-PER"], ["B-PER", "B-PER", "I-PER"]),  # two adjacent persons: B- separates them
    (["I-PER", "I-LOC"], ["B-PER", "B-LOC"]),  # a type change opens a new entity
    (["B-PER", "I-PER", "O", "B-LOC"], ["B-PER", "I-PER", "O", "B-LOC"]),  # IOB2 stays as it is
])
def test_iob1_to_iob2(tags, expected):
    assert iob1_to_iob2(tags) == expected


def test_tag_set_has_both_prefixes_of_every_type():
    train = TaggedSentences([["a", "b"]], [["B-PER", "O"]])
    assert build_tag_names(train) == ["O", "B-PER", "I-PER"]
    with pytest.raises(ValueError, match="every tag is 'O'"):
        build_tag_names(TaggedSentences([["a"]], [["O"]]))


def test_eval_tag_of_an_unknown_type_is_one_clear_line():
    names = ["O", "B-PER", "I-PER"]
    check_tags_known(TaggedSentences([["x"]], [["I-PER"]], "ok.conll"), names, "train.conll")
    with pytest.raises(ValueError, match=r"dev.conll: sentence 2 has tag 'B-LOC'.*train.conll.*PER"):
        check_tags_known(TaggedSentences([["x"], ["y"]], [["O"], ["B-LOC"]], "dev.conll"), names, "train.conll")


@pytest.mark.parametrize("name, text, message", [
    ("one_column.conll", "EU B-ORG\nrejects\n", r"one_column.conll:2: expected a token and its tag"),
    ("bad_tag.conll", "EU ORG\n", r"bad_tag.conll:1: tag 'ORG' is not IOB"),
    ("bad_prefix.conll", "EU X-ORG\n", r"tag 'X-ORG' is not IOB"),
    ("empty.conll", "-DOCSTART- O\n\n", "no sentences"),
    ("short.jsonl", json.dumps({"tokens": ["a", "b"], "tags": ["O"]}) + "\n",
     r"short.jsonl: sentence 1: 'tags' must be a list"),
    ("notjson.jsonl", "{oops\n", r"notjson.jsonl:1: not valid JSON"),
    ("mixed.jsonl", json.dumps({"tokens": ["a"], "tags": ["O"]}) + "\n" + json.dumps({"tokens": ["b"]}) + "\n",
     r"mixed.jsonl: sentence 2 has no 'tags'"),
    ("words.jsonl", json.dumps({"words": ["a"]}) + "\n", r"words.jsonl: sentence 1: expected 'tokens' as a list"),
    # (any file not named as JSONL is read as CoNLL; a format error then says so)
    ("words.csv", "a,b\n", r"words.csv:1: expected a token and its tag .*\(read as CoNLL: only .jsonl"),
])
def test_bad_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_tagged(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_tagged(tmp_path / "nope.conll")
    (tmp_path / "data.conll").mkdir()
    with pytest.raises(FileNotFoundError, match="data.conll: is a folder; expected a CoNLL or .jsonl file"):
        read_tagged(tmp_path / "data.conll")
