"""BertForSequenceClassification's hand-written backward against float64 finite differences."""

import numpy as np
import pytest

from gradcheck import check_model_gradients
from minibert.config import BertConfig
from minibert.models.classification import BertForSequenceClassification


def tiny_config(**overrides):
    values = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                  max_position_embeddings=12)
    values.update(overrides)
    return BertConfig(**values)


def batch(rng, B=3, T=7, vocab=40):
    """A padded batch of sentence pairs: row b has T - b real tokens."""
    ids = rng.integers(1, vocab, size=(B, T))
    mask = np.ones((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    for b in range(B):
        mask[b, T - b:] = 0
        ids[b, T - b:] = 0
        types[b, (T - b) // 2:T - b] = 1
    return ids, types, mask


def named(inputs):
    """(ids, types, mask) as forward's keyword arguments (every input after input_ids is keyword-only)."""
    ids, types, mask = inputs
    return dict(input_ids=ids, token_type_ids=types, attention_mask=mask)


def check_gradients(model, inputs, labels):
    check_model_gradients(model, lambda m: m.forward(**named(inputs), labels=labels).loss)


@pytest.mark.parametrize("problem_type, num_labels", [
    ("single_label_classification", 3),
    ("regression", 1),
    ("multi_label_classification", 4),
])
def test_gradients_match_finite_differences(problem_type, num_labels):
    # Dropout on (body and classifier) to check the masks' backward too; padding and a segment B present.
    config = tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    config.extra["problem_type"] = problem_type
    config.extra["classifier_dropout"] = 0.3
    model = BertForSequenceClassification(config, num_labels=num_labels, seed=3, dtype=np.float64)
    rng = np.random.default_rng(0)
    inputs = batch(rng)
    if problem_type == "single_label_classification":
        labels = np.array([0, 2, 1])
    elif problem_type == "regression":
        labels = rng.normal(size=3)
    else:
        labels = (rng.random((3, num_labels)) > 0.5).astype(np.float64)
    check_gradients(model, inputs, labels)


def test_backward_with_given_dlogits_matches_loss_backward():
    # backward(dlogits=...) with the cross-entropy's own gradient must give the same grads as backward().
    model = BertForSequenceClassification(tiny_config(), num_labels=3, dtype=np.float64).eval()
    inputs, labels = batch(np.random.default_rng(0)), np.array([2, 0, 1])
    out = model.forward(**named(inputs), labels=labels)
    model.backward()
    expected = {k: g.copy() for k, g in model.grads.items()}
    model.zero_grad()
    logits = model.forward(**named(inputs)).logits
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    probs[np.arange(3), labels] -= 1
    model.backward(dlogits=probs / 3)
    assert out.loss > 0
    for name in expected:
        np.testing.assert_allclose(model.grads[name], expected[name], rtol=1e-10, atol=1e-14, err_msg=name)
