"""What a distillation reports: a hidden-state distillation (a teacher without MLM head) has no masked-LM, so its
start-up line, metrics.jsonl, summary.json, training.png and `minibert plot` show its own losses and no MLM
loss, perplexity, accuracy or most-frequent-token baseline; an MLM distillation keeps reporting its MLM numbers.
`minibert distill --resume` of a finished run says so in one line and leaves the run's files as they are."""

import contextlib
import io
import json

import pytest

from minibert import BertForMaskedLM, BertModel
from minibert.cli import main
from minibert.training.metrics import read_metrics
from minibert.viz.curves import read_metrics as read_curves
from minibert.viz.curves import second_panel
from pretrain_helpers import ANIMALS, COLORS, FOODS, PLACES, synthetic_documents, write_corpus
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "eats", "lives", "in", "every", "is", "a", "likes",
         "and"] + ANIMALS + COLORS + FOODS + PLACES
MLM_FIELDS = {"mlm_loss", "ppl", "mlm_acc", "masked_tokens"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One short hidden-state and one short MLM distillation (shared by the tests: they only read them)."""
    tmp_path = tmp_path_factory.mktemp("distill-reporting")
    mp = pytest.MonkeyPatch()
    mp.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "animals.txt", synthetic_documents(60))
    make_tiny_checkpoint(tmp_path / "mlm-teacher", VOCAB, cls=BertForMaskedLM, num_hidden_layers=2)
    make_tiny_checkpoint(tmp_path / "bare-teacher", VOCAB, cls=BertModel, num_hidden_layers=2)
    printed = {}
    for teacher, name in (("bare-teacher", "hidden"), ("mlm-teacher", "mlm")):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["distill", "--teacher", str(tmp_path / teacher), "--corpus", str(corpus), "--runs-dir",
                         str(tmp_path / "runs"), "--name", name, "--seq-len", "16", "--batch-size", "8",
                         "--eval-examples", "16", "--eval-fraction", "0.1", "--quiet", "--no-plot", "--log-every",
                         "2", "--steps", "4", "--eval-every", "2", "--student-layers", "1", "--procs", "1"])
        assert code == 0, out.getvalue()
        printed[name] = out.getvalue()
    yield tmp_path / "runs", printed
    mp.undo()


def test_hidden_distillation_logs_and_summarises_no_mlm_numbers(runs):
    folder, printed = runs
    run = folder / "hidden"
    records = read_metrics(run / "metrics.jsonl")
    assert {r["split"] for r in records} == {"train", "eval"}
    for r in records:
        assert not MLM_FIELDS & set(r), r  # no loss 0, perplexity 1, accuracy 0 for an MLM that is not there
        assert {"loss", "cos_loss", "pool_loss"} <= set(r)
    summary = json.loads((run / "summary.json").read_text())
    assert not MLM_FIELDS & set(summary["eval"]) and {"cos_loss", "pool_loss"} <= set(summary["eval"])
    assert "baseline_token" not in summary and "baseline_acc" not in summary
    model_line = next(line for line in printed["hidden"].splitlines() if line.startswith("model:"))
    assert "objective mlm" not in model_line and "cos_loss" in model_line and "pool_loss" in model_line
    assert "masked-token accuracy" not in printed["hidden"]


def test_mlm_distillation_keeps_its_mlm_numbers(runs):
    folder, printed = runs
    run = folder / "mlm"
    evals = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "eval"]
    assert all(MLM_FIELDS <= set(r) and r["masked_tokens"] > 0 and r["ppl"] > 1 for r in evals)
    assert all({"kd_loss", "cos_loss"} <= set(r) for r in evals)
    trains = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "train"]
    assert trains and all({"mlm_loss", "mlm_acc", "kd_loss"} <= set(r) for r in trains)
    summary = json.loads((run / "summary.json").read_text())
    assert MLM_FIELDS <= set(summary["eval"]) and "baseline_acc" in summary and "baseline_token" in summary
    model_line = next(line for line in printed["mlm"].splitlines() if line.startswith("model:"))
    assert "objective mlm" in model_line and "kd_loss" in model_line
    assert "masked-token accuracy" in printed["mlm"]


def test_plot_shows_the_losses_a_hidden_distillation_has(runs, capsys):
    folder, _ = runs
    title, keys = second_panel(read_curves(folder / "hidden"))
    assert title == "losses" and keys == ["cos_loss", "pool_loss"]
    title, keys = second_panel(read_curves(folder / "mlm"))
    assert title == "accuracy" and "mlm_acc" in keys
    pytest.importorskip("matplotlib")
    out = folder.parent / "hidden.png"
    assert main(["plot", str(folder / "hidden"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mlm_acc" not in text and "held-out cos_loss: best" in text and "held-out pool_loss: best" in text
    assert out.stat().st_size > 0


def _snapshot(folder):
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_resume_of_a_finished_distillation_says_so_and_touches_nothing(runs, capsys):
    folder, _ = runs
    run = folder / "hidden"
    before = _snapshot(run)
    assert main(["distill", "--resume", str(run), "--quiet"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "already finished its 4 steps" in out[0] and "nothing to resume" in out[0]
    assert _snapshot(run) == before
