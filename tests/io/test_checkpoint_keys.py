"""Loading by name: the `bert.` prefix added or stripped, heads missing from a file initialised and listed,
unused tensors listed, the tied MLM decoder checked, buffers and old gamma/beta names understood."""

import json
import warnings

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel
from minibert.io.checkpoint import CheckpointWarning, map_keys
from minibert.io.safetensors_io import load_safetensors, save_safetensors


def tiny_config():
    return BertConfig.preset("tiny", vocab_size=64, max_position_embeddings=16, hidden_size=16,
                             num_attention_heads=2, intermediate_size=24)


def load_with_warnings(cls, path, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = cls.from_pretrained(path, **kwargs)
    return model, [str(w.message) for w in caught if issubclass(w.category, CheckpointWarning)]


def rewrite_weights(folder, change):
    """Load model.safetensors, let `change(tensors)` edit the dict, write it back."""
    tensors = load_safetensors(folder / "model.safetensors")
    change(tensors)
    save_safetensors(tensors, folder / "model.safetensors", metadata={"format": "pt"})


def test_bert_model_file_into_task_model_initialises_and_lists_heads(tmp_path):
    base = BertModel(tiny_config(), seed=1)
    base.save_pretrained(tmp_path)
    model, messages = load_with_warnings(BertForPreTraining, tmp_path)
    for name, p in base.params.items():  # every encoder weight arrived under "bert."
        np.testing.assert_array_equal(model.params["bert." + name], p)
    assert len(messages) == 1 and "7 weights of BertForPreTraining are not in the checkpoint" in messages[0]
    assert "cls.predictions.bias" in messages[0] and "cls.seq_relationship.weight" in messages[0]


@pytest.mark.parametrize("seed", [0, 5])
def test_weights_missing_from_the_file_get_a_fresh_models_values(tmp_path, seed):
    # Loading skips the random init of what the file overwrites; what it lacks must still be BERT's init,
    # exactly as a model built with this seed has it (not zeros, not another draw).
    BertModel(tiny_config(), seed=1).save_pretrained(tmp_path)
    model, _ = load_with_warnings(BertForPreTraining, tmp_path, seed=seed)
    fresh = BertForPreTraining(tiny_config(), seed=seed)
    for name in ("cls.seq_relationship.weight", "cls.predictions.transform.dense.weight",
                 "cls.predictions.transform.LayerNorm.weight"):
        np.testing.assert_array_equal(model.params[name], fresh.params[name], err_msg=name)
    assert np.abs(model.params["cls.seq_relationship.weight"]).max() > 0


def test_task_model_file_into_bert_model_lists_unused_heads(tmp_path):
    full = BertForPreTraining(tiny_config(), seed=2)
    full.save_pretrained(tmp_path)
    model, messages = load_with_warnings(BertModel, tmp_path)
    for name, p in model.params.items():
        np.testing.assert_array_equal(p, full.params["bert." + name])
    assert len(messages) == 1 and "7 tensors are not used by BertModel" in messages[0]


def test_pretraining_file_into_masked_lm_lists_only_pooler_and_nsp(tmp_path):
    BertForPreTraining(tiny_config(), seed=3).save_pretrained(tmp_path)
    _, messages = load_with_warnings(BertForMaskedLM, tmp_path)
    assert len(messages) == 1
    assert "4 tensors are not used" in messages[0] and "bert.pooler.dense.weight" in messages[0]
    assert "cls.seq_relationship.bias" in messages[0]


def test_prefix_mapping_rules():
    params = ["bert.embeddings.word_embeddings.weight", "cls.predictions.bias"]
    mapping, unexpected = map_keys(["embeddings.word_embeddings.weight", "cls.predictions.bias",
                                    "embeddings.position_ids", "classifier.weight"], params, "bert.")
    assert mapping == {"embeddings.word_embeddings.weight": "bert.embeddings.word_embeddings.weight",
                       "cls.predictions.bias": "cls.predictions.bias"}
    assert unexpected == ["classifier.weight"]  # the position_ids buffer is dropped silently
    mapping, _ = map_keys(["bert.embeddings.LayerNorm.gamma"], ["embeddings.LayerNorm.weight"], "")
    assert mapping == {"bert.embeddings.LayerNorm.gamma": "embeddings.LayerNorm.weight"}
    with pytest.raises(ValueError, match="two tensors of the checkpoint map to parameter"):
        map_keys(["embeddings.LayerNorm.weight", "bert.embeddings.LayerNorm.weight"],
                 ["embeddings.LayerNorm.weight"], "")


def test_decoder_weight_equal_to_embeddings_is_accepted_silently(tmp_path):
    model = BertForMaskedLM(tiny_config(), seed=4)
    model.save_pretrained(tmp_path)
    rewrite_weights(tmp_path, lambda t: t.update({
        "cls.predictions.decoder.weight": t["bert.embeddings.word_embeddings.weight"].copy(),
        "cls.predictions.decoder.bias": t["cls.predictions.bias"].copy(),
        "bert.embeddings.position_ids": np.arange(16, dtype=np.int64)[None]}))
    _, messages = load_with_warnings(BertForMaskedLM, tmp_path)
    assert messages == []


def test_decoder_weight_that_differs_warns_that_minibert_ties(tmp_path):
    model = BertForMaskedLM(tiny_config(), seed=5)
    model.save_pretrained(tmp_path)
    rewrite_weights(tmp_path, lambda t: t.update({
        "cls.predictions.decoder.weight": t["bert.embeddings.word_embeddings.weight"] + 1.0}))
    loaded, messages = load_with_warnings(BertForMaskedLM, tmp_path)
    assert len(messages) == 1 and "cls.predictions.decoder.weight differs" in messages[0]
    assert "ties the MLM decoder to the word embeddings" in messages[0]
    np.testing.assert_array_equal(loaded.params["bert.embeddings.word_embeddings.weight"],
                                  model.params["bert.embeddings.word_embeddings.weight"])


def test_old_decoder_bias_name_fills_the_mlm_bias(tmp_path):
    model = BertForMaskedLM(tiny_config(), seed=6)
    model.params["cls.predictions.bias"][:] = np.linspace(-1, 1, 64)
    model.save_pretrained(tmp_path)
    rewrite_weights(tmp_path, lambda t: t.update({"cls.predictions.decoder.bias": t.pop("cls.predictions.bias")}))
    loaded, messages = load_with_warnings(BertForMaskedLM, tmp_path)
    assert messages == []
    np.testing.assert_array_equal(loaded.params["cls.predictions.bias"], model.params["cls.predictions.bias"])


def test_gamma_beta_names_load(tmp_path):
    model = BertModel(tiny_config(), seed=7)
    model.params["embeddings.LayerNorm.weight"][:] = 2.0
    model.save_pretrained(tmp_path)
    rewrite_weights(tmp_path, lambda t: t.update({
        "embeddings.LayerNorm.gamma": t.pop("embeddings.LayerNorm.weight"),
        "embeddings.LayerNorm.beta": t.pop("embeddings.LayerNorm.bias")}))
    loaded, messages = load_with_warnings(BertModel, tmp_path)
    assert messages == [] and (loaded.params["embeddings.LayerNorm.weight"] == 2.0).all()


def test_save_writes_architectures_and_no_decoder_key(tmp_path):
    model = BertForPreTraining(tiny_config(), seed=8)
    model.params["bert.encoder.layer.0.intermediate.dense.weight"] = \
        np.asfortranarray(model.params["bert.encoder.layer.0.intermediate.dense.weight"])  # not C-contiguous
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"] and config["model_type"] == "bert"
    assert config["tie_word_embeddings"] is True
    tensors = load_safetensors(tmp_path / "model.safetensors")
    assert set(tensors) == set(model.params) and "cls.predictions.decoder.weight" not in tensors
    for name, p in model.params.items():
        np.testing.assert_array_equal(tensors[name], p, err_msg=name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]  # no temp files


def test_loaded_params_are_contiguous_and_shared_with_the_body(tmp_path):
    BertForMaskedLM(tiny_config(), seed=9).save_pretrained(tmp_path)
    model = BertForMaskedLM.from_pretrained(tmp_path)
    assert all(p.flags.c_contiguous and p.dtype == np.float32 for p in model.params.values())
    assert model.bert.model is model and not model.training
    out = model(np.array([[1, 2, 3]]))
    assert out.logits.shape == (1, 3, 64)


def test_num_labels_comes_from_id2label(tmp_path):
    classification = pytest.importorskip("minibert.models.classification")
    cls = classification.BertForSequenceClassification
    model = cls(tiny_config(), num_labels=3, seed=1)
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert len(config["id2label"]) == 3
    loaded, messages = load_with_warnings(cls, tmp_path)
    assert messages == [] and loaded.params["classifier.weight"].shape == (3, 16)
    np.testing.assert_array_equal(loaded.params["classifier.weight"], model.params["classifier.weight"])
