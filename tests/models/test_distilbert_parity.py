"""DistilBertModel / DistilBertForMaskedLM against transformers' classes on identical weights, with padding:
outputs, hidden states, attentions, the loss and every parameter gradient (float32, and float64 to rounding)."""

import numpy as np
import pytest
from hf_reference import assert_grads_match, copy_weights, max_rel_diff, torch_grads

from minibert.distilbert_config import DistilBertConfig
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4


def config(act="gelu"):
    return DistilBertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=24, hidden_act=act,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def hf_config(cfg):
    hf = transformers.DistilBertConfig(**{k: v for k, v in cfg.to_dict().items() if k != "architectures"})
    hf._attn_implementation = "eager"
    return hf


def make_batch(cfg, seed=0):
    rng = np.random.default_rng(seed)
    B, T = 4, 16
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate([16, 11, 7, 16]):
        mask[b, :n] = 1
    ids[mask == 0] = 0
    ids[0, 5] = cfg.pad_token_id  # a [PAD] id at an attended position: no gradient into its row
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.25) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    return ids, mask, labels


def t(x):
    return torch.from_numpy(np.asarray(x))


def perturbed(model, seed):
    """LayerNorms and biases start at 1 and 0: move everything so each parameter matters."""
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    return model


@pytest.mark.parametrize("act", ["gelu", "relu"])
def test_masked_lm_loss_logits_and_every_gradient(act):
    cfg = config(act)
    model = perturbed(DistilBertForMaskedLM(cfg, seed=0), 0)
    hf = transformers.DistilBertForMaskedLM(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids, mask, labels = make_batch(cfg)
    types = np.ones_like(ids)  # ignored: DistilBERT has no token types (HF takes none)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    ref = hf(input_ids=t(ids), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    flat = ref.logits.detach().numpy().reshape(-1, cfg.vocab_size)[out.masked_positions]
    assert max_rel_diff(out.prediction_logits, flat) < TOL
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert "vocab_projector.weight" not in model.params  # tied to the word embeddings, as in HF
    assert_grads_match(model, torch_grads(hf), TOL)


def test_bare_model_outputs_hidden_states_attentions_and_gradients():
    cfg = config()
    model = perturbed(DistilBertModel(cfg, seed=1), 1)
    hf = transformers.DistilBertModel(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids, mask, _ = make_batch(cfg, seed=1)
    R = np.random.default_rng(2).standard_normal((*ids.shape, cfg.hidden_size)).astype(np.float32)
    out = model.forward(ids, attention_mask=mask, output_attentions=True, output_hidden_states=True)
    model.backward(R * mask[:, :, None])
    ref = hf(input_ids=t(ids), attention_mask=t(mask), output_attentions=True, output_hidden_states=True)
    (ref.last_hidden_state * t(R * mask[:, :, None])).sum().backward()
    valid = mask.astype(bool)
    assert out.pooler_output is None
    assert max_rel_diff(out.last_hidden_state[valid], ref.last_hidden_state.detach().numpy()[valid]) < TOL
    assert len(out.hidden_states) == len(ref.hidden_states) == cfg.num_hidden_layers + 1
    for ours, theirs in zip(out.hidden_states, ref.hidden_states):
        assert max_rel_diff(ours[valid], theirs.detach().numpy()[valid]) < TOL
    for ours, theirs in zip(out.attentions, ref.attentions):
        assert max_rel_diff(ours, theirs.detach().numpy()) < TOL
    assert_grads_match(model, torch_grads(hf), TOL)


def test_float64_parity_is_exact_to_rounding():
    cfg = config()
    model = perturbed(DistilBertForMaskedLM(cfg, seed=2, dtype=np.float64), 2)
    hf = transformers.DistilBertForMaskedLM(hf_config(cfg)).double().train()
    copy_weights(model, hf)
    ids, mask, labels = make_batch(cfg, seed=3)
    out = model.forward(ids, attention_mask=mask, labels=labels)
    model.backward()
    ref = hf(input_ids=t(ids), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-12)
    assert_grads_match(model, torch_grads(hf), 1e-9)
