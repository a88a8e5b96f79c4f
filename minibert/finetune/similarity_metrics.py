"""Scores of a similarity (regression) task: Pearson's r and Spearman's rho between predicted and gold scores,
in NumPy. Spearman's rho is Pearson's r of the ranks, tied values sharing their mean rank (as scipy.stats.spearmanr
does); a constant list has no correlation, and counts as 0."""

from __future__ import annotations

import numpy as np


def pearson(x, y) -> float:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)  # (N,) (N,)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"expected two lists of the same length, got shapes {x.shape} and {y.shape}")
    dx, dy = x - x.mean(), y - y.mean()
    norm = np.sqrt((dx * dx).sum() * (dy * dy).sum())
    return float((dx * dy).sum() / norm) if norm > 0 else 0.0


def ranks(x) -> np.ndarray:
    """(N,) ranks 1..N of x, ties sharing their mean rank."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])  # first index of each run of equal values
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    out = np.empty(len(x))
    out[order] = np.repeat(mean_rank, ends - starts)
    return out


def spearman(x, y) -> float:
    return pearson(ranks(x), ranks(y))


def similarity_metrics(predicted, gold) -> dict:
    """{"spearman", "pearson", "mse", "num_examples"}."""
    predicted, gold = np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    return {"spearman": spearman(predicted, gold), "pearson": pearson(predicted, gold),
            "mse": float(np.mean((predicted - gold) ** 2)) if len(gold) else 0.0, "num_examples": len(gold)}


def format_similarity_report(metrics: dict) -> str:
    return (f"Spearman {metrics['spearman']:.4f}, Pearson {metrics['pearson']:.4f}, mean squared error "
            f"{metrics['mse']:.4f} ({metrics['num_examples']} pairs)")
