"""`minibert distill` end to end on a tiny teacher: the student learns to match it (held-out distillation loss
falls), checkpoints are Hugging Face DistilBERT folders, a stopped run resumes bit for bit, a teacher without an
MLM head is distilled by its hidden states, and wrong options fail with one clear line."""

import json

import numpy as np
import pytest

from minibert import BertForMaskedLM, BertModel
from minibert.cli import main
from minibert.io.safetensors_io import load_safetensors
from minibert.training.metrics import read_metrics
from pretrain_helpers import ANIMALS, COLORS, FOODS, PLACES, interrupt_in_step, synthetic_documents, write_corpus
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "eats", "lives", "in", "every", "is", "a", "likes",
         "and"] + ANIMALS + COLORS + FOODS + PLACES
TIMING = ("tokens_per_s", "elapsed")


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "animals.txt", synthetic_documents(60))
    make_tiny_checkpoint(tmp_path / "mlm-teacher", VOCAB, cls=BertForMaskedLM, num_hidden_layers=3)
    make_tiny_checkpoint(tmp_path / "bare-teacher", VOCAB, cls=BertModel, num_hidden_layers=3)
    (tmp_path / "bare-teacher" / "sentence_bert_config.json").write_text('{"max_seq_length": 12}')
    return tmp_path, corpus


def args(tmp_path, corpus, teacher, name, *extra):
    return ["distill", "--teacher", str(tmp_path / teacher), "--corpus", str(corpus), "--runs-dir",
            str(tmp_path / "runs"), "--name", name, "--seq-len", "16", "--batch-size", "8", "--eval-examples", "16",
            "--eval-fraction", "0.1", "--quiet", "--no-plot", "--log-every", "2", *extra]


def comparable(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def test_mlm_distillation_learns_saves_distilbert_and_resumes_exactly(setup, monkeypatch, capsys):
    tmp_path, corpus = setup
    options = ["--steps", "10", "--lr", "3e-3", "--student-layers", "2", "--dropout", "0.1", "--eval-every", "5",
               "--save-every", "4", "--keep-checkpoints", "0"]
    assert main(args(tmp_path, corpus, "mlm-teacher", "straight", *options)) == 0
    assert "held-out" in capsys.readouterr().out
    run = tmp_path / "runs" / "straight"
    settings = json.loads((run / "settings.json").read_text())
    assert settings["mode"] == "mlm" and settings["teacher_layers"] == [0, 2]  # defaults resolved and saved
    assert settings["alpha_ce"] == 5.0 and settings["tokenizer"] == str(tmp_path / "mlm-teacher")
    evals = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "eval"]
    assert [r["step"] for r in evals] == [0, 5, 10]
    assert {"kd_loss", "cos_loss", "mlm_loss"} <= set(evals[0])
    assert evals[-1]["loss"] < evals[0]["loss"] * 0.8, (evals[0], evals[-1])  # the student moves to its teacher
    config = json.loads((run / "checkpoints" / "step-000010" / "config.json").read_text())
    assert config["model_type"] == "distilbert" and config["n_layers"] == 2
    assert config["architectures"] == ["DistilBertForMaskedLM"]

    restore_clip = interrupt_in_step(monkeypatch, 7)
    assert main(args(tmp_path, corpus, "mlm-teacher", "crashed", *options)) != 0  # interrupted in step 7
    assert "minibert distill --resume" in capsys.readouterr().out
    restore_clip()
    crashed = tmp_path / "runs" / "crashed"
    assert main(["distill", "--resume", str(crashed), "--quiet"]) == 0
    a, b = read_metrics(run / "metrics.jsonl"), read_metrics(crashed / "metrics.jsonl")
    assert len(a) == len(b) and comparable(a) == comparable(b)  # every loss, bit for bit
    for name in ("model.safetensors", "training_state/optimizer.safetensors"):
        wa = load_safetensors(run / "checkpoints" / "step-000010" / name)
        wb = load_safetensors(crashed / "checkpoints" / "step-000010" / name)
        assert all(np.array_equal(wa[k], wb[k]) for k in wa)


def test_a_teacher_without_mlm_head_is_distilled_by_hidden_states(setup):
    tmp_path, corpus = setup
    assert main(args(tmp_path, corpus, "bare-teacher", "hidden", "--steps", "6", "--lr", "3e-3",
                     "--teacher-layers", "1", "--eval-every", "6")) == 0
    run = tmp_path / "runs" / "hidden"
    assert json.loads((run / "settings.json").read_text())["mode"] == "hidden"
    evals = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "eval"]
    assert "masked_tokens" not in evals[0] and "mlm_acc" not in evals[0] and "kd_loss" not in evals[0]  # no MLM
    assert evals[-1]["pool_loss"] < evals[0]["pool_loss"] and evals[-1]["cos_loss"] < evals[0]["cos_loss"]
    config = json.loads((run / "checkpoints" / "step-000006" / "config.json").read_text())
    assert config["architectures"] == ["DistilBertModel"] and config["n_layers"] == 1
    from minibert.embeddings import SentenceEncoder
    student = SentenceEncoder.from_pretrained(run)  # a run folder: its latest checkpoint
    teacher = SentenceEncoder.from_pretrained(tmp_path / "bare-teacher")
    texts = ["the red fox eats fish .", "every owl is grey ."]
    assert student.encode(texts).shape == teacher.encode(texts).shape == (2, 128)
    assert student.max_length == teacher.max_length == 12  # the teacher's sentence_bert_config.json came along


@pytest.mark.parametrize("extra,message", [
    (["--config", "tiny"], "--config is a pre-training option: a student's size and tokenizer come from its --teacher"),
    (["--objective", "mlm"], "--objective is a pre-training option: a student learns by matching its --teacher"),
    (["--no-examples"], "--no-examples is a pre-training option: a distillation prints no fill-mask examples"),
    (["--mode", "mlm"], "mode (--mode) mlm needs a teacher with an MLM head"),
    (["--alpha-ce", "1"], "--alpha-ce and --alpha-mlm need a teacher with an MLM head"),
    (["--student-layers", "5"], "--student-layers must be in 1..3"),
    (["--teacher-layers", "0,x"], "--teacher-layers expects comma-separated layer numbers"),
])
def test_bad_options_fail_with_one_line(setup, capsys, extra, message):
    tmp_path, corpus = setup
    assert main(args(tmp_path, corpus, "bare-teacher", "bad", "--steps", "2", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "runs" / "bad").exists()  # refused before any work


def test_help_lists_the_distillation_options_and_hides_pretraining_ones(capsys):
    with pytest.raises(SystemExit) as e:
        main(["distill", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for option in ("--teacher", "--student-layers", "--teacher-layers", "--temperature", "--alpha-ce", "--alpha-pool",
                   "--corpus", "--minutes", "--resume", "[0.0001]"):  # the distillation's own lr default
        assert option in text
    for option in ("--config", "--objective", "--tokenizer", "--output-bias"):
        assert option not in text
