"""`minibert embed-plot`: word-embedding rows (mean over word pieces), PCA by SVD, a labelled PNG."""

from __future__ import annotations

import numpy as np
import pytest
from viz_helpers import VOCAB, assert_png_has_content

from minibert.cli import main
from minibert.tokenizer import WordPieceTokenizer
from minibert.viz.embed_plot import cosine_neighbours, pca_2d, word_vectors


def test_pca_recovers_a_plane():
    """Points on a 2-D plane inside 10-D: the projection keeps every distance and explains all the variance."""
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.standard_normal((10, 2)))  # (10, 2) orthonormal
    plane = rng.standard_normal((7, 2)) * [3.0, 1.0]  # more spread along the first direction
    points = plane @ basis.T + rng.standard_normal(10)  # (7, 10), shifted away from the origin
    coords, explained = pca_2d(points)
    dist = lambda x: np.linalg.norm(x[:, None] - x[None], axis=-1)  # noqa: E731
    np.testing.assert_allclose(dist(coords), dist(points), atol=1e-9)
    assert explained.sum() == pytest.approx(1.0)
    assert explained[0] > explained[1]
    again, _ = pca_2d(points[::-1])  # the same points in another order: the same picture (signs fixed)
    np.testing.assert_allclose(again[::-1], coords, atol=1e-9)


def test_word_vectors_average_pieces_and_skip_unknown_words():
    tok = WordPieceTokenizer(VOCAB)
    table = np.arange(len(VOCAB) * 4, dtype=np.float32).reshape(len(VOCAB), 4)  # (V, 4)
    wv = word_vectors(table, tok, ["cat", "playing", "zebra", "cat", "dogs"])
    assert wv.words == ["cat", "playing", "dogs"]
    assert wv.unknown == ["zebra"]
    assert wv.pieces[1] == ["play", "##ing"]
    np.testing.assert_allclose(wv.vectors[0], table[tok.vocab["cat"]])
    np.testing.assert_allclose(wv.vectors[1], (table[tok.vocab["play"]] + table[tok.vocab["##ing"]]) / 2)


def test_cosine_neighbours():
    v = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    assert [j for j, _ in cosine_neighbours(v)] == [1, 0, 1]


def test_embed_plot_command(tiny_model_dir, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "emb.png"
    assert main(["embed-plot", "--model", str(tiny_model_dir), "--words", "king", "queen", "man", "woman",
                 "playing", "zebra", "--out", str(out)]) == 0
    assert_png_has_content(out, min_width=600, min_height=500)
    captured = capsys.readouterr()
    assert "zebra" in captured.err and "unknown" in captured.err
    assert "play ##ing" in captured.out
    assert main(["embed-plot", "--model", str(tiny_model_dir), "--words", "king", "zebra", "queen",
                 "--out", str(tmp_path / "few.png")]) == 2
    assert "need at least 3 words" in capsys.readouterr().err


def test_minilm_embeddings_put_related_words_together(tmp_path, capsys):
    """With the real all-MiniLM-L6-v2 rows, king's nearest word is queen and man's is woman."""
    from minibert.data.builtin import minilm_dir
    try:
        folder = minilm_dir()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    pytest.importorskip("matplotlib")
    out = tmp_path / "minilm.png"
    assert main(["embed-plot", "--model", str(folder), "--words", "king", "queen", "man", "woman", "apple",
                 "banana", "--out", str(out)]) == 0
    assert_png_has_content(out)
    nearest = {line.split()[0]: line.split()[2] for line in capsys.readouterr().out.splitlines()[1:7]}
    assert nearest["king"] == "queen" and nearest["man"] == "woman" and nearest["apple"] == "banana"
