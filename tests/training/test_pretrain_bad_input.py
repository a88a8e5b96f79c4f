"""Bad input gets one clear message before long work, and a failing run loses nothing."""

import pytest

from minibert.cli import main
from minibert.models import BertForPreTraining
from minibert.training.pretrain import pretrain
from minibert.training.run_dir import latest_checkpoint
from pretrain_helpers import interrupt_in_step, synthetic_documents, tiny_settings, write_corpus


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "c.txt", synthetic_documents(60))


def test_empty_and_too_small_corpora(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="has no text"):
        pretrain(tiny_settings(empty, tmp_path / "runs"), log=lambda *a: None)
    small = write_corpus(tmp_path / "small.txt", [["A tiny corpus."], ["Of two documents."]])
    assert main(["pretrain", "--corpus", str(small), "--quiet", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minibert pretrain: error: corpus") and "too small" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # refused before a run folder was made


def test_bad_settings_are_refused_before_any_work(tmp_path, capsys):
    for args, message in ((["--seq-len", "100", "--config", "tiny"], "max_position_embeddings"),
                          (["--config", "huge"], "config (--config) must be one of"),
                          (["--batch-size", "0"], "batch_size (--batch-size) must be a positive integer"),
                          (["--warmup", "1.5"], "--warmup")):
        code = main(["pretrain", "--corpus", str(tmp_path / "missing.txt"), *args, "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_resume_refuses_changed_settings_and_a_mismatched_vocabulary(tmp_path, corpus, capsys, monkeypatch):
    # stopped in step 3, so there is something to resume (a finished run has nothing: test_resume_reporting.py)
    restore_clip = interrupt_in_step(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_settings(corpus, tmp_path / "runs", steps=4, save_every=2, keep_checkpoints=0),
                 log=lambda *a: None)
    restore_clip()
    run = tmp_path / "runs" / "run"
    assert main(["pretrain", "--resume", str(run), "--config", "mini", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--config 'mini' (run has 'tiny')" in err and len(err.strip().splitlines()) == 1

    # A checkpoint whose vocab.txt no longer matches the model's embedding matrix.
    ckpt = latest_checkpoint(run)
    vocab = (ckpt / "vocab.txt").read_text().splitlines()
    (ckpt / "vocab.txt").write_text("\n".join(vocab + ["extra1", "extra2"]) + "\n")
    (ckpt / "tokenizer.json").unlink(missing_ok=True)  # (else the two files' differing vocabularies are refused first)
    assert main(["pretrain", "--resume", str(run), "--quiet"]) == 2
    assert "vocab_size" in capsys.readouterr().err

    assert main(["pretrain", "--resume", str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_a_non_finite_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path, corpus, capsys):
    # An absurd learning rate overflows the weights as soon as warmup lifts it above 0 (step 0 has lr 0).
    code = main(["pretrain", "--corpus", str(corpus), "--config", "tiny", "--vocab-size", "120", "--seq-len", "32",
                 "--batch-size", "8", "--steps", "40", "--save-every", "1", "--warmup", "0.5", "--lr", "1e38",
                 "--runs-dir", str(tmp_path / "runs"), "--name", "nan", "--quiet", "--no-plot"])
    err = capsys.readouterr().err
    assert code == 1
    assert "training stopped at step" in err and "finite number" in err and "the last good checkpoint" in err
    assert "--lr" in err and len(err.strip().splitlines()) == 1
    run = tmp_path / "runs" / "nan"
    good = latest_checkpoint(run)
    assert good is not None and str(good) in err
    model = BertForPreTraining.from_pretrained(good)  # it loads, and its weights are finite
    assert all(p.size and abs(p).max() < float("inf") for p in model.params.values())
    stopped_at = int(err.split("stopped at step ")[1].split(":")[0])
    assert int(good.name[5:]) == stopped_at - 1  # nothing after the last good step was written
    assert not [p for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]  # no temp folders left
