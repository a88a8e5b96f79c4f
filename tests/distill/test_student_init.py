"""A student made from all of a teacher's layers is the teacher (type-0 inputs): same hidden states and MLM
logits; one made from some layers has exactly those layers; bad layer choices are refused."""

import numpy as np
import pytest

from minibert import BertConfig, BertForMaskedLM, BertModel
from minibert.distill.student import default_teacher_layers, has_mlm_head, student_from_teacher
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel


def teacher(cls, seed=0):
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=4, num_attention_heads=2, intermediate_size=24,
                     max_position_embeddings=12, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    model = cls(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p += rng.normal(0, 0.1, p.shape).astype(p.dtype)  # the type-0 row is far from zero: folding matters
    return model.eval()


def batch():
    rng = np.random.default_rng(5)
    ids = rng.integers(1, 50, (3, 9))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    return ids, mask


def test_student_with_all_layers_reproduces_the_mlm_teacher():
    t = teacher(BertForMaskedLM)
    s = student_from_teacher(t, [0, 1, 2, 3], mlm_head=True).eval()
    assert isinstance(s, DistilBertForMaskedLM) and s.config.num_hidden_layers == 4
    ids, mask = batch()
    ours = s.forward(ids, attention_mask=mask, output_hidden_states=True)
    ref = t.forward(ids, attention_mask=mask, output_hidden_states=True)
    valid = mask.astype(bool)
    for a, b in zip(ours.hidden_states, ref.hidden_states):
        np.testing.assert_allclose(a[valid], b[valid], atol=1e-5)
    np.testing.assert_allclose(ours.prediction_logits[valid], ref.prediction_logits[valid], atol=1e-4)
    # without the fold (type-0 row dropped) the states differ: the test above can fail
    type_0 = t.params["bert.embeddings.token_type_embeddings.weight"][0]
    s.params["distilbert.embeddings.position_embeddings.weight"] -= type_0
    assert np.abs(s.forward(ids, attention_mask=mask).prediction_logits - ref.prediction_logits).max() > 1e-2


def test_student_from_a_bare_teacher_takes_the_chosen_layers():
    t = teacher(BertModel, seed=1)
    s = student_from_teacher(t, [0, 3], mlm_head=False, dropout=0.0)
    assert isinstance(s, DistilBertModel) and s.training and s.config.hidden_dropout_prob == 0.0
    np.testing.assert_array_equal(s.params["transformer.layer.1.ffn.lin1.weight"],
                                  t.params["encoder.layer.3.intermediate.dense.weight"])
    np.testing.assert_array_equal(s.params["transformer.layer.0.attention.q_lin.bias"],
                                  t.params["encoder.layer.0.attention.self.query.bias"])
    with pytest.raises(ValueError, match="is it a BERT with an MLM head"):
        student_from_teacher(t, [0, 3], mlm_head=True)
    with pytest.raises(ValueError, match=r"--teacher-layers must name layers in 0..3, got \[0, 4\]"):
        student_from_teacher(t, [0, 4], mlm_head=False)


def test_default_layers_and_head_detection(tmp_path):
    assert default_teacher_layers(12, 6) == [0, 2, 4, 7, 9, 11]  # DistilBERT's own choice
    assert default_teacher_layers(6, 3) == [0, 2, 5]
    assert default_teacher_layers(6, 6) == [0, 1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="--student-layers must be in 1..6"):
        default_teacher_layers(6, 7)
    teacher(BertForMaskedLM).save_pretrained(tmp_path / "mlm")
    teacher(BertModel).save_pretrained(tmp_path / "bare")
    assert has_mlm_head(tmp_path / "mlm") and not has_mlm_head(tmp_path / "bare")
