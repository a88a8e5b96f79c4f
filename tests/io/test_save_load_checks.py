"""save_pretrained writes what its tensors are: a BERT-class model loaded from an ELECTRA folder saves as BERT
(model_type and architectures that match the bert.* names, so transformers' Auto classes load every weight);
tensors that disagree with the config are refused before anything is written. from_pretrained takes every folder
the CLI takes (a run, RUN/checkpoints, "minilm") and refuses a dtype it cannot use in one line."""

import json
import warnings

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertForSequenceClassification, BertModel
from minibert.models.electra import ElectraForMaskedLM, ElectraForPreTraining

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def electra_config():  # embedding_size = hidden_size: its body is a BERT body (no embeddings_project)
    return BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=20, model_type="electra")


def nudged(model, seed=0):
    rng = np.random.default_rng(seed)
    for p in model.params.values():  # non-trivial biases and LayerNorms: a weight left at its init would show
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    return model


def batch():
    rng = np.random.default_rng(4)
    ids = rng.integers(5, 60, (2, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    return ids, mask


def quietly(load, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the new head and the ELECTRA head left out are expected here
        return load(*args, **kwargs)


def hf_load(auto_class, folder):
    model, info = auto_class.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    return model.eval()


def test_classifier_from_an_electra_discriminator_saves_as_bert(tmp_path):
    nudged(ElectraForPreTraining(electra_config(), seed=1)).save_pretrained(tmp_path / "electra")
    ours = quietly(BertForSequenceClassification.from_pretrained, tmp_path / "electra", num_labels=2)
    nudged(ours, seed=2).save_pretrained(tmp_path / "classifier")
    config = json.loads((tmp_path / "classifier" / "config.json").read_text())
    assert (config["model_type"], config["architectures"]) == ("bert", ["BertForSequenceClassification"])
    theirs = hf_load(transformers.AutoModelForSequenceClassification, tmp_path / "classifier")
    assert type(theirs).__name__ == "BertForSequenceClassification"
    ids, mask = batch()
    with torch.no_grad():
        expected = theirs(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    np.testing.assert_allclose(ours.eval()(ids, attention_mask=mask).logits, expected, atol=1e-5)
    again = BertForSequenceClassification.from_pretrained(tmp_path / "classifier")  # and back, nothing missing
    assert again.config.model_type == "bert"


def test_masked_lm_from_an_electra_generator_saves_as_bert(tmp_path):
    nudged(ElectraForMaskedLM(electra_config(), seed=3)).save_pretrained(tmp_path / "generator")
    ours = quietly(BertForMaskedLM.from_pretrained, tmp_path / "generator")  # body only: a new MLM head
    nudged(ours, seed=4).save_pretrained(tmp_path / "mlm")
    config = json.loads((tmp_path / "mlm" / "config.json").read_text())
    assert (config["model_type"], config["architectures"]) == ("bert", ["BertForMaskedLM"])
    theirs = hf_load(transformers.AutoModelForMaskedLM, tmp_path / "mlm")
    ids, mask = batch()
    with torch.no_grad():
        expected = theirs(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    got = ours.eval()(ids, attention_mask=mask).logits  # (B, T, V): no labels
    valid = mask.astype(bool)
    np.testing.assert_allclose(got[valid], expected[valid], atol=1e-4)


def test_electra_classes_still_save_as_electra(tmp_path):
    ElectraForPreTraining(electra_config()).save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "electra"


# ---------------------------------------------------------------- tensors that disagree with the config
def tiny():
    return BertConfig.preset("tiny", vocab_size=40, hidden_size=32, num_attention_heads=4, intermediate_size=48,
                             num_hidden_layers=1, max_position_embeddings=16)


@pytest.mark.parametrize("value, shown", [(np.zeros(31, np.float32), r"\(31,\)"),
                                          (np.zeros((32, 1), np.float32), r"\(32, 1\)"),
                                          (np.zeros(32, np.int64), "int64")])
def test_save_refuses_a_tensor_that_disagrees_with_the_config(tmp_path, value, shown):
    m = BertModel(tiny())
    m.params["pooler.dense.bias"] = value
    with pytest.raises(ValueError, match=rf"'pooler\.dense\.bias'.*{shown}") as e:
        m.save_pretrained(tmp_path / "out")
    assert "\n" not in str(e.value) and "(32,)" in str(e.value)
    assert not (tmp_path / "out").exists()  # nothing written, not even the folder


def test_save_of_an_existing_folder_leaves_its_files_when_refused(tmp_path):
    m = BertModel(tiny())
    m.save_pretrained(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    m.params["embeddings.word_embeddings.weight"] = np.zeros((41, 32), np.float32)
    with pytest.raises(ValueError, match=r"\(40, 32\)"):
        m.save_pretrained(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


# ---------------------------------------------------------------- what from_pretrained takes
def test_from_pretrained_takes_run_and_checkpoints_folders(tmp_path):
    model = nudged(BertForMaskedLM(tiny()))
    model.save_pretrained(tmp_path / "run" / "checkpoints" / "step-000010")
    (tmp_path / "run" / "checkpoints" / "latest").write_text("step-000010\n")
    for folder in (tmp_path / "run", tmp_path / "run" / "checkpoints"):
        loaded = BertForMaskedLM.from_pretrained(folder)
        np.testing.assert_array_equal(loaded.params["cls.predictions.bias"], model.params["cls.predictions.bias"])


def test_from_pretrained_takes_the_builtin_minilm():
    from minibert.data.builtin import minilm_dir
    try:
        minilm_dir()
    except FileNotFoundError:
        pytest.skip("the built-in all-MiniLM-L6-v2 package is not installed")
    model = BertModel.from_pretrained("minilm")
    assert model.config.hidden_size == 384


def test_a_missing_folder_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere: no such run or model folder"):
        BertModel.from_pretrained(tmp_path / "nowhere")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_from_pretrained_refuses_a_dtype_in_one_line(tmp_path, dtype):
    BertModel(tiny()).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="dtype must be float32 or float64") as e:
        BertModel.from_pretrained(tmp_path, dtype=dtype)
    assert "\n" not in str(e.value)
