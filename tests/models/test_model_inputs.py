"""Bad input gets one clear ValueError naming the value and the limit."""

import numpy as np
import pytest

from minibert import BertConfig, BertForPreTraining, BertModel


@pytest.fixture(scope="module")
def model():
    return BertForPreTraining(BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=8))


def test_token_id_out_of_range(model):
    with pytest.raises(ValueError, match=r"token id 50 is out of range: vocab_size is 50"):
        model.forward(np.array([[1, 2, 50]]))
    with pytest.raises(ValueError, match=r"token id -1"):
        model.forward(np.array([[1, -1, 3]]))


def test_sequence_too_long(model):
    with pytest.raises(ValueError, match=r"sequence length 9 is longer than the 8 tokens"):
        model.forward(np.ones((1, 9), dtype=np.int64))


def test_mismatched_shapes(model):
    ids = np.ones((2, 5), dtype=np.int64)
    with pytest.raises(ValueError, match=r"attention_mask has shape \(2, 4\) but input_ids has shape \(2, 5\)"):
        model.forward(ids, attention_mask=np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"token_type_ids has shape"):
        model.forward(ids, token_type_ids=np.zeros((3, 5), dtype=np.int64))
    with pytest.raises(ValueError, match=r"labels has shape \(2, 3\), expected \(2, 5\)"):
        model.forward(ids, labels=np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match=r"token_type_ids must be in 0..1"):
        model.forward(ids, token_type_ids=np.full((2, 5), 2))
    with pytest.raises(ValueError, match=r"input_ids must be integers"):
        model.forward(np.ones((2, 5)))


def test_label_out_of_range(model):
    with pytest.raises(ValueError, match=r"labels must be -100 \(ignored\) or in 0..49"):
        model.forward(np.ones((1, 4), dtype=np.int64), labels=np.array([[-100, 60, -100, -100]]))


def test_backward_before_forward():
    m = BertModel(BertConfig.preset("tiny", vocab_size=50))
    with pytest.raises(ValueError, match="backward"):
        m.backward(np.zeros((1, 2, 128)))


def test_config_errors():
    with pytest.raises(ValueError, match=r"hidden_size \(100\) must be divisible by num_attention_heads \(3\)"):
        BertConfig(hidden_size=100, num_attention_heads=3)
    with pytest.raises(ValueError, match=r"hidden_act 'swish' is not supported"):
        BertConfig(hidden_act="swish")
    with pytest.raises(ValueError, match=r"unknown config preset 'huge'"):
        BertConfig.preset("huge")
    with pytest.raises(ValueError, match=r"vocab_size must be a positive integer"):
        BertConfig(vocab_size=0)


def test_more_bad_inputs(model):
    ids = np.ones((2, 4), dtype=np.int64)
    with pytest.raises(ValueError, match=r"next_sentence_label must be -100 \(ignored\) or in 0..1, got 0..2"):
        model.forward(ids, next_sentence_label=np.array([0, 2]))
    with pytest.raises(ValueError, match=r"next_sentence_label has shape \(3,\), expected \(2,\)"):
        model.forward(ids, next_sentence_label=np.array([0, 1, 1]))
    with pytest.raises(ValueError, match=r"found \[2\]"):
        model.forward(ids, attention_mask=np.array([[1, 1, 2, 0], [1, 1, 1, 1]]))
    with pytest.raises(ValueError, match=r"input_ids has shape \(0, 4\)"):
        model.forward(np.ones((0, 4), dtype=np.int64))
    with pytest.raises(ValueError, match=r"token_type_ids must be integers"):
        model.forward(ids, token_type_ids=np.full((2, 4), 0.7))
    with pytest.raises(ValueError, match=r"labels must be integers"):
        model.forward(ids, labels=np.full((2, 4), 3.7))


def test_per_sequence_labels_may_be_a_column(model):
    ids = np.ones((2, 4), dtype=np.int64)
    model.eval()  # no dropout: two forwards of the same batch give the same loss
    a = model.forward(ids, next_sentence_label=np.array([0, 1])).loss
    b = model.forward(ids, next_sentence_label=np.array([[0], [1]])).loss
    model.train()
    assert a == b


def test_a_failed_forward_leaves_nothing_for_backward(model):
    ids = np.ones((2, 4), dtype=np.int64)
    model.forward(ids, labels=ids)
    with pytest.raises(ValueError):
        model.forward(ids, labels=np.full((2, 4), 999))  # rejected before any work
    with pytest.raises(ValueError, match="backward"):
        model.backward()  # the earlier batch's caches are gone, not mixed with the new one
    model.forward(ids)  # no targets
    with pytest.raises(ValueError, match="backward"):
        model.backward()


def test_a_failed_classifier_forward_leaves_nothing_for_backward():
    from minibert.models.classification import BertForSequenceClassification
    classifier = BertForSequenceClassification(BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=8),
                                               num_labels=3)
    ids = np.ones((2, 4), dtype=np.int64)
    classifier.forward(ids, labels=np.array([0, 2]))
    with pytest.raises(ValueError):
        classifier.forward(ids, labels=np.array([0, 7]))  # class 7 of 3: the labels are refused
    with pytest.raises(ValueError, match="backward"):
        classifier.backward()  # the earlier batch's head caches are gone, not paired with the new encoder caches


def test_a_misspelt_output_field_raises(model):
    out = model.forward(np.ones((1, 3), dtype=np.int64))
    assert out.loss is None  # computed fields are always present
    with pytest.raises(AttributeError, match="prediction_logit"):
        out.prediction_logit  # noqa: B018 (reading the misspelt field is what raises)


def test_model_refuses_an_invalid_config_changed_after_creation():
    cfg = BertConfig.preset("tiny", vocab_size=50)
    cfg.num_attention_heads = 3
    with pytest.raises(ValueError, match="divisible"):
        BertModel(cfg)


def test_a_forward_frees_the_previous_forwards_activations_before_making_its_own():
    # Evaluation runs forward after forward without backward: two batches' activations must never be alive
    # together (for mini at 32 x 64 tokens that would be ~300 MB instead of ~150 MB).
    import tracemalloc
    from minibert.config import BertConfig
    from minibert.models import BertForPreTraining
    cfg = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=128,
                     max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = BertForPreTraining(cfg, seed=0).eval()
    ids = np.random.default_rng(0).integers(5, 50, (16, 64))
    labels = np.where(ids % 7 == 0, ids, -100)
    model.forward(ids, labels=labels)  # warm-up (lazy imports, caches of NumPy)
    model._cache = model.bert._cache = None
    tracemalloc.start()
    try:
        model.forward(ids, labels=labels)
        kept = tracemalloc.get_traced_memory()[0]  # one forward's activations, kept for a backward
        tracemalloc.reset_peak()
        model.forward(ids, labels=labels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * kept, (peak, kept)
