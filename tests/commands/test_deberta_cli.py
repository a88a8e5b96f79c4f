"""The commands on a DeBERTa (--config deberta-mini): a two-step pre-training run, then fill-mask, embed, attention,
finetune and params on what it wrote. Tiny settings: what is checked is that each command runs the DeBERTa
classes end to end, not how well they learn."""

import json

import pytest

from minibert.cli import main
from pretrain_helpers import synthetic_documents, write_corpus


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("deberta")
    corpus = write_corpus(tmp / "animals.txt", synthetic_documents(60))
    mp = pytest.MonkeyPatch()
    mp.setenv("MINIBERT_CACHE", str(tmp / "cache"))
    try:
        code = main(["pretrain", "--corpus", str(corpus), "--config", "deberta-mini", "--vocab-size", "150",
                     "--seq-len", "32", "--batch-size", "8", "--steps", "2", "--procs", "1", "--runs-dir",
                     str(tmp / "runs"), "--name", "deb", "--quiet", "--no-plot"])
    finally:
        mp.undo()
    assert code == 0
    return tmp / "runs" / "deb"


def test_pretrain_writes_a_deberta_masked_lm(run, capsys):
    checkpoints = run / "checkpoints"
    latest = checkpoints / (checkpoints / "latest").read_text().strip()
    config = json.loads((latest / "config.json").read_text())
    assert config["model_type"] == "deberta-v2" and config["architectures"] == ["DebertaV2ForMaskedLM"]
    assert config["position_buckets"] == 32 and config["position_biased_input"] is False
    assert json.loads((run / "summary.json").read_text())["steps"] == 2


def test_fill_mask_embed_and_attention(run, tmp_path, capsys):
    assert main(["fill-mask", "--model", str(run), "the [MASK] eats fish ."]) == 0
    assert "%" in capsys.readouterr().out  # ranked guesses with their probabilities
    assert main(["embed", "--model", str(run), "the fox eats fish .", "a cat", "--decimals", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dimension"] == 192 and len(out["embeddings"]) == 2
    assert main(["attention", "--model", str(run), "--html", str(tmp_path / "a.html"), "the fox eats fish ."]) == 0
    assert "3 layers x 4 heads" in capsys.readouterr().out and (tmp_path / "a.html").stat().st_size > 1000


def test_finetune_puts_the_gelu_pooler_classifier_on_the_body(run, tmp_path, capsys):
    rows = ["text,label"] + [f"the {a} eats fish .,{'pet' if a in ('cat', 'dog') else 'wild'}"
                             for a in ("fox", "cat", "dog", "owl", "bear", "wolf") * 4]
    (tmp_path / "train.csv").write_text("\n".join(rows) + "\n")
    assert main(["finetune", "--train", str(tmp_path / "train.csv"), "--model", str(run), "--epochs", "1",
                 "--batch-size", "8", "--max-length", "16", "--procs", "1", "--out", str(tmp_path / "ft"),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "pooler.dense.weight" in out  # the new head: DeBERTa's ContextPooler and the classifier
    config = json.loads((tmp_path / "ft" / "config.json").read_text())
    assert config["architectures"] == ["DebertaV2ForSequenceClassification"]


def test_params_shows_the_relative_position_table(capsys):
    assert main(["params", "--config", "deberta-mini"]) == 0
    out = capsys.readouterr().out
    assert "Parameters of DebertaV2ForMaskedLM" in out
    assert "relative positions (shared by all layers)" in out and "rel_embeddings" in out
    assert "position_embeddings" not in out and "NSP head" not in out
    assert main(["params", "--config", "deberta-mini", "--model-class", "DebertaV2ForSequenceClassification"]) == 0
    assert "pooler (dense + gelu on [CLS])" in capsys.readouterr().out


def test_pair_objectives_are_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "animals.txt", synthetic_documents(20))
    code = main(["pretrain", "--corpus", str(corpus), "--config", "deberta-mini", "--objective", "mlm+nsp",
                 "--vocab-size", "150", "--seq-len", "32", "--steps", "1", "--procs", "1",
                 "--runs-dir", str(tmp_path / "runs"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "objective (--objective) mlm only" in err[0]
    assert not (tmp_path / "cache").exists()  # refused before the corpus was read
