"""Which folder --model means, and how a checkpoint becomes a classifier for new labels."""

import warnings

import numpy as np
import pytest

from finetune_helpers import make_model_dir
from minibert.finetune.loading import load_classifier, load_for_finetuning
from minibert.finetune.model_source import resolve_checkpoint, resolve_model


def test_model_folder_run_folder_and_latest(tmp_path):
    model = make_model_dir(tmp_path / "model")
    assert resolve_model(str(model)) == (model, model)
    # A pre-training run: runs/<name>/checkpoints/step-N/ and a `latest` file naming the newest.
    run = tmp_path / "run"
    for step in ("step-000100", "step-000900", "step-001000"):
        make_model_dir(run / "checkpoints" / step)
    (run / "checkpoints" / "latest").write_text("step-000900\n")
    assert resolve_checkpoint(str(run)) == run / "checkpoints" / "step-000900"
    (run / "checkpoints" / "latest").unlink()
    assert resolve_checkpoint(str(run)) == run / "checkpoints" / "step-001000"  # highest number, not "latest" name
    with pytest.raises(FileNotFoundError, match="--model .*nope: no such run or model folder"):
        resolve_checkpoint(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no config.json in it"):
        resolve_checkpoint(str(tmp_path / "empty"))


def test_tokenizer_is_found_above_the_checkpoint(tmp_path):
    run = tmp_path / "run"
    ckpt = make_model_dir(run / "checkpoints" / "step-000010")
    (ckpt / "vocab.txt").rename(run / "vocab.txt")
    assert resolve_model(str(run)) == (ckpt, run.resolve())


def test_new_labels_get_a_new_head_and_the_same_labels_keep_it(tmp_path):
    body = make_model_dir(tmp_path / "body")
    logs = []
    model = load_for_finetuning(body, ["neg", "pos", "neu"], log=logs.append)
    assert model.num_labels == 3 and model.id2label == {0: "neg", 1: "pos", 2: "neu"}
    assert any("new classifier for 3 classes" in line for line in logs)
    assert not any("newly initialised" in line for line in logs)  # the expected new head is not a warning
    model.params["classifier.bias"][:] = [1.0, 2.0, 3.0]
    model.save_pretrained(tmp_path / "clf")
    # the same labels: the trained head is kept
    again = load_for_finetuning(tmp_path / "clf", ["neg", "pos", "neu"], log=logs.append)
    assert again.params["classifier.bias"].tolist() == [1.0, 2.0, 3.0]
    # other labels (even as many): a fresh head on the same body
    other = load_for_finetuning(tmp_path / "clf", ["a", "b"], log=logs.append)
    assert other.params["classifier.bias"].tolist() == [0.0, 0.0]
    name = "bert.encoder.layer.1.output.dense.weight"
    assert np.array_equal(other.params[name], again.params[name])


def test_load_classifier_refuses_a_plain_body(tmp_path):
    body = make_model_dir(tmp_path / "body")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="no id2label: this is not a fine-tuned classifier"):
            load_classifier(body)


def test_a_checkpoint_without_pooler_gets_one_with_a_warning(tmp_path):
    from minibert.config import BertConfig
    from minibert.models.pretraining import BertForMaskedLM
    config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    BertForMaskedLM(config).save_pretrained(tmp_path / "mlm")
    logs = []
    model = load_for_finetuning(tmp_path / "mlm", ["a", "b"], log=logs.append)
    warned = [line for line in logs if line.startswith("warning:")]
    assert len(warned) == 1 and "bert.pooler.dense.weight" in warned[0] and "classifier" not in warned[0]
    assert np.abs(model.params["bert.pooler.dense.weight"]).max() > 0  # initialised, not left at zero
