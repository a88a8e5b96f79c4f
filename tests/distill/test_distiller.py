"""The Distiller's total loss against float64 finite differences (every loss on, both modes), its values for a
student that equals its teacher, and the teacher staying untouched (no gradient, eval mode)."""

import numpy as np
import pytest
from gradcheck import check_grad

from minibert import BertConfig, BertForMaskedLM, BertModel
from minibert.distill.distiller import Distiller
from minibert.distill.student import student_from_teacher

TOL = 1e-6


def teacher(cls, dtype=np.float64):
    cfg = BertConfig(vocab_size=30, hidden_size=12, num_hidden_layers=3, num_attention_heads=3, intermediate_size=16,
                     max_position_embeddings=10, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    model = cls(cfg, seed=0, dtype=dtype)
    rng = np.random.default_rng(0)
    for p in model.params.values():
        p += 0.1 * rng.standard_normal(p.shape)
    return model.eval()


def batch():
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 30, (2, 7))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2])
    ids[mask == 0] = 0
    labels = np.full((2, 7), -100)
    labels[0, [1, 4]], labels[1, 2] = ids[0, [1, 4]], ids[1, 2]
    ids[0, 1] = ids[1, 2] = 4  # [MASK]-like ids at the labelled positions
    return ids, mask, labels


@pytest.mark.parametrize("mode", ["mlm", "hidden"])
def test_total_loss_gradient(mode):
    t = teacher(BertForMaskedLM if mode == "mlm" else BertModel)
    student = student_from_teacher(t, [0, 2], mlm_head=mode == "mlm", dropout=0.1)
    rng = np.random.default_rng(2)
    for p in student.params.values():  # away from the teacher, so every loss has a gradient
        p += 0.05 * rng.standard_normal(p.shape)
    weights = dict(alpha_cos=0.7, alpha_mse=0.3, alpha_pool=1.1)
    if mode == "mlm":
        weights.update(alpha_ce=1.5, alpha_mlm=0.6)
    d = Distiller(student, t, mode, temperature=2.0, **weights)
    ids, mask, labels = batch()

    def loss():
        student.rng = np.random.default_rng(7)  # the same dropout masks every call
        return d.forward(ids, attention_mask=mask, labels=labels).loss

    out = d.forward(ids, attention_mask=mask, labels=labels)
    assert set(out.parts) == ({"kd_loss", "cos_loss", "mse_loss", "pool_loss"} if mode == "mlm"
                              else {"cos_loss", "mse_loss", "pool_loss"})
    d.zero_grad()
    loss()
    d.backward(loss_scale=0.5)
    for name, p in student.params.items():
        err = check_grad(lambda: 0.5 * loss(), p, student.grads[name], rng=rng, max_entries=6)
        assert err < TOL, f"{name}: relative error {err:.2e}"
    assert all(not g.any() for g in t.grads.values())  # the teacher learns nothing
    d.train()
    assert student.training and not t.training


@pytest.mark.parametrize("mode", ["mlm", "hidden"])
def test_a_student_equal_to_its_teacher_has_zero_distillation_loss(mode):
    t = teacher(BertForMaskedLM if mode == "mlm" else BertModel, dtype=np.float32)
    d = Distiller(student_from_teacher(t, [0, 1, 2], mlm_head=mode == "mlm", dropout=0.0), t, mode,
                  alpha_mse=1.0, alpha_pool=1.0)
    ids, mask, labels = batch()
    out = d.forward(ids, attention_mask=mask, labels=labels)
    for name, value in out.parts.items():
        assert value == pytest.approx(0.0, abs=1e-5), name
    if mode == "hidden":  # the masked tokens were put back: the teacher saw the real text
        assert out.mlm_loss == 0.0 and out.masked_positions.size == 0


def test_bad_weights_are_refused():
    t = teacher(BertModel)
    s = student_from_teacher(t, [0], mlm_head=False)
    with pytest.raises(ValueError, match="--alpha-ce and --alpha-mlm need a teacher with an MLM head"):
        Distiller(s, t, "hidden", alpha_ce=1.0)
    with pytest.raises(ValueError, match="every loss weight is 0"):
        Distiller(s, t, "hidden", alpha_cos=0.0, alpha_pool=0.0)


@pytest.mark.parametrize("mode", ["mlm", "hidden"])
def test_recompute_in_the_student_changes_no_bit_and_the_teacher_keeps_no_activations(mode):
    t = teacher(BertForMaskedLM if mode == "mlm" else BertModel, dtype=np.float32)
    ids, mask, labels = batch()
    results = []
    for recompute in (False, True):
        student = student_from_teacher(t, [0, 2], mlm_head=mode == "mlm", dropout=0.1)
        d = Distiller(student, t, mode, alpha_mse=1.0).set_recompute(recompute)
        assert t.recompute and d.recompute == recompute  # the teacher is never backpropagated
        d.zero_grad()
        out = d.forward(ids, attention_mask=mask, labels=labels)
        d.backward()
        results.append((float(out.loss), {n: g.copy() for n, g in student.grads.items()}))
    assert results[0][0] == results[1][0]
    for name, g in results[0][1].items():
        np.testing.assert_array_equal(results[1][1][name], g, err_msg=name)


def test_inputs_after_input_ids_are_keyword_only():
    # As every model's forward: transformers' positional order (ids, mask, types) must not be read as (ids, types).
    import inspect
    from minibert.distill.distiller import Distiller
    params = list(inspect.signature(Distiller.forward).parameters.values())[2:]
    assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
