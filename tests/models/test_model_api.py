"""The Python API where it meets habits from transformers: inputs after input_ids are keyword-only (HF's
positional order differs: `model(ids, mask)` must not read the mask as token types), a transformers config or a
bad dtype or string labels get one clear line, and every public class and method has a docstring for help()."""

import inspect

import numpy as np
import pytest

import minibert
from minibert import BertConfig, DistilBertConfig
from minibert.models.bert import BertModel
from minibert.models.classification import BertForSequenceClassification
from minibert.models.distilbert import DistilBertForMaskedLM, DistilBertModel
from minibert.models.distilbert_classification import DistilBertForSequenceClassification
from minibert.models.electra import ElectraForMaskedLM, ElectraForPreTraining
from minibert.models.electra_pretraining import ElectraPretrainer
from minibert.models.pretraining import BertForMaskedLM, BertForPreTraining
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification

IDS = np.array([[2, 7, 9, 3, 0], [2, 5, 3, 0, 0]])
MASK = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])


def tiny(**overrides):
    return BertConfig.preset("tiny", **{**dict(vocab_size=50, hidden_size=16, num_attention_heads=2,
                                                intermediate_size=32, num_hidden_layers=1,
                                                max_position_embeddings=8), **overrides})


BERT_CLASSES = [BertModel, BertForPreTraining, BertForMaskedLM, BertForSequenceClassification,
                BertForTokenClassification, BertForQuestionAnswering, ElectraForPreTraining, ElectraForMaskedLM]
DISTIL_CLASSES = [DistilBertModel, DistilBertForMaskedLM, DistilBertForSequenceClassification]


def build(cls):
    if cls in DISTIL_CLASSES:
        return cls(DistilBertConfig.from_bert(tiny()))
    return cls(tiny())


@pytest.mark.parametrize("cls", BERT_CLASSES + DISTIL_CLASSES + [ElectraPretrainer],
                         ids=lambda c: c.__name__)
def test_inputs_after_input_ids_are_keyword_only(cls):
    """transformers' order is (input_ids, attention_mask, token_type_ids); minibert's was (input_ids,
    token_type_ids, attention_mask): `m(ids, mask)` would take the mask for token types, silently."""
    m = build(cls).eval()
    for call in (m, m.forward):
        with pytest.raises(TypeError):
            call(IDS, MASK)
        with pytest.raises(TypeError):
            call(IDS, None, MASK)
    if cls is ElectraPretrainer:
        return
    out = m(IDS, attention_mask=MASK)  # by name: fine
    assert out is not None
    body = getattr(m, "bert", None) or getattr(m, "encoder", None) or m.electra
    with pytest.raises(TypeError):
        body.forward(IDS, None, MASK)  # the shared encoder too (SentenceEncoder.body, model.bert)
    body.forward(IDS, attention_mask=MASK)


def test_keyword_inputs_give_transformers_meaning():
    m = BertModel(tiny()).eval()
    by_name = m(IDS, attention_mask=MASK, token_type_ids=np.zeros_like(IDS)).last_hidden_state
    np.testing.assert_array_equal(by_name, m.forward(input_ids=IDS, attention_mask=MASK).last_hidden_state)


# ---------------------------------------------------------------- config, dtype and labels
def test_a_transformers_config_is_refused_with_the_conversion():
    transformers = pytest.importorskip("transformers")
    hf = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=8)
    with pytest.raises(ValueError, match=r"BertConfig\.from_dict\(hf_config\.to_dict\(\)\)") as e:
        BertModel(hf)
    assert "\n" not in str(e.value)
    converted = BertConfig.from_dict(hf.to_dict())  # what the message says works
    assert BertForSequenceClassification(converted, num_labels=3).num_labels == 3
    hf_distil = transformers.DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
                                              max_position_embeddings=8)
    with pytest.raises(ValueError, match=r"DistilBertConfig\.from_dict\(hf_config\.to_dict\(\)\)"):
        DistilBertModel(hf_distil)
    DistilBertModel(DistilBertConfig.from_dict(hf_distil.to_dict()))


@pytest.mark.parametrize("dtype", ["bfloat16", "no-such-type", np.float16, int])
def test_bad_dtype_is_one_value_error(dtype):
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        BertModel(tiny(), dtype=dtype)


@pytest.mark.parametrize("labels", [["a", "b"], np.array(["x", "y"]), np.array([1, "b"], dtype=object)])
def test_string_labels_are_a_type_error(labels):
    m = BertForSequenceClassification(tiny(), num_labels=2)
    with pytest.raises(TypeError, match="class indices") as e:
        m(IDS, attention_mask=MASK, labels=labels)
    assert "\n" not in str(e.value)


def test_integer_and_float_labels_still_work():
    m = BertForSequenceClassification(tiny(), num_labels=2)
    assert m(IDS, labels=[0, 1]).loss > 0
    assert m(IDS, labels=np.array([[0.0, 1.0], [1.0, 1.0]])).loss > 0  # multi-label
    assert m(IDS, labels=np.array([[True, False], [False, True]])).loss > 0  # multi-hot as bools


# ---------------------------------------------------------------- docstrings
OTHER_OWNERS = {"WordPieceTokenizer", "train_wordpiece", "AdamW", "clip_grad_norm", "linear_warmup_decay"}


def _public_members(cls):
    for name in dir(cls):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(cls, name)
        function = static.fget if isinstance(static, property) else getattr(static, "__func__", static)
        if inspect.isfunction(function) and function.__module__.startswith("minibert"):
            yield name, static if isinstance(static, property) else getattr(cls, name)


def test_every_public_model_class_and_method_has_a_docstring():
    """help(minibert.BertModel.forward) and the like say something: every class and function exported from
    minibert, and every public method or property of those classes (inherited docstrings count, as help() shows
    them)."""
    missing = []
    for name in sorted(set(minibert.__all__) - OTHER_OWNERS):
        obj = getattr(minibert, name)
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            missing += [f"{name}.{member}" for member, value in _public_members(obj) if not inspect.getdoc(value)]
    assert not missing, f"no docstring: {missing}"


def test_masked_lm_forward_says_its_logits_are_at_the_masked_positions():
    doc = inspect.getdoc(BertForMaskedLM.forward)
    assert "(M, V)" in doc and "(B, T, V)" in doc
