"""`minibert pretrain` from the command line: a whole (tiny) run, the time budget, and --help."""

import json

import pytest

from minibert.cli import main
from pretrain_helpers import synthetic_documents, write_corpus


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "animals.txt", synthetic_documents(80))


def test_a_tiny_run_prints_held_out_numbers_and_fill_mask_examples(tmp_path, corpus, capsys):
    code = main(["pretrain", "--corpus", str(corpus), "--config", "tiny", "--vocab-size", "200", "--seq-len", "32",
                 "--batch-size", "8", "--steps", "6", "--objective", "mlm+nsp", "--runs-dir", str(tmp_path / "runs"),
                 "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "masked-token accuracy" in out and "perplexity" in out and "next-sentence accuracy" in out
    assert "fill-mask:" in out and "paris is the capital of [MASK]." in out
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("tiny-animals-")
    assert (run / "training.png").exists() or "no training.png" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 6 and "nsp_acc" in summary["eval"]


def test_minutes_budget_measures_step_time_and_plans_the_steps(tmp_path, corpus, capsys):
    code = main(["pretrain", "--corpus", str(corpus), "--config", "tiny", "--vocab-size", "200", "--seq-len", "32",
                 "--batch-size", "8", "--minutes", "0.04", "--runs-dir", str(tmp_path / "runs"), "--name", "budget",
                 "--quiet", "--no-plot", "--no-examples"])
    assert code == 0
    out = capsys.readouterr().out
    checkpoints = tmp_path / "runs" / "budget" / "checkpoints"
    latest = checkpoints / (checkpoints / "latest").read_text().strip()
    state = json.loads((latest / "training_state" / "state.json").read_text())
    plan = state["plan"]
    assert plan["total_steps"] >= 1 and plan["peak_lr"] == 1e-3
    assert "s per step measured" in out


def test_help_explains_the_main_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["pretrain", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--corpus", "--minutes", "--steps", "--resume", "--objective", "--whole-word-mask",
                   "--grad-accum", "--config", "--tokenizer"):
        assert option in text


def test_a_bad_minibert_numba_is_one_line_before_any_work(tmp_path, corpus, capsys, monkeypatch):
    monkeypatch.setenv("MINIBERT_NUMBA", "fast")
    code = main(["pretrain", "--corpus", str(corpus), "--config", "tiny", "--steps", "2",
                 "--runs-dir", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == ("minibert pretrain: error: MINIBERT_NUMBA='fast': expected 0 (NumPy GELU), 1 (numba's "
                           "GELU; an error if numba is missing) or auto (numba's if installed)")
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cache").exists()  # nothing was started


@pytest.mark.parametrize("setting", ["0", "1", "auto"])
def test_the_run_says_when_numba_computes_gelu(tmp_path, corpus, capsys, monkeypatch, setting):
    # auto: pre-training keeps NumPy's GELU (numba buys it little for much memory); =1 asks for numba's
    from minibert.layers import gelu_select
    if setting == "1":
        pytest.importorskip("numba")
    monkeypatch.setenv("MINIBERT_NUMBA", setting)
    previous = gelu_select.use_numba_gelu(None)  # decided again, from MINIBERT_NUMBA
    try:
        code = main(["pretrain", "--corpus", str(corpus), "--config", "tiny", "--vocab-size", "200", "--seq-len",
                     "32", "--batch-size", "8", "--steps", "2", "--runs-dir", str(tmp_path / "runs"), "--quiet",
                     "--no-plot", "--no-examples"])
        after = gelu_select.use_numba_gelu(previous)
    finally:
        gelu_select.use_numba_gelu(previous)
    assert code == 0
    said = "exact GELU compiled by numba" in capsys.readouterr().out
    assert said == (setting == "1")
    assert after is (None if setting == "auto" else setting == "1")  # auto: the choice put back after the run


def test_the_end_lines_count_one_step_and_one_sequence_in_the_singular(capsys):
    from minibert.commands.distill import _print_summary as distill_summary
    from minibert.commands.pretrain import _print_summary, done_line
    times = {"wall_seconds": 3.0, "prepare_seconds": 1.0, "train_seconds": 2.0, "tokens_per_s": 100.0}
    assert done_line({"steps": 1, **times}).startswith("done: 1 step in 3s (")
    assert done_line({"steps": 2, **times}).startswith("done: 2 steps in 3s (")
    resumed = {"steps": 2, **times, "session": {"steps": 1, "resumed_at_step": 1, "train_seconds": 1.0,
                                                 "tokens_per_s": 50.0}}
    assert done_line(resumed).startswith("done: 2 steps; this session: 1 step (resumed at step 1)")
    summary = {"steps": 1, **times, "eval_sequences": 1, "baseline_token": "the", "baseline_acc": 0.1,
               "eval": {"masked_tokens": 1, "mlm_acc": 0.5, "ppl": 9.0, "mlm_loss": 2.2, "loss": 2.2},
               "checkpoint": "ckpt", "run": "run"}
    _print_summary(summary, show_examples=False)
    assert "held-out (1 sequence, 1 masked token):" in capsys.readouterr().out
    distill_summary(summary)
    assert "held-out (1 sequence): loss 2.2000" in capsys.readouterr().out
