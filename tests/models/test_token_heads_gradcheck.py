"""BertForTokenClassification's and BertForQuestionAnswering's hand-written backward against float64 finite
differences, with dropout on, padding, a second segment and ignored labels/positions."""

import numpy as np
import pytest

from gradcheck import check_model_gradients
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification
from test_classification_gradcheck import batch, tiny_config


def dropout_config():
    config = tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    config.extra["classifier_dropout"] = 0.3
    return config


def test_token_classification_gradients():
    model = BertForTokenClassification(dropout_config(), num_labels=5, seed=3, dtype=np.float64)
    ids, types, mask = batch(np.random.default_rng(0))
    labels = np.random.default_rng(2).integers(0, 5, size=ids.shape)
    labels[mask == 0] = -100  # padding
    labels[:, 0] = -100  # [CLS]
    labels[0, 3] = -100  # a non-first word piece
    check_model_gradients(model, lambda m: m.forward(ids, token_type_ids=types, attention_mask=mask,
                                                     labels=labels).loss)


def test_question_answering_gradients():
    model = BertForQuestionAnswering(tiny_config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1),
                                     seed=3, dtype=np.float64)
    ids, types, mask = batch(np.random.default_rng(0))
    # Row 2's end lies beyond the sequence: clipped to T, ignored (only its start counts).
    start, end = np.array([1, 4, 0]), np.array([2, 5, 99])
    check_model_gradients(model, lambda m: m.forward(ids, token_type_ids=types, attention_mask=mask,
                                                     start_positions=start, end_positions=end).loss)


def test_all_ignored_gives_zero_loss_and_zero_head_gradient():
    model = BertForTokenClassification(tiny_config(), num_labels=3, dtype=np.float64).eval()
    ids, types, mask = batch(np.random.default_rng(0))
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=np.full(ids.shape, -100))
    model.backward()
    assert out.loss == 0.0 and not model.grads["classifier.weight"].any()


@pytest.mark.parametrize("bad, message", [
    (dict(labels=np.zeros((3, 6), dtype=np.int64)), "labels has shape"),
    (dict(labels=np.full((3, 7), 4)), r"-100 \(ignored\) or in 0..2"),
])
def test_token_labels_checked(bad, message):
    model = BertForTokenClassification(tiny_config(), num_labels=3)
    ids, types, mask = batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match=message):
        model.forward(ids, token_type_ids=types, attention_mask=mask, **bad)


def test_question_answering_positions_checked():
    model = BertForQuestionAnswering(tiny_config())
    ids, types, mask = batch(np.random.default_rng(0))
    with pytest.raises(ValueError, match="both start_positions and end_positions"):
        model.forward(ids, start_positions=[0, 1, 2])
    with pytest.raises(ValueError, match="one position per sequence"):
        model.forward(ids, start_positions=[0, 1], end_positions=[0, 1])
