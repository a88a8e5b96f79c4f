"""Runs without an accuracy to plot (a hidden-state distillation) show their separate losses instead, and the
metrics.jsonl such runs wrote before their logs left the MLM numbers out (masked_tokens 0, mlm_loss 0, ppl 1,
mlm_acc 0 on every line) are read without those meaningless numbers."""

from __future__ import annotations

import json

import pytest
from viz_helpers import assert_png_has_content

from minibert.cli import main
from minibert.viz.curves import part_losses, read_metrics, second_panel, summary


def _write(folder, records):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _old_hidden_distillation(folder):
    """What `minibert distill` 0.1.0 wrote for a teacher without MLM head until November 2026: zero MLM numbers,
    which the plot and summary must leave out."""
    records = []
    for step in (0, 2, 4):
        cos, pool = 0.6 - step / 20, 0.7 - step / 10
        if step:
            records.append({"step": step, "split": "train", "loss": cos + pool + 0.01, "mlm_loss": 0.0, "mlm_acc": 0.0,
                            "cos_loss": cos + 0.005, "pool_loss": pool + 0.005, "lr": 1e-4, "tokens_per_s": 900.0})
        records.append({"step": step, "split": "eval", "mlm_loss": 0.0, "ppl": 1.0, "mlm_acc": 0.0, "masked_tokens": 0,
                        "loss": cos + pool, "cos_loss": cos, "pool_loss": pool})
    return _write(folder, records)


def test_an_old_hidden_distillation_file_loses_its_mlm_numbers(tmp_path):
    m = read_metrics(_old_hidden_distillation(tmp_path / "old"))
    for r in m.train + m.held_out:
        assert not {"mlm_loss", "ppl", "mlm_acc", "masked_tokens"} & set(r)
    assert second_panel(m) == ("losses", ["cos_loss", "pool_loss"])
    text = summary(m)
    assert "mlm_acc" not in text
    assert "held-out pool_loss: best 0.3000 at step 4" in text  # a loss: its best is its lowest


def test_pretraining_keeps_its_accuracy_panel_and_no_duplicate_loss_line(tmp_path):
    records = []
    for step in (10, 20):
        records.append({"step": step, "split": "train", "loss": 5.0 - step / 10, "mlm_loss": 5.0 - step / 10,
                        "mlm_acc": step / 100, "lr": 1e-3, "tokens_per_s": 1e4})
        records.append({"step": step, "split": "eval", "loss": 5.5 - step / 10, "mlm_loss": 5.5 - step / 10,
                        "ppl": 100.0, "mlm_acc": step / 120, "masked_tokens": 300})
    m = read_metrics(_write(tmp_path / "mlm", records))
    assert m.held_out[0]["masked_tokens"] == 300  # a run with MLM keeps every number
    assert second_panel(m) == ("accuracy", ["mlm_acc"])
    assert part_losses(m) == []  # mlm_loss is the loss itself: said once
    assert "held-out mlm_acc: best" in summary(m) and "held-out mlm_loss" not in summary(m)


def test_with_nsp_the_parts_are_listed_beside_the_accuracies(tmp_path):
    records = [{"step": s, "split": "eval", "loss": 7.0 - s / 10, "mlm_loss": 6.3 - s / 10, "nsp_loss": 0.7,
                "mlm_acc": s / 100, "nsp_acc": 0.5, "ppl": 500.0, "masked_tokens": 100} for s in (5, 10)]
    m = read_metrics(_write(tmp_path / "nsp", records))
    assert second_panel(m) == ("accuracy", ["mlm_acc", "nsp_acc"])
    assert part_losses(m) == ["mlm_loss", "nsp_loss"]
    assert "held-out nsp_loss: best 0.7000" in summary(m)


def test_plot_command_draws_the_losses_of_an_old_hidden_distillation(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    run = _old_hidden_distillation(tmp_path / "old")
    assert main(["plot", str(run)]) == 0
    assert_png_has_content(run / "training.png", min_width=800, min_height=600)
    out = capsys.readouterr().out
    assert "mlm_acc" not in out and "held-out cos_loss" in out
