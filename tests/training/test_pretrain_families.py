"""`minibert pretrain` with BERT's descendants: ALBERT with sentence-order prediction, pre-LN with MLM. Tiny
configs (a config.json with model_type, as users give their own) and few steps; the checkpoints load in
transformers' class of the family."""

import json

import numpy as np
import pytest

from minibert import BertConfig
from minibert.cli import main
from minibert.models import BertForPreTraining
from minibert.training.metrics import read_metrics
from pretrain_helpers import synthetic_documents, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("families")
    mp = pytest.MonkeyPatch()
    mp.setenv("MINIBERT_CACHE", str(tmp / "cache"))
    yield write_corpus(tmp / "animals.txt", synthetic_documents(120))
    mp.undo()


def _config_json(tmp_path, **family):
    cfg = BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=40, **family)
    path = tmp_path / f"{family['model_type']}.json"
    path.write_text(json.dumps(cfg.to_dict()))
    return path


def _pretrain(corpus, config, runs, objective, steps=12):
    return main(["pretrain", "--corpus", str(corpus), "--config", str(config), "--vocab-size", "120", "--seq-len",
                 "32", "--batch-size", "8", "--steps", str(steps), "--objective", objective, "--eval-examples", "32",
                 "--runs-dir", str(runs), "--name", "run", "--quiet", "--no-plot"])


def test_albert_with_sentence_order_prediction(corpus, tmp_path):
    config = _config_json(tmp_path, model_type="albert", embedding_size=16, hidden_act="gelu_new")
    assert _pretrain(corpus, config, tmp_path / "runs", "mlm+sop") == 0
    run = tmp_path / "runs" / "run"
    evals = [r for r in read_metrics(run / "metrics.jsonl") if r["split"] == "eval"]
    assert "nsp_acc" in evals[-1]  # the sentence head (here SOP) is trained and evaluated
    ckpt = run / "checkpoints" / "step-000012"
    saved = json.loads((ckpt / "config.json").read_text())
    assert saved["model_type"] == "albert" and saved["architectures"] == ["AlbertForPreTraining"]
    model = BertForPreTraining.from_pretrained(ckpt)
    assert [n for n in model.params if ".layer.1." in n] == []  # one shared layer
    transformers = pytest.importorskip("transformers")
    hf, info = transformers.AlbertForPreTraining.from_pretrained(ckpt, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info


def test_pre_ln_mlm_and_a_pair_objective_needs_two_token_types(corpus, tmp_path, capsys):
    config = _config_json(tmp_path, model_type="roberta-prelayernorm")
    assert _pretrain(corpus, config, tmp_path / "runs", "mlm", steps=6) == 0
    model = BertForPreTraining.from_pretrained(tmp_path / "runs" / "run" / "checkpoints" / "step-000006")
    assert model.config.layer_norm_position == "pre" and "bert.LayerNorm.weight" in model.params
    assert np.isfinite(model.params["bert.LayerNorm.weight"]).all()

    roberta = _config_json(tmp_path, model_type="roberta", type_vocab_size=1)
    assert _pretrain(corpus, roberta, tmp_path / "runs2", "mlm+sop") == 2
    assert "type_vocab_size 1" in capsys.readouterr().err
