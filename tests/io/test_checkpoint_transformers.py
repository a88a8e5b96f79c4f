"""Checkpoints cross the border both ways: a minibert save loads in transformers, and a transformers save loads
in minibert, with identical outputs, for every model class."""

import warnings

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel
from minibert.io.checkpoint import CheckpointWarning

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

CLASSES = [BertModel, BertForPreTraining, BertForMaskedLM]
OUTPUTS = ["last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits", "logits"]


def tiny_config(**overrides):
    return BertConfig.preset("tiny", vocab_size=120, max_position_embeddings=32, hidden_size=32,
                             num_attention_heads=4, intermediate_size=48, **overrides)


def batch():
    rng = np.random.default_rng(3)
    ids = rng.integers(1, 120, (3, 10))
    mask = np.ones_like(ids)
    mask[1, 7:] = 0  # padded rows: the mask must travel right too
    mask[2, 4:] = 0
    return ids, mask


def randomised(model, seed=0):
    """Every parameter nudged, so a bias loaded as zero or a LayerNorm weight left at one would show."""
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    return model.eval()


def hf_outputs(hf_model, ids, mask):
    with torch.no_grad():
        r = hf_model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask))
    return {k: r[k].numpy() for k in OUTPUTS if k in r and r[k] is not None}


def assert_same_outputs(ours, theirs):
    shared = [k for k in OUTPUTS if ours.get(k) is not None and k in theirs]
    assert shared, "no output to compare"
    for k in shared:
        np.testing.assert_allclose(ours[k], theirs[k], atol=2e-5, rtol=0, err_msg=k)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_minibert_save_loads_in_transformers(tmp_path, cls):
    ours = randomised(cls(tiny_config(), seed=1))
    ours.save_pretrained(tmp_path)
    theirs, info = getattr(transformers, cls.__name__).from_pretrained(
        tmp_path, attn_implementation="eager", output_loading_info=True)
    # transformers found every weight it needs in our file (the tied decoder included) and nothing extra
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    ids, mask = batch()
    assert_same_outputs(ours(ids, attention_mask=mask), hf_outputs(theirs.eval(), ids, mask))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_transformers_save_loads_in_minibert(tmp_path, cls):
    config = tiny_config()
    hf_config = transformers.BertConfig(**config.to_dict(), attn_implementation="eager")
    torch.manual_seed(0)
    theirs = getattr(transformers, cls.__name__)(hf_config).eval()
    with torch.no_grad():  # non-trivial biases and LayerNorms
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    theirs.save_pretrained(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)  # nothing missing, nothing unexpected
        ours = cls.from_pretrained(tmp_path)
    assert not ours.training and ours.name_or_path == str(tmp_path)
    ids, mask = batch()
    assert_same_outputs(ours(ids, attention_mask=mask), hf_outputs(theirs, ids, mask))


def test_attentions_match_transformers_eager(tmp_path):
    ours = randomised(BertModel(tiny_config(), seed=2))
    ours.save_pretrained(tmp_path)
    theirs = transformers.BertModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    ids, mask = batch()
    out = ours(ids, attention_mask=mask, output_attentions=True)
    with torch.no_grad():
        ref = theirs(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), output_attentions=True)
    assert len(out.attentions) == len(ref.attentions) == 2
    for a, b in zip(out.attentions, ref.attentions):
        assert a.shape == (3, 4, 10, 10)
        np.testing.assert_allclose(a, b.numpy(), atol=1e-6)


def test_float64_load_of_a_float32_file(tmp_path):
    ours = randomised(BertForMaskedLM(tiny_config(), seed=4))
    ours.save_pretrained(tmp_path)
    loaded = BertForMaskedLM.from_pretrained(tmp_path, dtype=np.float64)
    assert all(p.dtype == np.float64 and p.flags.c_contiguous for p in loaded.params.values())
    ids, mask = batch()
    np.testing.assert_allclose(loaded(ids, attention_mask=mask).logits, ours(ids, attention_mask=mask).logits,
                               atol=1e-4)


def test_pytorch_model_bin_is_read_with_weights_only(tmp_path):
    ours = randomised(BertForPreTraining(tiny_config(), seed=5))
    state = {k: torch.from_numpy(v.copy()) for k, v in ours.params.items()}
    state["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"]  # shared, as torch saves
    torch.save(state, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(__import__("json").dumps(ours.config.to_dict()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        loaded = BertForPreTraining.from_pretrained(tmp_path)
    for k, v in ours.params.items():
        np.testing.assert_array_equal(loaded.params[k], v, err_msg=k)


def test_pytorch_pickle_with_code_is_refused(tmp_path):
    import pickle

    class Sneaky:
        def __reduce__(self):  # unpickling this would run code
            return (print, ("unpickled!",))

    with open(tmp_path / "pytorch_model.bin", "wb") as f:
        pickle.dump({"x": Sneaky()}, f, protocol=2)
    (tmp_path / "config.json").write_text(__import__("json").dumps(tiny_config().to_dict()))
    with pytest.raises(ValueError, match=r"pytorch_model\.bin: torch\.load\(weights_only=True\) refused"):
        BertModel.from_pretrained(tmp_path)
