"""Token embeddings in 2-D: the word-embedding rows of chosen words, projected with PCA, drawn with labels.

A word the vocabulary splits into several pieces ("playing" -> "play", "##ing") gets the mean of its pieces'
rows. PCA is plain NumPy: centre the vectors, take the SVD, keep the two directions of largest variance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from minibert.embeddings import l2_normalize


@dataclass
class WordVectors:
    words: list[str]
    pieces: list[list[str]]  # the WordPiece pieces of each word
    vectors: np.ndarray  # (N, H)
    unknown: list[str]  # words left out: the vocabulary only knows them as [UNK]


def word_vectors(word_embeddings: np.ndarray, tokenizer, words: list[str]) -> WordVectors:
    """The (mean) word-embedding row of each word; [UNK]-only and repeated words are left out."""
    kept, pieces, rows, unknown, seen = [], [], [], [], set()
    for word in words:
        if word in seen:
            continue
        seen.add(word)
        tokens = tokenizer.tokenize(word)
        ids = tokenizer.convert_tokens_to_ids(tokens) if tokens else []
        ids = [i for i in ids if i != tokenizer.unk_token_id]
        if not ids:
            unknown.append(word)
            continue
        kept.append(word)
        pieces.append(tokens)
        rows.append(word_embeddings[ids].astype(np.float64).mean(axis=0))  # (H,)
    H = word_embeddings.shape[1]
    vectors = np.stack(rows) if rows else np.zeros((0, H))
    return WordVectors(kept, pieces, vectors, unknown)


def pca_2d(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (N, H) vectors on their two main directions: returns coords (N, 2) and the share of the
    variance each direction explains (2,)."""
    if vectors.shape[0] < 2:
        raise ValueError(f"PCA needs at least 2 vectors, got {vectors.shape[0]}")
    centred = vectors - vectors.mean(axis=0)  # (N, H)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)  # s (K,), vt (K, H), K = min(N, H)
    components = vt[:2]  # (<=2, H)
    # An SVD's signs are arbitrary: fix them (largest loading positive) so the picture does not flip.
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    components = components * signs[:, None]
    coords = centred @ components.T  # (N, <=2)
    variance = s ** 2
    explained = variance[:2] / variance.sum() if variance.sum() > 0 else np.zeros(2)
    if coords.shape[1] < 2:  # one direction only (2 words): the second axis is all zeros
        coords = np.hstack([coords, np.zeros((coords.shape[0], 1))])
        explained = np.append(explained, 0.0)
    return coords, explained


def cosine_neighbours(vectors: np.ndarray) -> list[tuple[int, float]]:
    """For each vector, the index of its most similar other vector and their cosine similarity."""
    unit = l2_normalize(vectors)  # (N, H)
    sim = unit @ unit.T  # (N, N)
    np.fill_diagonal(sim, -np.inf)
    best = sim.argmax(axis=1)
    return [(int(j), float(sim[i, j])) for i, j in enumerate(best)]


def label_offsets(ax, coords, words, fontsize=11):
    """Offsets (in points) that keep labels from covering each other: each label tries a few places around its
    point and takes the first one that overlaps no label placed before it."""
    fig = ax.figure
    to_points = 72.0 / fig.dpi
    xy = ax.transData.transform(coords) * to_points  # (N, 2) positions in points
    placed, offsets = [], []
    for (px, py), word in zip(xy, words):
        w, h = 0.62 * fontsize * len(word), fontsize * 1.3  # a label's rough size in points
        choices = [(5, 4), (5, -h - 2), (-w - 5, 4), (-w - 5, -h - 2), (5, h + 6), (5, -2 * h - 6)]
        best = choices[0]
        for dx, dy in choices:
            box = (px + dx, py + dy, px + dx + w, py + dy + h)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                best = (dx, dy)
                break
        placed.append((px + best[0], py + best[1], px + best[0] + w, py + best[1] + h))
        offsets.append(best)
    return offsets


def plot_embeddings(coords: np.ndarray, words: list[str], explained: np.ndarray, out_path: str | Path,
                    title: str = "") -> Path:
    from minibert.viz.mpl import new_figure, save_figure
    fig = new_figure((8, 7))
    ax = fig.subplots()
    ax.scatter(coords[:, 0], coords[:, 1], s=40, color="tab:blue", zorder=3)
    ax.margins(0.12)
    for (x, y), word, offset in zip(coords, words, label_offsets(ax, coords, words, fontsize=11)):
        moved = offset != (5, 4)  # pushed aside by a neighbour: a thin line shows which point it names
        ax.annotate(word, (x, y), xytext=offset, textcoords="offset points", fontsize=11, zorder=4,
                    arrowprops=dict(arrowstyle="-", color="0.55", linewidth=0.7) if moved else None)
    ax.axhline(0, color="0.85", zorder=1)
    ax.axvline(0, color="0.85", zorder=1)
    ax.set_xlabel(f"principal component 1 ({explained[0]:.0%} of the variance)")
    ax.set_ylabel(f"principal component 2 ({explained[1]:.0%} of the variance)")
    ax.set_title(title or "word embeddings, PCA to 2-D")
    ax.grid(alpha=0.3)
    save_figure(fig, out_path)
    return Path(out_path)
