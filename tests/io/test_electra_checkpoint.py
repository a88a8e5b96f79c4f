"""ELECTRA checkpoints in Hugging Face's format: the pre-training folder holds the discriminator (loads in
ElectraForPreTraining) and generator/ (loads in ElectraForMaskedLM); round trips both ways give identical outputs."""

import json
import warnings

import numpy as np
import pytest
from electra_reference import electra_batch

from minibert.config import BertConfig
from minibert.models.electra import ElectraForMaskedLM, ElectraForPreTraining
from minibert.models.electra_pretraining import GEN, ElectraPretrainer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def config():
    return BertConfig(vocab_size=53, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=40, max_position_embeddings=20, embedding_size=16)


def t(x):
    return torch.from_numpy(np.asarray(x))


def test_pretraining_folder_loads_in_transformers_and_back(tmp_path):
    model = ElectraPretrainer(config(), seed=7)
    for p in model.params.values():  # non-trivial biases and LayerNorms: a lost tensor must show
        p += 0.05 * np.random.default_rng(1).standard_normal(p.shape).astype(p.dtype)
    model.save_pretrained(tmp_path)
    disc_cfg = json.loads((tmp_path / "config.json").read_text())
    gen_cfg = json.loads((tmp_path / "generator" / "config.json").read_text())
    assert (disc_cfg["model_type"], disc_cfg["architectures"], disc_cfg["embedding_size"]) == \
        ("electra", ["ElectraForPreTraining"], 16)
    assert (gen_cfg["architectures"], gen_cfg["hidden_size"], gen_cfg["embedding_size"]) == \
        (["ElectraForMaskedLM"], 8, 16)

    ids, types, mask, _, _ = electra_batch(model.config, seed=3)
    valid = mask.astype(bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no missing or unexpected weight on either side
        hf_disc = transformers.ElectraForPreTraining.from_pretrained(tmp_path).eval()
        hf_gen = transformers.ElectraForMaskedLM.from_pretrained(tmp_path / "generator").eval()
    assert hf_disc.electra.embeddings_project.weight.shape == (32, 16)
    with torch.no_grad():
        d_ref = hf_disc(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask)).logits.numpy()
        g_ref = hf_gen(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask)).logits.numpy()
    model.eval()
    d_ours = model.discriminator.forward(ids, token_type_ids=types, attention_mask=mask).logits
    g_ours = model.generator.forward(ids, token_type_ids=types, attention_mask=mask).prediction_logits
    np.testing.assert_allclose(d_ours[valid], d_ref[valid], atol=1e-5)
    np.testing.assert_allclose(g_ours[valid], g_ref[valid], atol=1e-5)

    # transformers -> its own folders -> minibert: every parameter identical
    hf_disc.save_pretrained(tmp_path / "hf")
    hf_gen.save_pretrained(tmp_path / "hf" / "generator")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = ElectraPretrainer.from_pretrained(tmp_path / "hf")
    assert set(back.params) == set(model.params)
    for name, value in model.params.items():
        np.testing.assert_array_equal(back.params[name], value, err_msg=name)
    assert back.gen_config.hidden_size == 8 and back.params[GEN + "generator_lm_head.bias"].shape == (53,)


def test_generator_embeddings_differing_from_discriminator_warn(tmp_path):
    model = ElectraPretrainer(config(), seed=1)
    model.save_pretrained(tmp_path)
    gen = ElectraForMaskedLM.from_pretrained(tmp_path / "generator")
    gen.params["electra.embeddings.word_embeddings.weight"][3] += 1.0
    gen.save_pretrained(tmp_path / "generator")
    with pytest.warns(UserWarning, match="differs from the discriminator's"):
        ElectraPretrainer.from_pretrained(tmp_path)


def test_folder_without_generator_is_a_clear_error(tmp_path):
    ElectraForPreTraining(config()).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="no generator/ folder"):
        ElectraPretrainer.from_pretrained(tmp_path)


def test_finetuning_a_projected_discriminator_is_a_clear_error(tmp_path):
    from minibert.finetune.loading import load_for_finetuning
    ElectraForPreTraining(config()).save_pretrained(tmp_path)  # embedding_size 16, hidden_size 32
    with pytest.raises(ValueError, match="embedding_size 16 != hidden_size 32.*not supported"):
        load_for_finetuning(tmp_path, ["a", "b"], log=lambda *a: None)
