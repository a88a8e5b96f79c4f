"""STS-B, the Semantic Textual Similarity Benchmark (Cer et al., 2017): how alike two sentences are in meaning,
a score from 0 (unrelated) to 5 (equivalent), averaged over annotators. A regression task: the model's one
output is the score (BertForSequenceClassification with num_labels 1, mean squared error), scored by Spearman's
and Pearson's correlation with the gold scores (similarity_metrics.py).

The data package's files are GLUE's splits with gold scores for test too: train (5,749 pairs), dev (1,500: the
eval split) and test (1,379). Lines are tab-separated: genre, source, year, id, score, sentence 1, sentence 2;
some lines carry two more columns after the sentences (the pair's sources), which are dropped. Every problem is
one line naming the file and line, found before any model loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAX_SCORE = 5.0
COLUMNS = 7  # genre, source, year, id, score, sentence 1, sentence 2


@dataclass
class ScoredPairs:
    """Parallel lists: the pair (first[i], second[i]) has the gold similarity scores[i], in [0, 5]."""

    first: list[str]
    second: list[str]
    scores: np.ndarray  # (N,) float64
    source: str = "pairs"

    def __len__(self) -> int:
        return len(self.first)

    def subset(self, indices, source: str | None = None) -> "ScoredPairs":
        indices = list(indices)
        return ScoredPairs([self.first[i] for i in indices], [self.second[i] for i in indices],
                           self.scores[indices], source or self.source)

    def examples(self):
        """The pairs as finetune.data.Examples (no labels): what the tokenizer reads."""
        from minibert.finetune.data import Examples
        return Examples(list(self.first), None, list(self.second), self.source)


def read_sts(path) -> ScoredPairs:
    from minibert.io.atomic import check_input_file, read_text_file

    path = Path(path)
    check_input_file(path, expected="an STS-B file (tab-separated)")
    first, second, scores = [], [], []
    for n, line in enumerate(read_text_file(path).split("\n"), start=1):
        if not line.strip():
            continue
        columns = line.rstrip("\r").split("\t")
        if len(columns) < COLUMNS:
            raise ValueError(f"{path}:{n}: expected {COLUMNS} tab-separated columns (genre, source, year, id, score, "
                             f"sentence 1, sentence 2), got {len(columns)}: {line.strip()[:60]!r}")
        score_text, a, b = columns[4], columns[5].strip(), columns[6].strip()
        try:
            score = float(score_text)
        except ValueError:
            raise ValueError(f"{path}:{n}: the score (column 5) is {score_text!r}, not a number") from None
        if not 0.0 <= score <= MAX_SCORE:
            raise ValueError(f"{path}:{n}: the score {score_text} is outside [0, {MAX_SCORE:g}]")
        if not a or not b:
            raise ValueError(f"{path}:{n}: sentence {1 if not a else 2} (column {6 if not a else 7}) is empty")
        first.append(a)
        second.append(b)
        scores.append(score)
    if not first:
        raise ValueError(f"{path}: no sentence pairs in the file")
    return ScoredPairs(first, second, np.array(scores, dtype=np.float64), str(path))


def load():
    from minibert.finetune.task_data import Task
    from minibert.data.builtin import stsb_path

    train, eval_, test = (read_sts(stsb_path(split)) for split in ("train", "dev", "test"))
    return Task("stsb", "similarity of two sentences, a score from 0 to 5 (regression)", train, eval_, test)
