"""Labelled examples from CSV, TSV or JSONL files, the label map, and a stratified train/eval split.

Every check happens here, before a model is even loaded: a missing file or column, an empty file, an empty
label, a label in the evaluation file that training never saw, a single class. Each is one ValueError line
naming the file (and row) and what was expected.
"""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from minibert.data.splits import label_sort_key as _sort_key
from minibert.data.splits import stratified_split  # noqa: F401 (re-exported: fine-tuning's split)
from minibert.io.atomic import check_input_file, read_text_file

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


@dataclass
class Examples:
    """Parallel lists: texts[i] (with text_pairs[i] when classifying pairs) has label labels[i] (a string)."""

    texts: list[str]
    labels: list[str] | None = None
    text_pairs: list[str] | None = None
    source: str = "examples"
    extra: dict = field(default_factory=dict)  # anything a task wants to remember (e.g. its split seed)

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices, source: str | None = None) -> "Examples":
        pick = lambda xs: None if xs is None else [xs[i] for i in indices]  # noqa: E731
        return Examples(pick(self.texts), pick(self.labels), pick(self.text_pairs), source or self.source)


# ---------------------------------------------------------------------------- reading files
def file_format(path: Path, option: str | None = None) -> str:
    """csv, tsv or jsonl, by the extension of `path` (given as `option`, which the error then names)."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        where = f"{option} {path}" if option else str(path)
        raise ValueError(f"{where}: unknown file type {path.suffix!r}; expected .csv, .tsv or .jsonl")
    return fmt


def check_rows_file(path, option: str | None = None) -> str:
    """The format of a file of rows that exists, checked before it is read (for a command, before any model
    loads): one line naming the file, and the option that gave it if any, otherwise."""
    check_input_file(Path(path), f"{option} {path}" if option else None, "a .csv, .tsv or .jsonl file")  # (as given)
    return file_format(Path(path), option)


def read_rows(path) -> list[dict]:
    """The rows of a CSV/TSV (first line = header) or JSONL (one JSON object per line) file, as dicts."""
    path = Path(path)
    fmt = check_rows_file(path)
    text = read_text_file(path)
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    if fmt == "jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid JSON ({e.msg}); expected one JSON object per line") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{n}: expected a JSON object per line, got {type(row).__name__}")
            rows.append(row)
    else:
        csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # long documents in one cell
        reader = csv.DictReader(text.splitlines(keepends=True), delimiter="," if fmt == "csv" else "\t")
        rows = [row for row in reader if any((v or "").strip() for v in row.values() if isinstance(v, str))]
        if reader.fieldnames is None:
            raise ValueError(f"{path}: the file is empty")
    if not rows:
        raise ValueError(f"{path}: the file has a header but no examples")
    return rows


def _columns_of(rows: list[dict]) -> list[str]:
    seen = {}
    for row in rows[:100]:
        seen.update(dict.fromkeys(k for k in row if k is not None))
    return list(seen)


def _cell(row: dict, column: str, path, n: int, what: str, allow_empty: bool) -> str:
    value = row.get(column)
    if value is None:
        raise ValueError(f"{path}: example {n} has no {what} (column {column!r})")
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON 1.0 -> "1", the same class as 1
    elif what == "label" and isinstance(value, float):  # (0.5 as a class name is a mistake: a score, not a class)
        raise ValueError(f"{path}: example {n}: label {json.dumps(value)} (column {column!r}); expected a string or "
                         f"an integer")
    if isinstance(value, (dict, list)):
        raise ValueError(f"{path}: example {n}: column {column!r} holds a {type(value).__name__}, expected text")
    value = str(value)
    if not allow_empty and not value.strip():
        raise ValueError(f"{path}: example {n} has an empty {what} (column {column!r})")
    return value


def load_examples(path, text_column: str, label_column: str | None = None, text_pair_column: str | None = None,
                  max_examples: int | None = None) -> Examples:
    """Read labelled (or, with label_column None, unlabelled) examples; every problem is a one-line error."""
    rows = read_rows(path)
    columns = _columns_of(rows)
    for role, column in (("--text-column", text_column), ("--text-pair-column", text_pair_column),
                         ("--label-column", label_column)):
        if column is not None and column not in columns:
            raise ValueError(f"{path}: no column {column!r} ({role}); the file has columns: "
                             f"{', '.join(map(repr, columns))}")
    if max_examples is not None:
        rows = rows[:max_examples]
    texts = [_cell(r, text_column, path, n, "text", allow_empty=True) for n, r in enumerate(rows, 1)]
    pairs = None if text_pair_column is None else [
        _cell(r, text_pair_column, path, n, "second text", allow_empty=True) for n, r in enumerate(rows, 1)]
    labels = None if label_column is None else [
        _cell(r, label_column, path, n, "label", allow_empty=False).strip() for n, r in enumerate(rows, 1)]
    return Examples(texts, labels, pairs, source=str(path))


# ---------------------------------------------------------------------------- labels
def build_label_names(train: Examples) -> list[str]:
    """The class names, in id order, from the training labels; at least two classes."""
    names = sorted(set(train.labels), key=_sort_key)
    if len(names) < 2:
        raise ValueError(f"{train.source}: every example has the label {names[0]!r}; a classifier needs at least "
                         f"two classes")
    return names


def check_labels_known(examples: Examples, label2id: dict[str, int], trained_on: str):
    """A label the model never saw in training cannot be predicted: say so before training starts."""
    unknown = sorted(set(examples.labels) - set(label2id), key=_sort_key)
    if unknown:
        n = sum(label in unknown for label in examples.labels)
        raise ValueError(f"{examples.source}: label {unknown[0]!r} ({n} example{'s' * (n > 1)}"
                         f"{f', and {len(unknown) - 1} more unknown labels' if len(unknown) > 1 else ''}) does not "
                         f"occur in {trained_on}; known labels: {', '.join(map(repr, label2id))}"[:400])


def label_ids(examples: Examples, label2id: dict[str, int]) -> np.ndarray:
    return np.array([label2id[label] for label in examples.labels], dtype=np.int64)  # (N,)


# ---------------------------------------------------------------------------- splitting
def limit_examples(examples: Examples, max_examples: int | None, seed: int) -> Examples:
    """A stratified random subset of exactly max_examples (for runs with a fixed compute budget): every class
    keeps its share, and at least one example."""
    if max_examples is None or max_examples >= len(examples):
        return examples
    classes = len(set(examples.labels))
    if max_examples < classes:  # (every class keeps at least one example)
        raise ValueError(f"--max-train-examples {max_examples} is fewer than the {classes} classes of "
                         f"{examples.source}: every class keeps at least one example; give at least {classes}")
    _, chosen = stratified_split(examples.labels, max_examples / len(examples), seed)
    # Rounding per class misses the target by a few: drop (never a class's last example) or add at random.
    rng = np.random.default_rng([seed, 3])
    chosen = set(chosen.tolist())
    counts = {}
    for i in chosen:
        counts[examples.labels[i]] = counts.get(examples.labels[i], 0) + 1
    for i in rng.permutation(sorted(chosen)).tolist():
        if len(chosen) <= max_examples:
            break
        if counts[examples.labels[i]] > 1:
            counts[examples.labels[i]] -= 1
            chosen.discard(i)
    if len(chosen) < max_examples:
        rest = np.setdiff1d(np.arange(len(examples)), sorted(chosen))
        chosen.update(rng.choice(rest, size=max_examples - len(chosen), replace=False).tolist())
    return examples.subset(sorted(chosen), source=examples.source)
