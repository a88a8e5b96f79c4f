"""DistilBERT checkpoints cross the border both ways (minibert <-> transformers) with identical outputs, load
between the bare and the MLM class, and refuse to load into a BERT class."""

import json

import numpy as np
import pytest

from minibert import BertModel
from minibert.distilbert_config import DistilBertConfig
from minibert.io.checkpoint import CheckpointWarning
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
from test_checkpoint_transformers import batch, randomised  # the same inputs and weight noise as for BERT

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def tiny_config():
    return DistilBertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=48, max_position_embeddings=32)


def hf_run(hf, ids, mask):
    with torch.no_grad():
        r = hf(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    return (r.logits if "logits" in r else r.last_hidden_state).numpy()


def ours_run(model, ids, mask):
    out = model.forward(ids, attention_mask=mask)
    return out.prediction_logits if "prediction_logits" in out else out.last_hidden_state


@pytest.mark.parametrize("cls", [DistilBertModel, DistilBertForMaskedLM], ids=lambda c: c.__name__)
def test_minibert_save_loads_in_transformers_and_back(tmp_path, cls):
    ours = randomised(cls(tiny_config(), seed=1))
    ours.save_pretrained(tmp_path / "ours")
    saved = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert saved["model_type"] == "distilbert" and saved["n_layers"] == 2 and saved["dim"] == 32
    assert "type_vocab_size" not in saved and "hidden_size" not in saved
    theirs, info = getattr(transformers, cls.__name__).from_pretrained(
        tmp_path / "ours", attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    auto = transformers.AutoModel.from_pretrained(tmp_path / "ours")  # model_type picks DistilBertModel
    assert type(auto).__name__ == "DistilBertModel"
    ids, mask = batch()
    np.testing.assert_allclose(ours_run(ours, ids, mask), hf_run(theirs.eval(), ids, mask), atol=2e-5, rtol=0)

    theirs.save_pretrained(tmp_path / "theirs")
    back = cls.from_pretrained(tmp_path / "theirs")
    np.testing.assert_allclose(ours_run(back, ids, mask), ours_run(ours, ids, mask), atol=1e-6, rtol=0)
    assert back.config == ours.config


def test_bare_and_mlm_folders_load_into_each_other(tmp_path):
    hf = transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
        vocab_size=120, dim=32, n_layers=2, n_heads=4, hidden_dim=48, max_position_embeddings=32)).eval()
    hf.save_pretrained(tmp_path / "mlm")
    ids, mask = batch()
    with pytest.warns(CheckpointWarning, match="not used by DistilBertModel"):
        bare = DistilBertModel.from_pretrained(tmp_path / "mlm")  # "distilbert." stripped, the head unused
    with torch.no_grad():
        ref = hf.distilbert(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).last_hidden_state
    np.testing.assert_allclose(bare.forward(ids, attention_mask=mask).last_hidden_state, ref.numpy(), atol=2e-5, rtol=0)

    hf.distilbert.save_pretrained(tmp_path / "bare")
    with pytest.warns(CheckpointWarning, match="vocab_transform.weight"):  # the head is new
        mlm = DistilBertForMaskedLM.from_pretrained(tmp_path / "bare")
    np.testing.assert_allclose(mlm.distilbert.forward(ids, attention_mask=mask).last_hidden_state, ref.numpy(),
                               atol=2e-5)


def test_untied_projector_in_file_is_reported(tmp_path):
    ours = randomised(DistilBertForMaskedLM(tiny_config(), seed=2))
    ours.save_pretrained(tmp_path)
    from safetensors.numpy import load_file, save_file
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["vocab_projector.weight"] = tensors["distilbert.embeddings.word_embeddings.weight"] + 1.0
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    with pytest.warns(CheckpointWarning, match="vocab_projector.weight differs"):
        DistilBertForMaskedLM.from_pretrained(tmp_path)


def test_distilbert_folder_into_a_bert_class_is_refused(tmp_path):
    DistilBertModel(tiny_config()).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="model_type is 'distilbert', but BertModel loads 'bert'"):
        BertModel.from_pretrained(tmp_path)


def test_bad_distilbert_config_fields(tmp_path):
    DistilBertModel(tiny_config()).save_pretrained(tmp_path)
    d = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**d, "n_heads": 5}))
    with pytest.raises(ValueError, match="config.json.*hidden_size \\(32\\) must be divisible"):
        DistilBertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**d, "sinusoidal_pos_embds": True}))
    with pytest.raises(ValueError, match="sinusoidal_pos_embds"):
        DistilBertModel.from_pretrained(tmp_path)
