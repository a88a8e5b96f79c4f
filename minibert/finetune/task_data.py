"""A built-in task's data: its name and its train, eval and test splits (the registry: tasks.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Task:
    """A task's data: Examples (text classification), ner_data.TaggedSentences (tokens) or stsb.ScoredPairs
    (regression)."""
    name: str
    description: str
    train: object  # Examples, TaggedSentences or ScoredPairs, as the task's kind
    eval: object
    test: object
