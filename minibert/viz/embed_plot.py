"""Token embeddings in 2-D: the word-embedding rows of chosen words, projected with PCA, drawn with labels.

A word the vocabulary splits into several pieces ("playing" -> "play", "##ing") gets the mean of its pieces'
rows. PCA is plain NumPy: centre the vectors, take the SVD, keep the two directions of largest variance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from minibert.embeddings import l2_normalize


@dataclass
class WordVectors:
    words: list[str]
    pieces: list[list[str]]  # the WordPiece pieces of each word
    vectors: np.ndarray  # (N, H)
    unknown: list[str]  # words left out: the vocabulary only knows them as [UNK]
    same_as: dict[str, str] = field(default_factory=dict)  # a word left out -> the kept word with its pieces


def word_vectors(word_embeddings: np.ndarray, tokenizer, words: list[str]) -> WordVectors:
    """The (mean) word-embedding row of each word. Left out: [UNK]-only words, repeated words, and words that
    come out as the same pieces as an earlier one ("King" and "king" for a lowercasing tokenizer: one point)."""
    kept, pieces, rows, unknown, same_as, seen = [], [], [], [], {}, {}
    for word in words:
        if word in seen or word in unknown:
            continue
        tokens = tokenizer.tokenize(word)
        ids = tokenizer.convert_tokens_to_ids(tokens) if tokens else []
        ids = [i for i in ids if i != tokenizer.unk_token_id]
        if not ids:
            unknown.append(word)
            continue
        key = tuple(tokens)
        if key in seen.values():
            same_as[word] = next(w for w, k in seen.items() if k == key)
            continue
        seen[word] = key
        kept.append(word)
        pieces.append(tokens)
        rows.append(word_embeddings[ids].astype(np.float64).mean(axis=0))  # (H,)
    H = word_embeddings.shape[1]
    vectors = np.stack(rows) if rows else np.zeros((0, H))
    return WordVectors(kept, pieces, vectors, unknown, same_as)


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
    """Offsets (in points) that keep labels from covering each other and inside the axes: each label tries a
    few places around its point and takes the first one that overlaps no label placed before it and stays
    inside the frame (else the first that overlaps none, else the first).

    Positions and label sizes are measured on the figure as it will be drawn: the layout is run first (before
    it, the axes' data limits and position are not yet final, and distances would come out wrong)."""
    fig = ax.figure
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    to_points = 72.0 / fig.dpi
    xy = ax.transData.transform(coords) * to_points  # (N, 2) positions in points
    frame = ax.get_window_extent(renderer)
    fx0, fy0, fx1, fy1 = (v * to_points for v in (frame.x0, frame.y0, frame.x1, frame.y1))
    from matplotlib.font_manager import FontProperties
    font = FontProperties(size=fontsize)
    placed, offsets = [], []
    for (px, py), word in zip(xy, words):
        w, h, _ = renderer.get_text_width_height_descent(word, font, ismath=False)
        w, h = w * to_points + 2, h * to_points + 2  # the label's box in points, with a little air
        choices = [(5, 4), (5, -h - 2), (-w - 5, 4), (-w - 5, -h - 2), (5, h + 6), (5, -2 * h - 6),
                   (-w / 2, h + 6), (-w / 2, -2 * h - 6)]

        def box(d):
            return (px + d[0], py + d[1], px + d[0] + w, py + d[1] + h)

        def free(b):
            return not any(b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3] for o in placed)

        def inside(b):
            return fx0 <= b[0] and b[2] <= fx1 and fy0 <= b[1] and b[3] <= fy1

        best = next((d for d in choices if free(box(d)) and inside(box(d))), None)
        best = best or next((d for d in choices if free(box(d))), choices[0])
        placed.append(box(best))
        offsets.append(best)
    return offsets


def plot_embeddings(coords: np.ndarray, words: list[str], explained: np.ndarray, out_path: str | Path,
                    title: str = "") -> Path:
    from minibert.viz.mpl import new_figure, save_figure
    fig = new_figure((8, 7))
    ax = fig.subplots()
    ax.scatter(coords[:, 0], coords[:, 1], s=40, color="tab:blue", zorder=3)
    ax.margins(0.12)
    ax.axhline(0, color="0.85", zorder=1)
    ax.axvline(0, color="0.85", zorder=1)
    ax.set_xlabel(f"principal component 1 ({explained[0]:.0%} of the variance)")
    ax.set_ylabel(f"principal component 2 ({explained[1]:.0%} of the variance)")
    ax.set_title(title or "word embeddings, PCA to 2-D")
    ax.grid(alpha=0.3)
    # labels last: their places are chosen on the finished layout
    for (x, y), word, offset in zip(coords, words, label_offsets(ax, coords, words, fontsize=11)):
        moved = offset[1] != 4  # not beside its point (pushed up or down): a thin line shows which point it names
        ax.annotate(word, (x, y), xytext=offset, textcoords="offset points", fontsize=11, zorder=4,
                    arrowprops=dict(arrowstyle="-", color="0.55", linewidth=0.7) if moved else None)
    save_figure(fig, out_path)
    return Path(out_path)
