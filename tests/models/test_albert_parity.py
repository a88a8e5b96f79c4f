"""ALBERT as a config switch (model_type albert): factorised embeddings (E < H, then a projection), one layer's
weights shared by every layer, and the sentence-order head. Against transformers' ALBERT on identical weights
(float32, with padding): outputs, losses, every parameter gradient (the shared layer's is the sum over its uses),
checkpoints both ways, and a float64 finite-difference check of the shared layer."""

import numpy as np
import pytest
from gradcheck import check_grad
from hf_reference import (assert_grads_match, check_bare_model, check_pretraining, copy_weights, hf_config,
                          max_rel_diff, torch_grads)
from test_model_gradients import batch

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel
from minibert.io.checkpoint import CheckpointWarning

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4
LAYER = "bert.encoder.layer.0."


def config(**kw):
    values = dict(vocab_size=97, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=16, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, model_type="albert", embedding_size=8)
    values.update(kw)
    return BertConfig(**values)


def reference(cfg, cls):
    # ALBERT's SOP head has a dropout of its own (classifier_dropout_prob); off, like the others, for parity
    return getattr(transformers, cls)(hf_config(cfg, classifier_dropout_prob=0.0)).train()


def make_batch(cfg, seed=0):
    rng = np.random.default_rng(seed)
    B, T = 4, 16
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.zeros((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate([16, 11, 7, 16]):
        mask[b, :n] = 1
        types[b, n // 2:n] = 1
    ids[mask == 0] = 0
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.25) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    return ids, types, mask, labels, np.array([0, 1, 1, 0])


def t(x):
    return torch.from_numpy(np.asarray(x))


def test_shared_layer_and_factorised_shapes():
    model = BertForPreTraining(config(), seed=0)
    layers = {name.split(".")[3] for name in model.params if name.startswith("bert.encoder.layer.")}
    assert layers == {"0"}  # three layers run, one set of weights
    assert model.params["bert.embeddings.word_embeddings.weight"].shape == (97, 8)
    assert model.params["bert.encoder.embedding_hidden_mapping_in.weight"].shape == (32, 8)
    assert model.params["cls.predictions.transform.dense.weight"].shape == (8, 32)  # the head works in E


def test_pretraining_outputs_losses_and_every_gradient():
    cfg = config()
    model = BertForPreTraining(cfg, seed=0)
    model.params["cls.predictions.transform.dense.weight"] *= 30  # activations of order 1: gelu_new must matter
    hf = reference(cfg, "AlbertForPreTraining")
    copy_weights(model, hf)
    # Every parameter's gradient, the shared layer and projection included.
    grads = check_pretraining(model, hf, *make_batch(cfg), tol=TOL)
    assert np.abs(grads[LAYER + "intermediate.dense.weight"]).max() > 0


def test_bare_model_and_masked_lm():
    cfg = config()
    model = BertModel(cfg, seed=1)
    hf = reference(cfg, "AlbertModel")
    copy_weights(model, hf)
    ids, types, mask, labels, _ = make_batch(cfg, seed=1)
    check_bare_model(model, hf, ids, types, mask, TOL)

    mlm = BertForMaskedLM(cfg, seed=2)
    hf_mlm = reference(cfg, "AlbertForMaskedLM")
    copy_weights(mlm, hf_mlm)
    out = mlm.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    mlm.backward()
    ref = hf_mlm(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert_grads_match(mlm, torch_grads(hf_mlm, mlm), TOL)


def test_checkpoints_load_in_transformers_and_back(tmp_path):
    cfg = config()
    model = BertForPreTraining(cfg, seed=3).eval()
    model.save_pretrained(tmp_path / "ours")
    hf, info = transformers.AlbertForPreTraining.from_pretrained(tmp_path / "ours", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    auto = transformers.AutoModelForPreTraining.from_pretrained(tmp_path / "ours")
    assert type(auto).__name__ == "AlbertForPreTraining"  # config.json names the class
    hf.eval()
    ids, types, mask, _, _ = make_batch(cfg, seed=2)
    with torch.no_grad():
        ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask))
    out = model.forward(ids, token_type_ids=types, attention_mask=mask)
    valid = mask.astype(bool)
    assert max_rel_diff(out.prediction_logits[valid], ref.prediction_logits.numpy()[valid]) < TOL
    assert max_rel_diff(out.seq_relationship_logits, ref.sop_logits.numpy()) < TOL

    hf.save_pretrained(tmp_path / "theirs")  # albert.encoder.albert_layer_groups.0... back into minibert
    back = BertForPreTraining.from_pretrained(tmp_path / "theirs")
    assert back.config.model_type == "albert" and back.config.embedding_size == 8
    for name in back.params:
        np.testing.assert_array_equal(back.params[name], model.params[name], err_msg=name)
    with pytest.warns(CheckpointWarning, match="sop_classifier.classifier.bias"):
        bare = BertModel.from_pretrained(tmp_path / "theirs")  # the body alone, heads listed as unused
    expected = model.bert.forward(ids, token_type_ids=types, attention_mask=mask).last_hidden_state
    got = bare.forward(ids, token_type_ids=types, attention_mask=mask).last_hidden_state
    assert max_rel_diff(got[valid], expected[valid]) < TOL


def test_shared_layer_gradient_float64():
    """The shared layer's gradient is the sum over its three uses: finite differences of the whole loss."""
    cfg = config(vocab_size=31, hidden_size=12, num_attention_heads=3, intermediate_size=20, embedding_size=6,
                 max_position_embeddings=10, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    rng = np.random.default_rng(0)
    model = BertForPreTraining(cfg, seed=1, dtype=np.float64)
    for p in model.params.values():
        p += 0.05 * rng.standard_normal(p.shape)
    ids, types, mask, labels = batch(cfg, rng)  # two sequences, one padded, two segments, four labels

    def loss():
        model.rng = np.random.default_rng(42)
        return model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels,
                             next_sentence_label=np.array([1, 0])).loss

    loss()
    model.zero_grad()
    model.backward()
    for name in (LAYER + "attention.self.query.weight", LAYER + "output.dense.weight", LAYER + "output.LayerNorm.bias",
                 "bert.encoder.embedding_hidden_mapping_in.weight", "cls.predictions.transform.dense.weight",
                 "bert.embeddings.word_embeddings.weight"):
        err = check_grad(loss, model.params[name], model.grads[name], rng=rng, max_entries=16)
        assert err < 1e-5, f"{name}: relative error {err:.2e}"
