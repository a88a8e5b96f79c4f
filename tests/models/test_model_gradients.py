"""float64 finite-difference check of whole models: d(loss)/d(every parameter), with padding, both token
types, dropout on (the same masks each call) and sparse MLM prediction."""

import numpy as np
import pytest
from gradcheck import check_grad

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

TOL = 1e-6


def tiny_config(**kw):
    values = dict(vocab_size=31, hidden_size=12, num_hidden_layers=2, num_attention_heads=3, intermediate_size=20,
                  max_position_embeddings=12, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    values.update(kw)
    return BertConfig(**values)


def batch(cfg, rng):
    ids = rng.integers(1, cfg.vocab_size, (2, 7))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2])
    ids[mask == 0] = 0
    types = np.array([[0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 1, 0, 0]])
    labels = np.full((2, 7), -100)
    labels[0, [1, 4]] = ids[0, [1, 4]]
    labels[1, [2, 3]] = rng.integers(1, cfg.vocab_size, 2)
    return ids, types, mask, labels


def _perturb(model, rng):
    for p in model.params.values():  # move away from the init (zero biases, unit LayerNorm) so all terms matter
        p += 0.05 * rng.standard_normal(p.shape)


@pytest.mark.parametrize("act", ["gelu", "gelu_pytorch_tanh"])
def test_pretraining_loss_gradient(act):
    cfg = tiny_config(hidden_act=act)
    rng = np.random.default_rng(0)
    model = BertForPreTraining(cfg, seed=1, dtype=np.float64)
    _perturb(model, rng)
    ids, types, mask, labels = batch(cfg, rng)
    nsl = np.array([0, 1])

    def loss():
        model.rng = np.random.default_rng(42)  # the same dropout masks every call
        return model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels,
                             next_sentence_label=nsl).loss

    loss()
    model.zero_grad()
    model.rng = np.random.default_rng(42)
    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
    model.backward()
    for name, p in model.params.items():
        err = check_grad(loss, p, model.grads[name], rng=rng, max_entries=12)
        assert err < TOL, f"{name}: relative error {err:.2e}"


def test_masked_lm_gradient():
    # (ReLU is checked per layer; here its kink at 0 would make finite differences unreliable)
    cfg = tiny_config(hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(3)
    model = BertForMaskedLM(cfg, seed=2, dtype=np.float64)
    _perturb(model, rng)
    ids, types, mask, labels = batch(cfg, rng)
    loss = lambda: model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels).loss  # noqa: E731
    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    for name, p in model.params.items():
        assert check_grad(loss, p, model.grads[name], rng=rng, max_entries=8) < TOL, name


def test_bert_model_backward_from_both_outputs():
    cfg = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(4)
    model = BertModel(cfg, seed=3, dtype=np.float64)
    _perturb(model, rng)
    ids, types, mask, _ = batch(cfg, rng)
    R1, R2 = rng.standard_normal((2, 7, 12)), rng.standard_normal((2, 12))

    def f():
        out = model.forward(ids, token_type_ids=types, attention_mask=mask)
        return float((out.last_hidden_state * R1).sum() + (out.pooler_output * R2).sum())

    f()
    model.backward(R1, R2)
    for name, p in model.params.items():
        assert check_grad(f, p, model.grads[name], rng=rng, max_entries=8) < TOL, name


def test_gradients_accumulate_and_zero():
    cfg = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(5)
    model = BertForPreTraining(cfg, dtype=np.float64)
    ids, types, mask, labels = batch(cfg, rng)
    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    once = {k: g.copy() for k, g in model.grads.items()}
    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward(loss_scale=0.5)
    for k in once:
        np.testing.assert_allclose(model.grads[k], 1.5 * once[k], rtol=1e-10, atol=1e-14)
    model.zero_grad()
    assert all(not g.any() for g in model.grads.values())


def test_pretraining_gradient_with_separate_mlm_and_nsp_weights():
    # backward(loss_scale=a, mlm_scale=b) is d(b * mlm_loss + a * nsp_loss): data-parallel training weights
    # each rank's MLM loss by its share of the masked tokens and its NSP loss by 1 / ranks.
    cfg = tiny_config(hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    rng = np.random.default_rng(5)
    model = BertForPreTraining(cfg, seed=3, dtype=np.float64)
    _perturb(model, rng)
    ids, types, mask, labels = batch(cfg, rng)
    nsl = np.array([1, 0])
    a, b = 0.5, 0.3

    def loss():
        out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
        return b * out.mlm_loss + a * out.nsp_loss

    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
    model.backward(loss_scale=a, mlm_scale=b)
    for name, p in model.params.items():
        assert check_grad(loss, p, model.grads[name], rng=rng, max_entries=8) < TOL, name
