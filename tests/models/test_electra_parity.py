"""ELECTRA's discriminator and generator against transformers' ElectraForPreTraining / ElectraForMaskedLM on
identical random weights, with padding: outputs, loss and every parameter gradient (float32, 1e-4 of scale)."""

import numpy as np
import pytest
from electra_reference import electra_batch, electra_config
from hf_reference import assert_grads_match, check_masked_lm, copy_weights, max_rel_diff, torch_grads

from minibert.config import BertConfig
from minibert.models.electra import ElectraForMaskedLM, ElectraForPreTraining, generator_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4


def config(embedding_size=None, act="gelu"):
    return BertConfig(vocab_size=61, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=20, hidden_act=act, embedding_size=embedding_size,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def t(x):
    return torch.from_numpy(np.asarray(x))


@pytest.mark.parametrize("embedding_size,act", [(None, "gelu"), (16, "gelu_new")])
def test_discriminator_matches_electra_for_pretraining(embedding_size, act):
    cfg = config(embedding_size, act)
    model = ElectraForPreTraining(cfg, seed=3)
    hf = transformers.ElectraForPreTraining(electra_config(cfg)).train()
    assert ("electra.embeddings_project.weight" in dict(hf.named_parameters())) == (embedding_size is not None)
    copy_weights(model, hf)  # every torch parameter has its minibert twin, by name
    ids, types, mask, _, replaced = electra_batch(cfg)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=replaced)
    model.backward()
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(replaced))
    ref.loss.backward()
    assert out.logits.shape == ids.shape
    assert max_rel_diff(out.logits, ref.logits.detach().numpy()) < TOL
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert set(model.params) == {n for n, _ in hf.named_parameters()}
    assert_grads_match(model, torch_grads(hf), TOL)


def test_generator_matches_electra_for_masked_lm():
    # relu in the body: transformers' generator head hard-codes exact GELU, which must then differ from hidden_act
    disc = config(embedding_size=16, act="relu")
    cfg = generator_config(disc, 0.25)  # 8 wide, one head of 8, projected from the 16-wide embeddings
    assert (cfg.hidden_size, cfg.num_attention_heads, cfg.embedding_size) == (8, 1, 16)
    model = ElectraForMaskedLM(cfg, seed=4)
    hf = transformers.ElectraForMaskedLM(electra_config(cfg)).train()
    copy_weights(model, hf)
    ids, types, mask, labels, _ = electra_batch(cfg, seed=1)
    check_masked_lm(model, hf, ids, types, mask, labels, TOL)  # every gradient, the tied decoder's share included

    model.eval()
    with torch.no_grad():
        full = hf.eval()(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask)).logits.numpy()
    valid = mask.astype(bool)
    got = model.forward(ids, token_type_ids=types, attention_mask=mask).prediction_logits
    assert max_rel_diff(got[valid], full[valid]) < TOL
