"""DeBERTa-v2/v3 (model_type deberta-v2) against transformers' DebertaV2 classes on identical random weights,
float32, with padding: outputs (padded positions included: transformers' uniform rows there), losses and every
parameter gradient, each within 1e-4 of its tensor's scale. The configs cover c2p and p2c, shared and separate
position projections, log buckets (colliding and clamped at T = 18) and plain clamped distances, absolute
positions on and off, token types on and off. Then checkpoints both ways, a float64 finite-difference check of a
whole model, and the one-line refusals of what is not built."""

import json

import numpy as np
import pytest
from gradcheck import check_model_gradients
from hf_reference import assert_grads_match, copy_weights, hf_config, max_rel_diff, torch_grads

from minibert import (BertConfig, DebertaV2Config, DebertaV2ForMaskedLM, DebertaV2ForQuestionAnswering,
                      DebertaV2ForSequenceClassification, DebertaV2ForTokenClassification, DebertaV2Model)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4
B, T = 3, 18

# 8 buckets (mid 4) up to 12 positions at T = 18: distances 5..17 share log buckets and the longest are clamped
CONFIGS = {
    "buckets-separate-keys": dict(position_buckets=8, max_relative_positions=12, share_att_key=False,
                                  position_biased_input=False, type_vocab_size=0),
    "buckets-shared-keys-absolute": dict(position_buckets=8, max_relative_positions=12, share_att_key=True,
                                         position_biased_input=True, type_vocab_size=2),
    "clamped-c2p": dict(position_buckets=-1, max_relative_positions=6, pos_att_type=["c2p"], norm_rel_ebd="none",
                        share_att_key=False, position_biased_input=True, type_vocab_size=0),
    "clamped-p2c-shared": dict(position_buckets=-1, max_relative_positions=-1, pos_att_type="p2c",
                               share_att_key=True, position_biased_input=False, type_vocab_size=2),
}


def config(**kw):
    values = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=24, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  relative_attention=True, pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm")
    values.update(kw)
    return DebertaV2Config(**values)


def make_batch(cfg, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate([T, 11, 6]):
        mask[b, :n] = 1
    ids[mask == 0] = 0
    types = (np.arange(T) >= T // 2).astype(np.int64)[None].repeat(B, 0) * mask
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.3) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    return ids, types, mask, labels


def t(x):
    return None if x is None else torch.from_numpy(np.asarray(x))


def reference(model, cls, **extra):
    hf = getattr(transformers, cls)(hf_config(model.config, **extra)).train()  # dropout is 0: train = eval
    copy_weights(model, hf)
    return hf


def _perturb(model, seed=3):
    """Away from the init (LayerNorms at 1 and 0, zero biases), so that every parameter's gradient matters."""
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p += (0.05 * rng.standard_normal(p.shape)).astype(p.dtype)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_bare_model_parity(name):
    cfg = config(**CONFIGS[name])
    model = DebertaV2Model(cfg, seed=0)
    _perturb(model)
    hf = reference(model, "DebertaV2Model")
    ids, types, mask, _ = make_batch(cfg)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, output_attentions=True)
    R = np.random.default_rng(1).standard_normal((B, T, cfg.hidden_size)).astype(np.float32)
    model.backward(R)
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), output_attentions=True)
    (ref.last_hidden_state * t(R)).sum().backward()
    # every position, padding included: the mask multiply and the uniform rows of padded queries are matched too
    assert max_rel_diff(out.last_hidden_state, ref.last_hidden_state.detach().numpy()) < TOL
    for ours, theirs in zip(out.attentions, ref.attentions):
        assert max_rel_diff(ours, theirs.detach().numpy()) < TOL
    assert out.pooler_output is None
    assert_grads_match(model, torch_grads(hf, model), TOL)


