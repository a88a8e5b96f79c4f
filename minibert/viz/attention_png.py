"""Attention heatmaps as PNG: one head in detail, or a grid of layers x heads.

Rows are the query tokens (the token that looks), columns the key tokens (the tokens it looks at); each row
sums to 1. Layers and heads are numbered from 0, as in the parameter names (encoder.layer.0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from minibert.viz.attention_data import AttentionResult
from minibert.viz.model_select import model_label


def _labels(tokens: list[str]) -> list[str]:
    """Token labels with their position, so that two "the" can be told apart."""
    return [f"{t} {i}" if tokens.count(t) > 1 else t for i, t in enumerate(tokens)]


def _set_token_ticks(ax, labels, axis, fontsize, max_labels=80):
    """Label every token, or every k-th one when there are too many to read."""
    step = -(-len(labels) // max_labels)  # ceil
    ticks = list(range(0, len(labels), step))
    shown = [labels[i] for i in ticks]
    if axis == "x":
        ax.set_xticks(ticks, shown, rotation=90, fontsize=fontsize)
    else:
        ax.set_yticks(ticks, shown, fontsize=fontsize)


def draw_attention_png(result: AttentionResult, out_path: str | Path, layers: list[int] | None = None,
                       heads: list[int] | None = None, dpi: int = 120) -> Path:
    """One heatmap when one layer and one head are chosen, else a grid (rows: layers, columns: heads)."""
    layers = list(range(result.num_layers)) if layers is None else layers
    heads = list(range(result.num_heads)) if heads is None else heads
    if len(layers) == 1 and len(heads) == 1:
        return _draw_one(result, out_path, layers[0], heads[0], dpi)
    return _draw_grid(result, out_path, layers, heads, dpi)


def _draw_one(result, out_path, layer, head, dpi):
    from minibert.viz.mpl import new_figure, save_figure
    attn = result.attentions[layer, head]  # (T, T)
    T = attn.shape[0]
    labels = _labels(result.tokens)
    side = min(max(5.0, 0.42 * T + 2.5), 30.0)
    fig = new_figure((side + 1.2, side))
    ax = fig.subplots()
    image = ax.imshow(attn, cmap="viridis", vmin=0.0, vmax=1.0)
    fontsize = max(6, 11 - T // 12)
    room = int(side * 72 / (fontsize + 2))  # how many labels fit along an axis
    _set_token_ticks(ax, labels, "x", fontsize, max_labels=room)
    _set_token_ticks(ax, labels, "y", fontsize, max_labels=room)
    ax.set_xlabel("key: the token attended to")
    ax.set_ylabel("query: the token that attends")
    if T <= 16:  # small enough to print each weight in its cell
        for i in range(T):
            for j in range(T):
                v = attn[i, j]
                ax.text(j, i, f"{v:.2f}"[1:] if v < 1 else "1", ha="center", va="center", fontsize=7,
                        color="black" if v > 0.5 else "white")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    ax.set_title(f"layer {layer}, head {head}" + (f"  ({model_label(result.model_name)})" if result.model_name else ""))
    save_figure(fig, out_path, dpi=dpi)
    return Path(out_path)


def _draw_grid(result, out_path, layers, heads, dpi):
    from minibert.viz.mpl import new_figure, save_figure
    T = len(result.tokens)
    labels = _labels(result.tokens)
    full_table = len(layers) > 1 and len(heads) > 1  # a row per layer, a column per head
    panels = [(layer, head) for layer in layers for head in heads]
    cols = len(heads) if full_table else min(len(panels), 6)  # else wrap into rows of at most 6
    rows = -(-len(panels) // cols)
    panel = min(max(1.8, 0.17 * T), 6.0, 40.0 / cols)  # inches per heatmap: room for T labels, within reason
    fontsize = max(4.5, min(8.0, panel * 72 / max(T, 1) * 0.8))
    fig = new_figure((cols * panel + 1.5, rows * panel + 1.0))
    axes = fig.subplots(rows, cols, squeeze=False)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(panels):
            ax.axis("off")  # an empty slot at the end of the last row
            continue
        layer, head = panels[k]
        r, c = divmod(k, cols)
        image = ax.imshow(result.attentions[layer, head], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_xticks([])
        ax.set_yticks([])
        if full_table:
            if r == 0:
                ax.set_title(f"head {head}", fontsize=10)
            if c == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=10)
        else:
            ax.set_title(f"layer {layer}, head {head}", fontsize=10)
        if c == 0:  # token labels on the outer edges only, so the panels stay readable
            _set_token_ticks(ax, labels, "y", fontsize, max_labels=int(panel * 72 / 6))
        if k + cols >= len(panels):  # nothing below this panel
            _set_token_ticks(ax, labels, "x", fontsize, max_labels=int(panel * 72 / 6))
    # one scale for every panel (0..1), so that a head spread evenly over T tokens (1/T each) reads as dark
    fig.colorbar(image, ax=axes, label="attention weight", fraction=0.15 / cols, pad=0.02)
    fig.suptitle("attention: rows = query token, columns = key token" +
                 (f"  ({model_label(result.model_name)})" if result.model_name else ""), fontsize=12)
    save_figure(fig, out_path, dpi=dpi)
    return Path(out_path)


def attention_summary(result: AttentionResult, layer: int, head: int, top: int = 1) -> list[str]:
    """For each token, the token it attends to most in one head: a few lines for the terminal."""
    attn = result.attentions[layer, head]  # (T, T)
    labels = _labels(result.tokens)
    lines = []
    for i, row in enumerate(attn):
        order = np.argsort(row)[::-1][:top]
        lines.append(f"  {labels[i]:>14} -> " + ", ".join(f"{labels[j]} {row[j]:.2f}" for j in order))
    return lines
