"""Confusion-matrix picture (matplotlib, optional: without it the PNG is skipped with a note)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from minibert.viz.mpl import new_figure, save_figure


def save_confusion_matrix(cm, label_names, path, title="confusion matrix") -> Path | None:
    """Write a PNG: rows true class, columns predicted; colour = share of the row, text = count.
    Returns the path, or None when matplotlib is not installed."""
    cm = np.asarray(cm)
    C = len(label_names)
    row_share = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)  # (C, C) recall-normalised
    size = 2.5 + 0.55 * C
    try:
        fig = new_figure((size + 1.5, size))
    except ImportError:
        return None
    ax = fig.subplots()
    image = ax.imshow(row_share, cmap="Blues", vmin=0.0, vmax=1.0)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of the true class")
    ax.set_xticks(range(C), labels=label_names, rotation=45, ha="right")
    ax.set_yticks(range(C), labels=label_names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(title)
    for t in range(C):
        for p in range(C):
            if cm[t, p]:
                ax.text(p, t, str(cm[t, p]), ha="center", va="center", fontsize=8,
                        color="white" if row_share[t, p] > 0.5 else "black")
    path = Path(path)
    save_figure(fig, path)
    return path