@pytest.mark.parametrize("name", ["buckets-separate-keys", "buckets-shared-keys-absolute"])
def test_masked_lm_parity(name):
    cfg = config(**CONFIGS[name])
    model = DebertaV2ForMaskedLM(cfg, seed=0)
    _perturb(model)
    hf = reference(model, "DebertaV2ForMaskedLM")
    ids, types, mask, labels = make_batch(cfg)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    flat = ref.logits.detach().numpy().reshape(-1, cfg.vocab_size)[out.masked_positions]
    assert max_rel_diff(out.prediction_logits, flat) < TOL
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    assert_grads_match(model, torch_grads(hf, model), TOL)  # the tied decoder's share included
    full = model.forward(ids, token_type_ids=types, attention_mask=mask)  # no labels: (B, T, V) everywhere
    assert max_rel_diff(full.logits, ref.logits.detach().numpy()) < TOL


@pytest.mark.parametrize("name", ["buckets-separate-keys", "clamped-p2c-shared"])
def test_sequence_classification_parity(name):
    cfg = config(**CONFIGS[name])
    model = DebertaV2ForSequenceClassification(cfg, num_labels=3, seed=0)
    _perturb(model)
    hf = reference(model, "DebertaV2ForSequenceClassification", pooler_dropout=0.0, cls_dropout=0.0)
    ids, types, mask, _ = make_batch(cfg)
    labels = np.array([2, 0, 1])
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    assert max_rel_diff(out.logits, ref.logits.detach().numpy()) < TOL
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    assert_grads_match(model, torch_grads(hf, model), TOL)  # pooler.dense (GELU) included


def test_token_classification_and_qa_parity():
    cfg = config(**CONFIGS["buckets-separate-keys"])
    ids, types, mask, _ = make_batch(cfg)
    tagger = DebertaV2ForTokenClassification(cfg, num_labels=5, seed=0)
    _perturb(tagger)
    hf = reference(tagger, "DebertaV2ForTokenClassification")
    tags = np.where(mask == 1, np.arange(T)[None] % 5, -100)
    out = tagger.forward(ids, attention_mask=mask, labels=tags)
    tagger.backward()
    ref = hf(input_ids=t(ids), attention_mask=t(mask), labels=t(tags))
    ref.loss.backward()
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    assert_grads_match(tagger, torch_grads(hf, tagger), TOL)

    qa = DebertaV2ForQuestionAnswering(cfg, seed=0)
    _perturb(qa)
    hf = reference(qa, "DebertaV2ForQuestionAnswering")
    start, end = np.array([3, 2, 1]), np.array([5, 7, 4])
    out = qa.forward(ids, attention_mask=mask, start_positions=start, end_positions=end)
    qa.backward()
    ref = hf(input_ids=t(ids), attention_mask=t(mask), start_positions=t(start), end_positions=t(end))
    ref.loss.backward()
    assert max_rel_diff(out.start_logits, ref.start_logits.detach().numpy()) < TOL
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    assert_grads_match(qa, torch_grads(hf, qa), TOL)


def test_whole_model_gradient_float64():
    """Embeddings (mask multiply), every layer's attention, the relative embeddings' LayerNorm (its gradient summed
    over the layers) and the MLM head, against central differences."""
    cfg = config(hidden_size=8, num_attention_heads=2, intermediate_size=16, vocab_size=23,
                 **CONFIGS["buckets-separate-keys"])
    model = DebertaV2ForMaskedLM(cfg, seed=1, dtype=np.float64)
    _perturb(model)
    ids, types, mask, labels = make_batch(cfg, seed=2)
    check_model_gradients(model, lambda m: m.forward(ids, attention_mask=mask, labels=labels).loss)


# ---------------------------------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("cls,hf_cls", [(DebertaV2Model, "DebertaV2Model"),
                                        (DebertaV2ForMaskedLM, "DebertaV2ForMaskedLM"),
                                        (DebertaV2ForSequenceClassification, "DebertaV2ForSequenceClassification")],
                         ids=["model", "masked-lm", "classifier"])
