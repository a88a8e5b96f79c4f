"""Reading labelled files, the label map, and the stratified split: every bad input is one clear error."""

import json

import numpy as np
import pytest

from finetune_helpers import make_examples, write_rows
from minibert.finetune.data import (Examples, build_label_names, check_labels_known, limit_examples, load_examples,
                                    stratified_split)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_the_three_formats_read_the_same_examples(tmp_path, suffix):
    rows = make_examples(7) + [{"text": 'a "quoted", tabbed\ttext', "label": "positive"}]
    ex = load_examples(write_rows(tmp_path / f"data{suffix}", rows), "text", "label")
    assert ex.texts == [r["text"] for r in rows]
    assert ex.labels == [r["label"] for r in rows]


def test_pairs_and_integer_labels_from_jsonl(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"a": "one", "b": "two", "y": 10}, {"a": "three", "b": "four", "y": 2.0}, {"a": "x", "b": "y", "y": 2},
    ]) + "\n\n", encoding="utf-8")
    ex = load_examples(path, "a", "y", text_pair_column="b")
    assert ex.text_pairs == ["two", "four", "y"]
    assert ex.labels == ["10", "2", "2"]  # 2.0 and 2 are the same class
    assert build_label_names(ex) == ["2", "10"]  # integer labels in numeric order, not "10" < "2"


def test_missing_column_names_the_file_and_the_columns(tmp_path):
    path = write_rows(tmp_path / "d.csv", make_examples(4))
    with pytest.raises(ValueError, match=r"d\.csv: no column 'review' \(--text-column\); the file has columns: "
                                         r"'text', 'label'"):
        load_examples(path, "review", "label")


def test_empty_and_header_only_files(tmp_path):
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty.csv: the file is empty"):
        load_examples(tmp_path / "empty.csv", "text", "label")
    (tmp_path / "header.tsv").write_text("text\tlabel\n", encoding="utf-8")
    with pytest.raises(ValueError, match="header but no examples"):
        load_examples(tmp_path / "header.tsv", "text", "label")
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_examples(tmp_path / "missing.csv", "text", "label")
    with pytest.raises(ValueError, match="unknown file type '.xlsx'"):
        (tmp_path / "x.xlsx").write_text("t", encoding="utf-8")
        load_examples(tmp_path / "x.xlsx", "text", "label")


def test_a_folder_is_named_a_folder_not_a_missing_file(tmp_path):
    (tmp_path / "data.csv").mkdir()
    with pytest.raises(FileNotFoundError, match=r"data.csv: is a folder; expected a .csv, .tsv or .jsonl file"):
        load_examples(tmp_path / "data.csv", "text", "label")


def test_an_options_file_is_named_as_the_user_gave_it(tmp_path, monkeypatch):
    from minibert.finetune.data import check_rows_file
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    with pytest.raises(FileNotFoundError, match=r"^--input \./d/\.\./d/: is a folder"):
        check_rows_file("./d/../d/", "--input")
    with pytest.raises(FileNotFoundError, match=r"^--input \./d/x\.csv: no such file$"):
        check_rows_file("./d/x.csv", "--input")


def test_an_empty_label_or_bad_json_line_is_located(tmp_path):
    path = write_rows(tmp_path / "d.csv", [{"text": "a", "label": "x"}, {"text": "b", "label": " "}])
    with pytest.raises(ValueError, match="example 2 has an empty label"):
        load_examples(path, "text", "label")
    (tmp_path / "bad.jsonl").write_text('{"text": "a", "label": 1}\n{"text": oops}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not valid JSON"):
        load_examples(tmp_path / "bad.jsonl", "text", "label")


def test_single_class_and_unseen_labels_are_refused(tmp_path):
    train = load_examples(write_rows(tmp_path / "t.csv", make_examples(6, classes=("positive",))), "text", "label")
    with pytest.raises(ValueError, match="every example has the label 'positive'; a classifier needs at least two"):
        build_label_names(train)
    ev = load_examples(write_rows(tmp_path / "e.csv", make_examples(6)), "text", "label")
    with pytest.raises(ValueError, match=r"e.csv: label 'neutral' \(2 examples\) does not occur in train.csv"):
        check_labels_known(ev, {"negative": 0, "positive": 1}, "train.csv")


def test_stratified_split_is_disjoint_complete_per_class_and_seeded():
    labels = ["a"] * 50 + ["b"] * 30 + ["c"] * 2 + ["d"]
    keep, held = stratified_split(labels, 0.2, seed=0)
    assert sorted(np.concatenate([keep, held]).tolist()) == list(range(len(labels)))
    held_labels = [labels[i] for i in held]
    assert held_labels.count("a") == 10 and held_labels.count("b") == 6 and held_labels.count("c") == 1
    assert "d" not in held_labels  # a class with one example stays in training
    again, _ = stratified_split(labels, 0.2, seed=0)
    other, _ = stratified_split(labels, 0.2, seed=1)
    assert np.array_equal(keep, again) and not np.array_equal(keep, other)


def test_limit_examples_keeps_every_class_in_proportion():
    labels = ["big"] * 900 + ["mid"] * 95 + ["rare"] * 5
    ex = Examples([f"text {i}" for i in range(1000)], labels)
    for n in (100, 7, 333):
        small = limit_examples(ex, n, seed=0)
        assert len(small) == n and set(small.labels) == {"big", "mid", "rare"}
        assert set(small.texts) <= set(ex.texts)
    small = limit_examples(ex, 100, seed=0)
    assert 88 <= small.labels.count("big") <= 91 and 8 <= small.labels.count("mid") <= 11
    assert limit_examples(ex, 1000, seed=0) is ex
