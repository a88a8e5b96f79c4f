"""BertForTokenClassification and BertForQuestionAnswering equal the transformers classes of the same names on
identical weights (logits, loss, every gradient), and their checkpoints cross to transformers and back."""

import warnings

import numpy as np
import pytest
from hf_reference import assert_grads_match

from minibert.config import BertConfig
from minibert.io.checkpoint import CheckpointWarning
from minibert.models.question_answering import BertForQuestionAnswering
from minibert.models.token_classification import BertForTokenClassification
from test_classification_parity import close_to_scale, padded_pairs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def small_config(hidden_act="gelu"):
    return BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=24, hidden_act=hidden_act,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def twin(ours):
    """The transformers model of the same class, with our weights copied in by name."""
    cls = getattr(transformers, type(ours).__name__)
    theirs = cls(transformers.BertConfig(**ours.config.to_dict(), attn_implementation="eager"))
    state = theirs.state_dict()
    assert {k for k in state if not k.endswith("position_ids")} == set(ours.params)
    for name, p in ours.params.items():
        state[name].copy_(torch.from_numpy(p))
    return theirs


def assert_same_gradients(ours, theirs):
    assert_grads_match(ours, {name: p.grad.double().numpy() for name, p in theirs.named_parameters()})


def torch_inputs(ids, types, mask):
    return dict(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                attention_mask=torch.from_numpy(mask))


@pytest.mark.parametrize("num_labels, hidden_act", [(9, "gelu"), (3, "gelu_new")])
def test_token_classification_matches_transformers(num_labels, hidden_act):
    ours = BertForTokenClassification(small_config(hidden_act), num_labels=num_labels, seed=7)
    theirs = twin(ours).train()
    rng = np.random.default_rng(0)
    ids, types, mask = padded_pairs(rng)
    labels = rng.integers(0, num_labels, size=ids.shape)
    labels[mask == 0] = -100
    labels[:, 0] = -100
    labels[rng.random(ids.shape) < 0.2] = -100  # non-first pieces of words

    out = ours.train().forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    ours.backward()
    ref = theirs(**torch_inputs(ids, types, mask), labels=torch.from_numpy(labels))
    ref.loss.backward()
    assert out.logits.shape == (4, 16, num_labels)
    close_to_scale(out.logits, ref.logits.detach().numpy(), "logits")
    close_to_scale(np.array(out.loss), ref.loss.detach().numpy(), "loss")
    assert_same_gradients(ours, theirs)


def test_question_answering_matches_transformers():
    ours = BertForQuestionAnswering(small_config(), seed=7)
    theirs = twin(ours).train()
    ids, types, mask = padded_pairs(np.random.default_rng(0))
    # in range; beyond the end (clipped to T = ignored); negative (clipped to 0); an ignored end
    start = np.array([3, 40, -2, 5])
    end = np.array([6, 41, 2, 16])

    out = ours.train().forward(ids, token_type_ids=types, attention_mask=mask, start_positions=start, end_positions=end)
    ours.backward()
    ref = theirs(**torch_inputs(ids, types, mask), start_positions=torch.from_numpy(start),
                 end_positions=torch.from_numpy(end))
    ref.loss.backward()
    close_to_scale(out.start_logits, ref.start_logits.detach().numpy(), "start_logits")
    close_to_scale(out.end_logits, ref.end_logits.detach().numpy(), "end_logits")
    close_to_scale(np.array(out.loss), ref.loss.detach().numpy(), "loss")
    assert_same_gradients(ours, theirs)


def randomised(model):
    rng = np.random.default_rng(1)
    for p in model.params.values():
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    return model.eval()


def outputs(model, ids, types, mask):
    if isinstance(model, torch.nn.Module):
        with torch.no_grad():
            r = model(**torch_inputs(ids, types, mask))
        return {k: r[k].numpy() for k in ("logits", "start_logits", "end_logits") if k in r}
    r = model(ids, token_type_ids=types, attention_mask=mask)
    return {k: r[k] for k in ("logits", "start_logits", "end_logits") if k in r}


def make(cls):
    if cls is BertForTokenClassification:
        model = cls(small_config(), num_labels=5, seed=2)
        model.set_labels(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
        return model
    return cls(small_config(), seed=2)


@pytest.mark.parametrize("cls", [BertForTokenClassification, BertForQuestionAnswering], ids=lambda c: c.__name__)
def test_checkpoints_cross_both_ways(tmp_path, cls):
    ids, types, mask = padded_pairs(np.random.default_rng(4))
    ours = randomised(make(cls))
    ours.save_pretrained(tmp_path / "ours")
    theirs, info = getattr(transformers, cls.__name__).from_pretrained(
        tmp_path / "ours", attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    expected = outputs(ours, ids, types, mask)
    for k, v in outputs(theirs.eval(), ids, types, mask).items():
        np.testing.assert_allclose(v, expected[k], atol=2e-5, rtol=0, err_msg=k)
    if cls is BertForTokenClassification:
        assert theirs.config.id2label == {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}

    with torch.no_grad():  # change their weights, save them, and read them back here
        for p in theirs.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    theirs.save_pretrained(tmp_path / "theirs")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)  # nothing missing, nothing unexpected
        back = cls.from_pretrained(tmp_path / "theirs")
    expected = outputs(theirs.eval(), ids, types, mask)
    for k, v in outputs(back, ids, types, mask).items():
        np.testing.assert_allclose(v, expected[k], atol=2e-5, rtol=0, err_msg=k)
    if cls is BertForTokenClassification:
        assert back.num_labels == 5 and back.id2label[1] == "B-PER"
