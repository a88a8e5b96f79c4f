"""Bad arguments to the models' backward() and to BertConfig get one ValueError naming the argument and saying
what was expected: no silent broadcasting of a gradient, no silently ignored config option."""

import json
import re

import numpy as np
import pytest

from minibert import BertConfig
from minibert.models.bert import BertModel
from minibert.models.classification import BertForSequenceClassification
from minibert.models.electra import ElectraForMaskedLM, ElectraForPreTraining
from minibert.models.pretraining import BertForMaskedLM, BertForPreTraining
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification

IDS = [[1, 2, 3], [4, 5, 6]]
MLM_LABELS = [[-100, 2, -100], [4, -100, -100]]  # two labelled positions: the logits are (2, 50)


def tiny(**overrides):
    return BertConfig.preset("tiny", **{**dict(vocab_size=50, hidden_size=16, num_attention_heads=2,
                                                intermediate_size=32, num_hidden_layers=1,
                                                max_position_embeddings=8), **overrides})


def distilbert_classifier():
    from minibert.distilbert_config import DistilBertConfig
    from minibert.models.distilbert_classification import DistilBertForSequenceClassification
    return DistilBertForSequenceClassification(DistilBertConfig.from_bert(tiny()), num_labels=2)


def assert_no_grads(model):
    assert all(not g.any() for g in model.grads.values()), "a refused backward() must not accumulate anything"


# ---------------------------------------------------------------- gradient arguments of backward()
@pytest.mark.parametrize("cls", [BertForMaskedLM, ElectraForMaskedLM])
@pytest.mark.parametrize("shape", [(50,), (3, 50), (2, 49), (1, 50), ()])
def test_masked_lm_d_logits_shape(cls, shape):
    m = cls(tiny())
    m.forward(IDS, labels=MLM_LABELS)
    with pytest.raises(ValueError, match=rf"d_logits has shape {re_shape(shape)}, expected \(2, 50\)"):
        m.backward(d_logits=np.ones(shape))
    assert_no_grads(m)


def test_masked_lm_bad_d_last_hidden_state_leaves_grads_untouched():
    m = BertForMaskedLM(tiny())
    m.forward(IDS, labels=MLM_LABELS, output_hidden_states=True)
    with pytest.raises(ValueError, match=r"d_last_hidden_state has shape \(16,\), expected \(2, 3, 16\)"):
        m.backward(d_last_hidden_state=np.ones(16))
    assert_no_grads(m)


def test_masked_lm_good_gradients_still_accepted():
    m = BertForMaskedLM(tiny())
    m.forward(IDS, labels=MLM_LABELS, output_hidden_states=True)
    m.backward(d_logits=np.ones((2, 50), np.float32), d_last_hidden_state=np.ones((2, 3, 16)))
    assert m.grads["cls.predictions.bias"].any()


@pytest.mark.parametrize("make", [lambda: BertForSequenceClassification(tiny(), num_labels=2),
                                  distilbert_classifier], ids=["bert", "distilbert"])
@pytest.mark.parametrize("shape", [(2,), (2, 3), (4,), (1, 2), (2, 2, 1), ()])
def test_sequence_classification_dlogits_shape(make, shape):
    m = make()
    m.forward(IDS)
    with pytest.raises(ValueError, match=rf"dlogits has shape {re_shape(shape)}, expected \(2, 2\)"):
        m.backward(dlogits=np.ones(shape))
    assert_no_grads(m)


@pytest.mark.parametrize("shape", [(6,), (6, 3), (2, 3), (2, 3, 2), (3,)])
def test_token_classification_dlogits_shape(shape):
    m = BertForTokenClassification(tiny(), num_labels=3)
    m.forward(IDS)
    with pytest.raises(ValueError, match=rf"dlogits has shape {re_shape(shape)}, expected \(2, 3, 3\)"):
        m.backward(dlogits=np.ones(shape))
    assert_no_grads(m)


@pytest.mark.parametrize("name", ["dstart_logits", "dend_logits"])
@pytest.mark.parametrize("shape", [(3,), (1,), (), (2, 4), (2, 3, 1)])
def test_question_answering_logit_gradients_shape(name, shape):
    m = BertForQuestionAnswering(tiny())
    m.forward(IDS)
    with pytest.raises(ValueError, match=rf"{name} has shape {re_shape(shape)}, expected \(2, 3\)"):
        m.backward(**{name: np.ones(shape)})
    assert_no_grads(m)


