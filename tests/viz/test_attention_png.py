"""`minibert attention --out`: heatmaps drawn from the model's real attention, and clear errors for bad input."""

from __future__ import annotations

import numpy as np
import pytest
from viz_helpers import MAX_POSITIONS, assert_png_has_content, reference_attentions

from minibert.cli import main

TEXT = "the cat sat on the mat because it was tired"

pytest.importorskip("matplotlib")


def test_attention_data_matches_the_forward_pass(tiny_model_dir):
    from minibert.viz.attention_data import compute_attention, load_model_and_tokenizer
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    result = compute_attention(model, tok, TEXT)
    tokens, expected = reference_attentions(tiny_model_dir, TEXT)
    assert result.tokens == tokens == ["[CLS]"] + TEXT.split() + ["[SEP]"]
    assert result.attentions.shape == (2, 2, 12, 12)
    np.testing.assert_allclose(result.attentions, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(result.attentions.sum(-1), 1.0, atol=1e-5)  # each query's weights sum to 1


def test_one_head_png(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "head.png"
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--layer", "1", "--head", "0",
                 "--out", str(out)]) == 0
    assert_png_has_content(out, min_width=400, min_height=400)
    printed = capsys.readouterr().out
    # The terminal summary names, for "it", the token it attends to most in that head.
    tokens, expected = reference_attentions(tiny_model_dir, TEXT)
    it = tokens.index("it")
    best = int(expected[1, 0, it].argmax())
    label = tokens[best] if tokens.count(tokens[best]) == 1 else f"{tokens[best]} {best}"
    assert f"it -> {label} {expected[1, 0, it, best]:.2f}" in printed


def test_grid_png_is_larger_than_one_head(tiny_model_dir, tmp_path):
    grid, one = tmp_path / "grid.png", tmp_path / "one.png"
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--out", str(grid)]) == 0
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--layer", "0", "--head", "1",
                 "--out", str(one)]) == 0
    g = assert_png_has_content(grid)
    o = assert_png_has_content(one)
    assert g.shape != o.shape  # a 2 x 2 grid, not the single heatmap


def test_layer_and_head_out_of_range(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "x.png"
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--layer", "2", "--out", str(out)]) == 2
    assert "--layer 2 is out of range: the model has 2 layers, numbered 0..1" in capsys.readouterr().err
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--head", "-1", "--out", str(out)]) == 2
    assert "--head -1 is out of range" in capsys.readouterr().err
    assert not out.exists()


def test_long_text_is_truncated_and_said_so(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "long.png"
    long_text = " ".join(["the cat sat on the mat"] * 10)  # 60 words, the model reads 24 positions
    assert main(["attention", "--model", str(tiny_model_dir), long_text, "--layer", "0", "--head", "0",
                 "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"the text has 62 tokens but the model reads at most {MAX_POSITIONS}" in err
    assert_png_has_content(out)


def test_bad_inputs(tiny_model_dir, tmp_path, capsys):
    assert main(["attention", "--model", str(tmp_path / "nope"), TEXT]) == 2
    assert "no such run or model folder" in capsys.readouterr().err
    assert main(["attention", "--model", str(tiny_model_dir), "   ", "--out", str(tmp_path / "a.png")]) == 2
    assert "the text is empty" in capsys.readouterr().err
    assert main(["attention", "--model", str(tiny_model_dir), TEXT, "--out", str(tmp_path / "a.jpg")]) == 2
    assert "expected a .png" in capsys.readouterr().err


def test_a_pretraining_run_folder_is_a_model(tiny_model_dir, tmp_path, capsys):
    """--model RUN_DIR uses the run's latest checkpoint, as the other commands do."""
    import shutil
    checkpoint = tmp_path / "run" / "checkpoints" / "step-000010"
    shutil.copytree(tiny_model_dir, checkpoint)
    (tmp_path / "run" / "checkpoints" / "latest").write_text("step-000010\n")
    out = tmp_path / "page.html"
    assert main(["attention", "--model", str(tmp_path / "run"), TEXT, "--html", str(out)]) == 0
    assert out.exists() and "12 tokens: [CLS] the cat" in capsys.readouterr().out
