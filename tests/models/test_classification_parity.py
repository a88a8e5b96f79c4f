"""BertForSequenceClassification equals transformers.BertForSequenceClassification: logits, loss, every gradient."""

import numpy as np
import pytest

from hf_reference import assert_grads_match

from minibert.config import BertConfig
from minibert.models.classification import BertForSequenceClassification

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def close_to_scale(ours, theirs, name, tol=1e-4):
    """|ours - theirs| <= tol * max|theirs| (a relative error measured against the tensor's scale), for outputs and
    losses; gradients go through hf_reference.assert_grads_match."""
    scale = float(np.abs(theirs).max())
    err = float(np.abs(ours - theirs).max())
    assert err <= tol * scale, f"{name}: max error {err:.3g} vs scale {scale:.3g}"


def make_pair(problem_type, num_labels, hidden_act="gelu"):
    config = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=24, hidden_act=hidden_act,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config.extra["problem_type"] = problem_type
    ours = BertForSequenceClassification(config, num_labels=num_labels, seed=7)
    hf_config = transformers.BertConfig(**{k: v for k, v in ours.config.to_dict().items()
                                           if k not in ("id2label", "label2id")},
                                        num_labels=num_labels, attn_implementation="eager")
    hf_config.problem_type = problem_type
    theirs = transformers.BertForSequenceClassification(hf_config)
    state = theirs.state_dict()
    for name, p in ours.params.items():  # the same weights, copied through the shared names
        assert tuple(state[name].shape) == p.shape, name
        state[name].copy_(torch.from_numpy(p))
    return ours, theirs


def padded_pairs(rng, B=4, T=16):
    ids = rng.integers(5, 99, size=(B, T))
    mask = np.ones((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    for b in range(B):
        n = T - 3 * b
        ids[b, n:], mask[b, n:] = 0, 0
        types[b, n // 2:n] = 1
    return ids, types, mask


@pytest.mark.parametrize("problem_type, num_labels, hidden_act", [
    ("single_label_classification", 5, "gelu"),
    ("single_label_classification", 2, "gelu_new"),
    ("regression", 1, "gelu"),
    ("multi_label_classification", 3, "relu"),
])
def test_matches_transformers(problem_type, num_labels, hidden_act):
    ours, theirs = make_pair(problem_type, num_labels, hidden_act)
    rng = np.random.default_rng(0)
    ids, types, mask = padded_pairs(rng)
    if problem_type == "single_label_classification":
        labels = rng.integers(0, num_labels, size=4)
        torch_labels = torch.from_numpy(labels)
    elif problem_type == "regression":
        labels = rng.normal(size=4).astype(np.float32)
        torch_labels = torch.from_numpy(labels)
    else:
        labels = (rng.random((4, num_labels)) > 0.5).astype(np.float32)
        torch_labels = torch.from_numpy(labels)

    out = ours.train().forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    ours.backward()
    theirs.train()
    ref = theirs(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                 attention_mask=torch.from_numpy(mask), labels=torch_labels)
    ref.loss.backward()

    close_to_scale(out.logits, ref.logits.detach().numpy(), "logits")
    close_to_scale(np.array(out.loss), ref.loss.detach().numpy(), "loss")
    assert_grads_match(ours, {name: p.grad.double().numpy() for name, p in theirs.named_parameters()})


def test_label_names_and_problem_type_survive_the_config():
    config = BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=16)
    model = BertForSequenceClassification(config, num_labels=3)
    assert model.id2label == {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    model.set_labels(["neg", "neu", "pos"])
    d = model.config.to_dict()
    assert d["id2label"] == {"0": "neg", "1": "neu", "2": "pos"} and d["label2id"] == {"neg": 0, "neu": 1, "pos": 2}
    assert "id2label" not in config.extra  # the caller's config is left alone
    # A config that names its labels decides num_labels; transformers reads the same names.
    again = BertForSequenceClassification(BertConfig.from_dict(d))
    assert again.num_labels == 3 and again.label2id == {"neg": 0, "neu": 1, "pos": 2}
    hf = transformers.BertConfig(**d)
    assert hf.num_labels == 3 and hf.id2label == {0: "neg", 1: "neu", 2: "pos"}
    with pytest.raises(ValueError, match="3 classes"):
        model.set_labels(["a", "b"])
