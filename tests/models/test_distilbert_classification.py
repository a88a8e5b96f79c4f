"""DistilBertForSequenceClassification equals transformers': logits, loss, every gradient (padding, float32);
its head (pre_classifier + ReLU) passes float64 finite differences with dropout on; it saves and loads both ways."""

import numpy as np
import pytest
from gradcheck import check_grad
from hf_reference import assert_grads_match, copy_weights, max_rel_diff, torch_grads

from minibert.distilbert_config import DistilBertConfig
from minibert.models.distilbert_classification import DistilBertForSequenceClassification

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def config(**kw):
    values = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
                  max_position_embeddings=24, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    values.update(kw)
    return DistilBertConfig(**values)


def padded(rng, B=4, T=16):
    ids = rng.integers(5, 99, size=(B, T))
    mask = np.ones((B, T), dtype=np.int64)
    for b in range(B):
        ids[b, T - 3 * b:], mask[b, T - 3 * b:] = 0, 0
    return ids, mask


def test_matches_transformers_logits_loss_and_every_gradient(tmp_path):
    cfg = config()
    cfg.extra["seq_classif_dropout"] = 0.0
    ours = DistilBertForSequenceClassification(cfg, num_labels=3, seed=1)
    rng = np.random.default_rng(0)
    for p in ours.params.values():
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    hf_cfg = transformers.DistilBertConfig(**{k: v for k, v in ours.config.to_dict().items()
                                              if k not in ("architectures",)})
    hf_cfg._attn_implementation = "eager"
    theirs = transformers.DistilBertForSequenceClassification(hf_cfg).train()
    copy_weights(ours, theirs)
    ids, mask = padded(rng)
    labels = np.array([0, 2, 1, 2])
    out = ours.forward(ids, attention_mask=mask, labels=labels)
    ours.backward()
    ref = theirs(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), labels=torch.tensor(labels))
    ref.loss.backward()
    assert max_rel_diff(out.logits, ref.logits.detach().numpy()) < 1e-4
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert_grads_match(ours, torch_grads(theirs), 1e-4)

    ours.eval().save_pretrained(tmp_path)
    loaded = transformers.DistilBertForSequenceClassification.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        again = loaded(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.numpy()
    np.testing.assert_allclose(ours.forward(ids, attention_mask=mask).logits, again, atol=2e-5)
    back = DistilBertForSequenceClassification.from_pretrained(tmp_path)
    np.testing.assert_allclose(back.forward(ids, attention_mask=mask).logits, again, atol=2e-5)


def test_head_gradient_float64_with_dropout():
    cfg = config(vocab_size=31, hidden_size=12, num_attention_heads=3, intermediate_size=20, hidden_dropout_prob=0.1)
    model = DistilBertForSequenceClassification(cfg, num_labels=3, seed=2, dtype=np.float64)
    assert model.classifier_dropout == 0.2  # seq_classif_dropout's default, as in transformers
    rng = np.random.default_rng(3)
    for p in model.params.values():
        p += 0.1 * rng.standard_normal(p.shape)
    ids, mask = padded(rng, B=3, T=7)
    ids = ids % 31
    labels = np.array([2, 0, 1])

    def loss():
        model.rng = np.random.default_rng(5)
        return model.forward(ids, attention_mask=mask, labels=labels).loss

    model.zero_grad()
    loss()
    model.backward()
    for name, p in model.params.items():
        assert check_grad(loss, p, model.grads[name], rng=rng, max_entries=6) < 1e-6, name
