"""Bad checkpoints fail at once with one line that names the file and the tensor (or the field)."""

import json
import struct
import sys

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertModel
from minibert.io.safetensors_io import load_safetensors, save_safetensors


@pytest.fixture
def checkpoint(tmp_path):
    config = BertConfig.preset("tiny", vocab_size=64, max_position_embeddings=16, hidden_size=16,
                               num_attention_heads=2, intermediate_size=24)
    BertForMaskedLM(config, seed=1).save_pretrained(tmp_path)
    return tmp_path


def edit_config(folder, **changes):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


def one_line(excinfo):
    message = str(excinfo.value)
    assert "\n" not in message, message
    return message


def test_truncated_weights(checkpoint):
    path = checkpoint / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError) as e:
        BertForMaskedLM.from_pretrained(checkpoint)
    assert "model.safetensors: tensor '" in one_line(e) and "truncated" in str(e.value)


def test_header_lies_about_sizes(checkpoint):
    path = checkpoint / "model.safetensors"
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header["cls.predictions.bias"]["shape"] = [65]  # one more element than its bytes hold
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= n
    text += b" " * (n - len(text))  # same header length, so only the lie differs
    path.write_bytes(raw[:8] + text + raw[8 + n:])
    with pytest.raises(ValueError) as e:
        BertForMaskedLM.from_pretrained(checkpoint)
    assert "model.safetensors: tensor 'cls.predictions.bias': header says F32 (65,)" in one_line(e)


def test_tensor_shape_disagrees_with_config(checkpoint):
    edit_config(checkpoint, intermediate_size=32)
    with pytest.raises(ValueError) as e:
        BertForMaskedLM.from_pretrained(checkpoint)
    message = one_line(e)
    assert "model.safetensors: tensor 'bert.encoder.layer." in message
    assert "config.json" in message and "intermediate_size=32" in message


def test_vocab_size_disagrees_with_embedding_matrix(checkpoint, monkeypatch):
    edit_config(checkpoint, vocab_size=70)

    def no_model_please(self, *args, **kwargs):
        raise AssertionError("the model was built (and randomly initialised) before the shapes were checked")

    monkeypatch.setattr(BertForMaskedLM, "__init__", no_model_please)
    with pytest.raises(ValueError) as e:
        BertForMaskedLM.from_pretrained(checkpoint)
    message = one_line(e)
    assert "tensor 'bert.embeddings.word_embeddings.weight': the embedding matrix has 64 rows" in message
    assert "vocab_size=70" in message


def test_unknown_hidden_act(checkpoint):
    edit_config(checkpoint, hidden_act="swish")
    with pytest.raises(ValueError) as e:
        BertForMaskedLM.from_pretrained(checkpoint)
    message = one_line(e)
    assert "config.json" in message and "hidden_act 'swish' is not supported" in message


def test_integer_tensor_for_a_weight(checkpoint):
    tensors = load_safetensors(checkpoint / "model.safetensors")
    tensors["cls.predictions.bias"] = tensors["cls.predictions.bias"].astype(np.int32)
    save_safetensors(tensors, checkpoint / "model.safetensors")
    with pytest.raises(ValueError, match=r"tensor 'cls\.predictions\.bias' has dtype I32, expected a floating"):
        BertForMaskedLM.from_pretrained(checkpoint)


def test_not_a_bert_checkpoint(checkpoint):
    save_safetensors({"encoder.weight": np.zeros(3, np.float32)}, checkpoint / "model.safetensors")
    with pytest.raises(ValueError, match="none of its 1 tensors is a BertModel parameter"):
        BertModel.from_pretrained(checkpoint)


def test_missing_files(tmp_path, checkpoint):
    with pytest.raises(FileNotFoundError, match="nowhere: no such run or model folder"):
        BertModel.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"config\.json: is a file \(expected a model folder with config\.json"):
        BertModel.from_pretrained(checkpoint / "config.json")
    (checkpoint / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no weights found"):
        BertModel.from_pretrained(checkpoint)
    (checkpoint / "config.json").unlink()
    with pytest.raises(ValueError, match="no config.json in it and no checkpoints/ sub-folder"):
        BertModel.from_pretrained(checkpoint)


def test_pytorch_bin_without_torch_explains_conversion(checkpoint, monkeypatch):
    (checkpoint / "model.safetensors").unlink()
    (checkpoint / "pytorch_model.bin").write_bytes(b"\x80\x02}q\x00.")  # never opened: torch is "missing"
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(ValueError) as e:
        BertModel.from_pretrained(checkpoint)
    message = one_line(e)
    assert "pytorch_model.bin is a PyTorch pickle" in message and "save_file" in message


def test_sharded_checkpoint_loads(checkpoint):
    tensors = load_safetensors(checkpoint / "model.safetensors")
    (checkpoint / "model.safetensors").unlink()
    names = sorted(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    for shard, keys in shards.items():
        save_safetensors({k: tensors[k] for k in keys}, checkpoint / shard)
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (checkpoint / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    model = BertForMaskedLM.from_pretrained(checkpoint)
    for k, v in tensors.items():
        np.testing.assert_array_equal(model.params[k], v)
    weight_map[names[0]] = "../elsewhere.safetensors"
    (checkpoint / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(ValueError, match="is not a file of the folder"):
        BertForMaskedLM.from_pretrained(checkpoint)


def test_a_run_folder_loads_its_latest_checkpoint(checkpoint, tmp_path):
    # What `minibert pretrain` and `distill` write: RUN/checkpoints/step-N/ and a `latest` file naming one.
    run = tmp_path / "run"
    (run / "checkpoints" / "step-000002").mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        (run / "checkpoints" / "step-000002" / name).write_bytes((checkpoint / name).read_bytes())
    (run / "checkpoints" / "latest").write_text("step-000002\n")
    model = BertForMaskedLM.from_pretrained(run)
    assert model.name_or_path == str(run / "checkpoints" / "step-000002")
    expected = BertForMaskedLM.from_pretrained(checkpoint)
    assert all(np.array_equal(model.params[k], expected.params[k]) for k in expected.params)
    (run / "checkpoints" / "latest").unlink()
    (run / "checkpoints" / "step-000002" / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match="has no complete checkpoint yet"):
        BertForMaskedLM.from_pretrained(run)