def test_gradient_dtype_is_checked():
    m = BertForSequenceClassification(tiny(), num_labels=2)
    m.forward(IDS)
    with pytest.raises(ValueError, match=r"dlogits must be a real-valued array, got dtype <U1"):
        m.backward(dlogits=np.full((2, 2), "a"))


def test_good_logit_gradients_give_the_loss_gradients():
    """dlogits of the exact shape, lists included, still work as before."""
    m = BertForQuestionAnswering(tiny())
    m.forward(IDS)
    m.backward(dstart_logits=[[1.0, 0, 0], [0, 1, 0]])
    assert m.grads["qa_outputs.bias"][0] == 2 and m.grads["qa_outputs.bias"][1] == 0
    t = BertForTokenClassification(tiny(), num_labels=3)
    t.forward(IDS)
    t.backward(dlogits=np.ones((2, 3, 3)))
    np.testing.assert_allclose(t.grads["classifier.bias"], 6)


def forward_with_targets(name):
    ids = np.array(IDS)
    if name == "pretraining":
        m = BertForPreTraining(tiny())
        m.forward(ids, labels=MLM_LABELS, next_sentence_label=[0, 1])
    elif name == "masked_lm":
        m = BertForMaskedLM(tiny())
        m.forward(ids, labels=MLM_LABELS)
    elif name == "classification":
        m = BertForSequenceClassification(tiny(), num_labels=2)
        m.forward(ids, labels=[0, 1])
    elif name == "distilbert":
        m = distilbert_classifier()
        m.forward(ids, labels=[0, 1])
    elif name == "tokens":
        m = BertForTokenClassification(tiny(), num_labels=3)
        m.forward(ids, labels=[[0, 1, 2], [2, 1, 0]])
    elif name == "qa":
        m = BertForQuestionAnswering(tiny())
        m.forward(ids, start_positions=[0, 1], end_positions=[1, 2])
    else:
        m = ElectraForPreTraining(tiny())
        m.forward(ids, labels=[[0, 1, 0], [1, 0, 0]])
    return m


@pytest.mark.parametrize("name", ["pretraining", "masked_lm", "classification", "distilbert", "tokens", "qa",
                                  "electra"])
def test_backward_twice_says_forward_must_run_again(name):
    m = forward_with_targets(name)
    m.backward()
    with pytest.raises(ValueError, match=r"call forward\(\) again before each backward\(\)"):
        m.backward()


# ---------------------------------------------------------------- config options minibert does not implement
REAL_KEYS = {"model_type": "bert", "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 1,
             "num_attention_heads": 2, "intermediate_size": 32}


@pytest.mark.parametrize("key,value,message", [
    ("position_embedding_type", "relative_key",
     r"position_embedding_type 'relative_key' is not supported \(only 'absolute'\)"),
    ("position_embedding_type", "relative_key_query", r"position_embedding_type 'relative_key_query' is not"),
    ("position_embedding_type", None, r"position_embedding_type None is not supported \(only 'absolute'\)"),
    ("is_decoder", True, r"is_decoder true is not supported: minibert's models are encoders"),
    ("add_cross_attention", True, r"add_cross_attention true is not supported: minibert's models are encoders"),
])
def test_unsupported_config_options_are_refused(tmp_path, key, value, message):
    with pytest.raises(ValueError, match=message):
        BertConfig.from_dict({**REAL_KEYS, key: value})
    (tmp_path / "config.json").write_text(json.dumps({**REAL_KEYS, key: value}))
    with pytest.raises(ValueError, match=r"config.json: .*" + message):
        BertConfig.from_json_file(tmp_path)
    with pytest.raises(ValueError, match=message):  # also a config made in code, and one changed afterwards
        tiny(extra={key: value})
    cfg = tiny()
    cfg.extra[key] = value
    with pytest.raises(ValueError, match=message):
        BertModel(cfg)


