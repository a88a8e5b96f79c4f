"""`minibert plot RUN_DIR`: training curves from metrics.jsonl, tolerant of missing keys, clear about missing
files."""

from __future__ import annotations

import json
import math
import sys

import pytest
from viz_helpers import assert_png_has_content

from minibert.cli import main
from minibert.viz.curves import read_metrics, summary


def write_run(folder, n_steps=60, eval_every=20, broken_last_line=True):
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for step in range(1, n_steps + 1):
        lines.append({"step": step, "split": "train", "loss": 8.0 * math.exp(-step / 30) + 2.0,
                      "lr": 1e-3 * min(1.0, step / 10), "tokens_per_s": 40000 + 100 * (step % 7), "elapsed": step})
        if step % eval_every == 0:
            lines.append({"step": step, "split": "eval", "loss": 8.0 * math.exp(-step / 30) + 2.3,
                          "mlm_acc": step / 200, "nsp_acc": 0.5 + step / 1000, "ppl": 10.0})
    text = "\n".join(json.dumps(r) for r in lines) + "\n"
    if broken_last_line:
        text += '{"step": 61, "split": "tr'  # a run killed while writing
    (folder / "metrics.jsonl").write_text(text)
    return folder


def test_read_metrics_splits_and_skips(tmp_path):
    run = write_run(tmp_path / "run")
    m = read_metrics(run)
    assert len(m.train) == 60 and len(m.held_out) == 3
    assert m.skipped_lines == [64]  # 60 train + 3 eval lines, then the cut-off one
    steps, acc = m.series("eval", "mlm_acc")
    assert steps == [20, 40, 60] and acc == pytest.approx([0.1, 0.2, 0.3])
    text = summary(m)
    assert "held-out mlm_acc: best 0.3000 at step 60" in text
    assert "skipped 1 line(s)" in text


def test_plot_command_writes_training_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    run = write_run(tmp_path / "run")
    assert main(["plot", str(run)]) == 0
    assert_png_has_content(run / "training.png", min_width=800, min_height=600)
    assert f"wrote {run / 'training.png'}" in capsys.readouterr().out


def test_missing_keys_and_other_names_are_tolerated(tmp_path):
    """Only some keys, other spellings (learning_rate, tokens_per_sec), no split, no step: still a picture."""
    pytest.importorskip("matplotlib")
    run = tmp_path / "sparse"
    run.mkdir()
    rows = [{"loss": 5.0 - i * 0.1, "learning_rate": 1e-4} for i in range(10)] + \
           [{"split": "validation", "step": 9, "accuracy": 0.7}]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    m = read_metrics(run)
    assert [r["step"] for r in m.train] == list(range(10))  # numbered when no step is logged
    assert m.series("train", "lr")[1] == [1e-4] * 10
    assert m.series("eval", "accuracy") == ([9], [0.7])
    out = tmp_path / "curves.png"
    assert main(["plot", str(run), "--out", str(out)]) == 0
    assert_png_has_content(out)


def test_clear_messages_for_missing_metrics(tmp_path, capsys):
    assert main(["plot", str(tmp_path / "no_such_run")]) == 2
    assert "no such run folder" in capsys.readouterr().err
    empty_run = tmp_path / "empty_run"
    empty_run.mkdir()
    assert main(["plot", str(empty_run)]) == 2
    assert "no metrics.jsonl in this folder" in capsys.readouterr().err
    (empty_run / "metrics.jsonl").write_text("\n")
    assert main(["plot", str(empty_run)]) == 2
    assert "no metric records" in capsys.readouterr().err
    assert not (empty_run / "training.png").exists()


def test_without_matplotlib_the_message_says_what_to_install(tmp_path, monkeypatch, capsys):
    run = write_run(tmp_path / "run")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes "import matplotlib" fail
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    assert main(["plot", str(run)]) == 2
    assert "pip install 'minibert[plot]'" in capsys.readouterr().err
    assert not (run / "training.png").exists()
