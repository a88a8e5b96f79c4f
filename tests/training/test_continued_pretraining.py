"""Continued pre-training (`--init`): a run that starts from another run's model or a Hugging Face folder keeps
that model's weights, config and vocabulary (no tokenizer is trained), resumes like any run, and refuses in one
line a missing folder, a model without a masked-LM head, and options the model decides."""

import json
from pathlib import Path

import numpy as np
import pytest

import minibert.training.pretrain as pretrain_module
from minibert.cli import main
from minibert.io.safetensors_io import load_safetensors
from minibert.models import BertForMaskedLM, BertModel
from minibert.training.pretrain import pretrain
from minibert.training.settings import PretrainSettings
from pretrain_helpers import interrupt_in_step, synthetic_documents, tiny_settings, write_corpus
from tiny_checkpoint import make_tiny_checkpoint

QUIET = dict(log=lambda *a: None)
D = PretrainSettings()


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "c.txt", synthetic_documents(80))


def continued(corpus, runs, init, **overrides):
    """tiny_settings, less what the init model decides (its config and vocabulary)."""
    return tiny_settings(corpus, runs, **{"config": D.config, "vocab_size": D.vocab_size, "init": str(init),
                                          **overrides})


def read_metrics(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_a_continued_run_starts_from_the_model_its_vocabulary_and_its_loss(tmp_path, corpus, monkeypatch):
    first = Path(pretrain(tiny_settings(corpus, tmp_path / "runs", name="first"), **QUIET)["run"])
    last = first / "checkpoints" / "step-000030"

    start = {}
    real_set_up = pretrain_module._set_up

    def set_up_and_copy(*args, **kwargs):
        run = real_set_up(*args, **kwargs)
        start.update({k: np.array(v) for k, v in run.model.params.items()})
        return run
    monkeypatch.setattr(pretrain_module, "_set_up", set_up_and_copy)
    second = Path(pretrain(continued(corpus, tmp_path / "runs", first, name="second", steps=6), **QUIET)["run"])

    saved = load_safetensors(last / "model.safetensors")  # step 0 of the second run: the first run's weights
    assert set(saved) <= set(start)
    for name, value in saved.items():
        assert np.array_equal(start[name], value), name
    assert (second / "checkpoints" / "step-000006" / "vocab.txt").read_bytes() == (last / "vocab.txt").read_bytes()
    # the held-out loss starts where the first run ended (same text, same held-out masks, same weights)
    ended = [r for r in read_metrics(first / "metrics.jsonl") if r["split"] == "eval"][-1]
    began = read_metrics(second / "metrics.jsonl")[0]
    assert began["step"] == 0 and began["mlm_loss"] == pytest.approx(ended["mlm_loss"], rel=1e-6)
    settings = json.loads((second / "settings.json").read_text())
    assert settings["init"] == str(first) and not list((tmp_path / "cache" / "tokenizers").glob("*-8192-*"))


def test_a_continued_run_resumes_exactly(tmp_path, corpus, monkeypatch):
    first = Path(pretrain(tiny_settings(corpus, tmp_path / "runs", name="first", steps=4), **QUIET)["run"])
    options = dict(steps=8, save_every=3, keep_checkpoints=0, eval_every=4)
    pretrain(continued(corpus, tmp_path / "runs", first, name="straight", **options), **QUIET)
    restore_clip = interrupt_in_step(monkeypatch, 5)
    with pytest.raises(KeyboardInterrupt):
        pretrain(continued(corpus, tmp_path / "runs", first, name="crashed", **options), **QUIET)
    restore_clip()
    crashed = tmp_path / "runs" / "crashed"
    assert main(["pretrain", "--resume", str(crashed), "--quiet", "--no-examples"]) == 0
    timing = ("elapsed", "tokens_per_s")
    strip = lambda records: [{k: v for k, v in r.items() if k not in timing} for r in records]  # noqa: E731
    assert strip(read_metrics(tmp_path / "runs" / "straight" / "metrics.jsonl")) == strip(
        read_metrics(crashed / "metrics.jsonl"))


def test_a_hugging_face_masked_lm_folder_may_start_a_run(tmp_path, corpus):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "fox", "cat", "dog", "eats", "lives", "in",
             "red", "is", "a", "every", "and"]
    folder = make_tiny_checkpoint(tmp_path / "hf", vocab, cls=BertForMaskedLM)
    notes = []
    summary = pretrain(continued(corpus, tmp_path / "runs", folder, name="hf", steps=2, eval_examples=8,
                                 seq_len=16),
                       log=notes.append)
    assert summary["steps"] == 2
    assert any(line.startswith("note:") and "newly initialised" in line for line in notes)  # (its missing NSP head)
    vocab_after = (Path(summary["checkpoint"]) / "vocab.txt").read_text().split()
    assert vocab_after == vocab


def test_errors_are_one_line(tmp_path, corpus, capsys):
    def error_of(*options):
        assert main(["pretrain", "--corpus", str(corpus), "--quiet", "--runs-dir", str(tmp_path / "runs"),
                     *options]) != 0
        message = capsys.readouterr().err.strip()
        assert "\n" not in message
        return message

    assert "no such run or model folder" in error_of("--init", str(tmp_path / "missing"))
    headless = make_tiny_checkpoint(tmp_path / "headless", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
                                    cls=BertModel)
    assert "has no masked-LM head" in error_of("--init", str(headless))
    model = make_tiny_checkpoint(tmp_path / "mlm", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"],
                                 cls=BertForMaskedLM)
    for option in (["--config", "mini"], ["--vocab-size", "100"], ["--tokenizer", str(model)]):
        assert f"({option[0]}) conflicts with init (--init)" in error_of("--init", str(model), *option)
    assert "objective (--objective) electra" in error_of("--init", str(model), "--objective", "electra")
    with pytest.raises(ValueError, match=r"config \(--config\) conflicts with init \(--init\)"):
        pretrain(continued(corpus, tmp_path / "runs", model, config="tiny"), **QUIET)