def test_checkpoints_both_ways(tmp_path, cls, hf_cls):
    cfg = config(**CONFIGS["buckets-separate-keys"])
    model = cls(cfg, seed=0)
    _perturb(model)
    model.eval()
    ids, types, mask, _ = make_batch(cfg)
    ours = model.forward(ids, attention_mask=mask)
    ours = ours["logits"] if "logits" in ours else ours.last_hidden_state

    model.save_pretrained(tmp_path / "ours")
    saved = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert saved["model_type"] == "deberta-v2" and saved["architectures"] == [hf_cls]
    hf = getattr(transformers, hf_cls).from_pretrained(tmp_path / "ours").eval()
    hf_out = hf(input_ids=t(ids), attention_mask=t(mask))
    theirs = hf_out.logits if hasattr(hf_out, "logits") else hf_out.last_hidden_state
    assert max_rel_diff(ours, theirs.detach().numpy()) < TOL

    hf.save_pretrained(tmp_path / "theirs")
    back = cls.from_pretrained(tmp_path / "theirs")
    assert isinstance(back.config, DebertaV2Config) and back.config.position_buckets == 8
    for name, p in model.params.items():
        np.testing.assert_array_equal(back.params[name], p, err_msg=name)
    again = back.forward(ids, attention_mask=mask)
    again = again["logits"] if "logits" in again else again.last_hidden_state
    np.testing.assert_array_equal(again, ours)


def test_preset_and_parameter_names():
    cfg = BertConfig.preset("deberta-mini")
    assert isinstance(cfg, DebertaV2Config)
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size,
            cfg.vocab_size, cfg.max_position_embeddings) == (3, 192, 4, 768, 8192, 64)
    names = DebertaV2ForMaskedLM.expected_shapes(cfg)
    assert names["deberta.encoder.layer.2.attention.self.query_proj.weight"] == (192, 192)
    assert names["deberta.encoder.rel_embeddings.weight"] == (64, 192)
    assert "deberta.embeddings.position_embeddings.weight" not in names  # no absolute positions
    assert not any("pos_key_proj" in n for n in names)  # share_att_key
    # log buckets occur at 64 tokens: distances past 16 share rows
    from minibert.layers.disentangled_attention import relative_position_index
    assert len(np.unique(relative_position_index(64, cfg)[63])) < 64


@pytest.mark.parametrize("key,value,needle", [
    ("conv_kernel_size", 3, "conv_kernel_size 3 is not supported"),
    ("talking_head", True, "talking_head True is not supported"),
    ("legacy", False, "legacy False is not supported"),
    ("pos_att_type", "p2p|c2p", "pos_att_type ['p2p', 'c2p'] is not supported"),
    ("embedding_size", 16, "embedding_size 16 is not supported"),
    ("position_buckets", 1, "position_buckets 1 has no log buckets"),
], ids=["conv", "talking-heads", "mlm-head", "p2p", "embed-proj", "one-bucket"])
def test_refusals_are_one_line(tmp_path, key, value, needle):
    d = config().to_dict()
    d[key] = value
    (tmp_path / "config.json").write_text(json.dumps(d))
    with pytest.raises(ValueError) as e:
        BertConfig.from_json_file(tmp_path / "config.json")
    message = str(e.value)
    assert needle in message and "\n" not in message and str(tmp_path / "config.json") in message


def test_recompute_and_dropout_replay_give_the_same_gradients():
    """Activation recompute runs each layer's forward again in the backward, with the dropout masks it drew the
    first time (the relative embeddings' dropout too): the gradients are the same bits."""
    cfg = config(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, **CONFIGS["buckets-separate-keys"])
    ids, types, mask, labels = make_batch(cfg)
    grads = []
    for recompute in (False, True):
        model = DebertaV2ForMaskedLM(cfg, seed=0).set_recompute(recompute)
        model.forward(ids, attention_mask=mask, labels=labels)
        model.backward()
        grads.append(model.grads)
    for name in grads[0]:
        np.testing.assert_array_equal(grads[0][name], grads[1][name], err_msg=name)
