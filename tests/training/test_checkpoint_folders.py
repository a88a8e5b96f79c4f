"""Checkpoint folders: written whole or not at all, `latest` moves last, old ones pruned, runs resolvable."""

import json

import numpy as np
import pytest

from minibert.config import BertConfig
from minibert.models import BertForPreTraining
from minibert.optim import AdamW
from minibert.tokenizer import WordPieceTokenizer
from minibert.training.checkpointing import load_training_state, save_checkpoint
from minibert.training.run_dir import create_run_dir, latest_checkpoint, resolve_model_dir

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list("abcdefghij")


@pytest.fixture
def parts():
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=len(VOCAB)), seed=0)
    return model, WordPieceTokenizer(VOCAB), AdamW(model.params, model.grads)


def test_save_prune_and_latest(tmp_path, parts):
    model, tok, opt = parts
    run = create_run_dir(tmp_path, "r")
    for step in (10, 20, 30):
        save_checkpoint(run, step, model, tok, opt.state_dict(), {"step": step}, keep=2)
    names = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert names == ["latest", "step-000020", "step-000030"]  # pruned, no temporary folders left
    assert latest_checkpoint(run).name == "step-000030" and resolve_model_dir(run).name == "step-000030"
    assert resolve_model_dir(run / "checkpoints" / "step-000020").name == "step-000020"
    assert resolve_model_dir(run / "checkpoints").name == "step-000030"  # the run's checkpoints folder: its latest
    state, optimizer = load_training_state(run / "checkpoints" / "step-000030")
    assert state == {"step": 30} and set(optimizer) == set(opt.state_dict())
    with pytest.raises(FileExistsError, match="already holds a run"):
        create_run_dir(tmp_path, "r")


def test_a_failed_save_leaves_the_previous_checkpoint_latest(tmp_path, parts, monkeypatch):
    model, tok, opt = parts
    run = create_run_dir(tmp_path, "r")
    save_checkpoint(run, 10, model, tok, opt.state_dict(), {"step": 10})
    monkeypatch.setattr(tok, "save_pretrained", lambda folder: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(run, 20, model, tok, opt.state_dict(), {"step": 20})
    assert [p.name for p in (run / "checkpoints").iterdir() if p.name != "latest"] == ["step-000010"]
    assert latest_checkpoint(run).name == "step-000010"
    # the surviving checkpoint is complete and loads
    loaded = BertForPreTraining.from_pretrained(latest_checkpoint(run))
    assert np.array_equal(loaded.params["cls.predictions.bias"], model.params["cls.predictions.bias"])
    assert json.loads((latest_checkpoint(run) / "training_state" / "state.json").read_text()) == {"step": 10}


def test_resolve_model_dir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run or model folder"):
        resolve_model_dir(tmp_path / "missing")
    create_run_dir(tmp_path, "empty")
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        resolve_model_dir(tmp_path / "empty")