def test_harmless_values_of_those_options_still_load(tmp_path):
    c = BertConfig.from_dict({**REAL_KEYS, "position_embedding_type": "absolute", "is_decoder": False,
                              "add_cross_attention": False, "use_cache": True})
    assert c.extra["is_decoder"] is False
    c.to_json_file(tmp_path)
    assert BertConfig.from_json_file(tmp_path) == c


def test_the_builtin_minilm_config_loads():
    from minibert.data.builtin import minilm_dir
    try:
        folder = minilm_dir()
    except FileNotFoundError as e:
        pytest.skip(str(e))
    c = BertConfig.from_json_file(folder)
    assert (c.hidden_size, c.num_hidden_layers, c.extra["position_embedding_type"]) == (384, 6, "absolute")


# ---------------------------------------------------------------- config field types
@pytest.mark.parametrize("field,value,message", [
    ("pad_token_id", None, r"BertConfig.pad_token_id must be an integer, got None"),
    ("pad_token_id", 1.5, r"BertConfig.pad_token_id must be an integer, got 1.5"),
    ("hidden_size", "128", r"BertConfig.hidden_size must be a positive integer, got '128' \(str\)"),
    ("num_hidden_layers", True, r"BertConfig.num_hidden_layers must be a positive integer, got True"),
    ("layer_norm_eps", "1e-12", r"BertConfig.layer_norm_eps must be a number, got '1e-12' \(str\)"),
    ("hidden_dropout_prob", None, r"BertConfig.hidden_dropout_prob must be a number, got None"),
    ("attention_probs_dropout_prob", [0.1], r"BertConfig.attention_probs_dropout_prob must be a number, got \[0.1\]"),
    ("initializer_range", None, r"BertConfig.initializer_range must be a number, got None"),
    ("embedding_size", "8", r"BertConfig.embedding_size must be a positive integer or null, got '8' \(str\)"),
    ("hidden_act", None, r"BertConfig.hidden_act None is not supported"),
])
def test_config_type_errors_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        tiny(**{field: value})


def test_config_from_dict_type_error_names_the_source_and_field():
    with pytest.raises(ValueError, match=r"^config: BertConfig.layer_norm_eps must be a number, got '1e-12'"):
        BertConfig.from_dict({**REAL_KEYS, "layer_norm_eps": "1e-12"})


def test_numpy_numbers_are_accepted_and_stored_as_python_numbers(tmp_path):
    c = tiny(hidden_size=np.int64(16), pad_token_id=np.int32(0), layer_norm_eps=np.float64(1e-12),
             hidden_dropout_prob=np.float32(0.0), embedding_size=np.int64(8))
    for name in ("hidden_size", "pad_token_id", "embedding_size"):
        assert type(getattr(c, name)) is int
    for name in ("layer_norm_eps", "hidden_dropout_prob"):
        assert type(getattr(c, name)) is float
    assert c == tiny(layer_norm_eps=1e-12, hidden_dropout_prob=0.0, embedding_size=8)
    c.to_json_file(tmp_path)  # NumPy scalars would not be JSON-serialisable
    assert BertConfig.from_json_file(tmp_path) == c


# ---------------------------------------------------------------- the model's seed
@pytest.mark.parametrize("seed", [None, 1.5, "0", -1, True])
def test_model_seed_must_be_a_non_negative_integer(seed):
    with pytest.raises(ValueError, match=rf"seed must be a non-negative integer, got {re.escape(repr(seed))}"):
        BertModel(tiny(), seed=seed)


def test_numpy_integer_seed_is_the_same_seed():
    a, b = BertModel(tiny(), seed=np.int64(3)), BertModel(tiny(), seed=3)
    assert type(a.seed) is int
    assert all(np.array_equal(a.params[n], b.params[n]) for n in a.params)


def re_shape(shape):
    return re.escape(str(tuple(shape)))


def test_an_untied_masked_lm_head_is_refused_but_its_body_loads():
    # minibert's MLM head reads its output weights from the word embeddings: an untied checkpoint's head would
    # predict from the wrong matrix. Its encoder is fine for fine-tuning or embeddings.
    untied = BertConfig.from_dict({**BertConfig.preset("tiny", vocab_size=50).to_dict(), "tie_word_embeddings": False})
    with pytest.raises(ValueError, match="tie_word_embeddings false is not supported"):
        BertForMaskedLM(untied)
    BertModel(untied)
