"""Class names and classifier dropout shared by the heads that predict classes (per sequence or per token).

The names live in the config as Hugging Face writes them (`id2label` with string keys, `label2id`), so a saved
model loads in transformers with the same names, and the number of classes follows from them.
"""

from __future__ import annotations

import copy

import numpy as np


def labels_from_config(config) -> dict[int, str] | None:
    """The config's id2label as {int: str} (config.json stores the keys as strings), or None."""
    id2label = config.extra.get("id2label")
    if not id2label:
        return None
    try:
        mapping = {int(k): str(v) for k, v in id2label.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"config id2label must map class ids to names, got {id2label!r}"[:200]) from None
    if sorted(mapping) != list(range(len(mapping))):
        raise ValueError(f"config id2label must have the ids 0..{len(mapping) - 1}, got {sorted(mapping)}")
    return mapping


def classifier_dropout_of(config, key="classifier_dropout") -> float:
    """Hugging Face's rule: `key` (classifier_dropout; DistilBERT's seq_classif_dropout) when the config sets it,
    else `hidden_dropout_prob`."""
    dropout = config.extra.get(key)
    p = config.hidden_dropout_prob if dropout is None else float(dropout)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"config {key} must be in [0, 1), got {dropout!r}")
    return p


class ClassLabels:
    """Mixin: `num_labels`, `id2label`, `label2id`, `set_labels` for a model whose config names its classes."""

    head_names = ("classifier.weight", "classifier.bias")  # the task head: new when fine-tuning for new labels

    def _init_labels(self, config, num_labels):
        """A copy of `config` with C class names written in; sets self.num_labels. Call before Model.__init__.

        num_labels None: len(config id2label) if the config has one, else 2. A num_labels that disagrees with
        the config's id2label replaces the names by LABEL_0..LABEL_{C-1} (what Hugging Face does)."""
        config = copy.deepcopy(config)  # the label names are written into it; never change the caller's
        names = labels_from_config(config)
        if num_labels is None:
            num_labels = len(names) if names else int(config.extra.get("num_labels", 2))
        if isinstance(num_labels, bool) or not isinstance(num_labels, (int, np.integer)) or num_labels < 1:
            raise ValueError(f"num_labels must be a positive integer, got {num_labels!r}")
        self.num_labels = int(num_labels)
        if names is None or len(names) != self.num_labels:
            names = {i: f"LABEL_{i}" for i in range(self.num_labels)}
        self._write_labels(config, names)
        return config

    def _write_labels(self, config, names: dict[int, str]):
        config.extra["id2label"] = {str(i): names[i] for i in range(len(names))}
        config.extra["label2id"] = {names[i]: i for i in range(len(names))}
        config.extra["architectures"] = [type(self).__name__]
        config.extra.pop("num_labels", None)  # implied by id2label, as in Hugging Face's config.json

    @property
    def id2label(self) -> dict[int, str]:
        """Class index -> class name (config.json's id2label; LABEL_0, ... until set_labels names them)."""
        return labels_from_config(self.config)

    @property
    def label2id(self) -> dict[str, int]:
        """Class name -> class index: `[model.label2id[name] for name in names]` makes labels for forward."""
        return {name: i for i, name in self.id2label.items()}

    def set_labels(self, names):
        """Name the classes: names[i] is the name of class i (written to config.json as id2label/label2id)."""
        names = [str(n) for n in names]
        if len(names) != self.num_labels:
            raise ValueError(f"set_labels got {len(names)} names for a model with {self.num_labels} classes")
        if len(set(names)) != len(names):
            raise ValueError(f"label names must be distinct, got {names}")
        self._write_labels(self.config, dict(enumerate(names)))
