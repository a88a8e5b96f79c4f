"""RoBERTa and pre-LN (RobertaPreLayerNorm) as config switches of the one encoder, against transformers on
identical weights (float32, with padding): outputs, loss, every parameter gradient; and checkpoints both ways.

Our WordPiece vocabulary stands in for RoBERTa's byte-level BPE (the tokenizer is separate from the weights)."""

import numpy as np
import pytest
from gradcheck import check_grad
from hf_reference import check_bare_model, check_masked_lm, copy_weights, hf_config, max_rel_diff
from test_model_gradients import batch

from minibert import BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4
FAMILIES = ["roberta", "roberta-prelayernorm"]
HF_MLM = {"roberta": "RobertaForMaskedLM", "roberta-prelayernorm": "RobertaPreLayerNormForMaskedLM"}
HF_MODEL = {"roberta": "RobertaModel", "roberta-prelayernorm": "RobertaPreLayerNormModel"}


def config(model_type, **kw):
    values = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=18, hidden_act="gelu_new", hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0, model_type=model_type,
                  type_vocab_size=1 if model_type == "roberta" else 2)
    values.update(kw)
    return BertConfig(**values)


def make_batch(cfg, seed=0):
    rng = np.random.default_rng(seed)
    B, T = 4, 16  # 16 tokens need 17 position rows (positions start at pad_token_id + 1)
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    mask = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate([16, 11, 7, 16]):
        mask[b, :n] = 1
    ids[mask == 0] = cfg.pad_token_id
    ids[0, 5] = cfg.pad_token_id  # a [PAD] id at an attended position: RoBERTa's positions skip it
    types = None if cfg.type_vocab_size == 1 else (np.arange(T)[None, :] >= 8).astype(np.int64).repeat(B, 0)
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.25) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    return ids, types, mask, labels


def t(x):
    return None if x is None else torch.from_numpy(np.asarray(x))


@pytest.mark.parametrize("model_type", FAMILIES)
def test_masked_lm_outputs_loss_and_every_gradient(model_type):
    cfg = config(model_type)
    model = BertForMaskedLM(cfg, seed=0)
    # Pre-activations of order 1 in the LM head, so that its activation matters: RoBERTa's head uses exact GELU
    # whatever hidden_act says (gelu_new here), and at the init's scale the two differ by less than the tolerance.
    model.params["cls.predictions.transform.dense.weight"] *= 50
    hf = getattr(transformers, HF_MLM[model_type])(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids, types, mask, labels = make_batch(cfg)
    check_masked_lm(model, hf, ids, types, mask, labels, TOL)  # every gradient incl. final LayerNorm, position rows


@pytest.mark.parametrize("model_type", FAMILIES)
def test_bare_model_outputs_and_gradients(model_type):
    cfg = config(model_type)
    model = BertModel(cfg, seed=1)
    hf = getattr(transformers, HF_MODEL[model_type])(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids, types, mask, _ = make_batch(cfg, seed=1)
    check_bare_model(model, hf, ids, types, mask, TOL)


@pytest.mark.parametrize("model_type", FAMILIES)
def test_checkpoints_load_in_transformers_and_back(model_type, tmp_path):
    cfg = config(model_type)
    model = BertForPreTraining(cfg, seed=2).eval()  # what `minibert pretrain` saves: its NSP head is left unused
    model.save_pretrained(tmp_path / "ours")
    ids, types, mask, _ = make_batch(cfg, seed=2)
    hf_cls = getattr(transformers, HF_MLM[model_type])
    hf, info = hf_cls.from_pretrained(tmp_path / "ours", output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"], info  # every name and shape as HF's
    prefix = "roberta." if model_type == "roberta" else "roberta_prelayernorm."
    unused = {"cls.seq_relationship.weight", "cls.seq_relationship.bias", prefix + "pooler.dense.weight",
              prefix + "pooler.dense.bias"}  # the NSP head and pooler: RobertaForMaskedLM has neither
    assert set(info["unexpected_keys"]) == unused
    hf.eval()
    with torch.no_grad():
        ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask)).logits.numpy()
    ours = model.forward(ids, token_type_ids=types, attention_mask=mask).prediction_logits
    valid = mask.astype(bool)
    assert max_rel_diff(ours[valid], ref[valid]) < TOL

    hf.save_pretrained(tmp_path / "theirs")  # transformers' names (roberta., lm_head.) back into minibert
    back = BertForMaskedLM.from_pretrained(tmp_path / "theirs")
    assert back.config.model_type == model_type
    auto = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path / "ours")  # config.json names the class
    assert type(auto).__name__ == HF_MLM[model_type]
    got = back.forward(ids, token_type_ids=types, attention_mask=mask).prediction_logits
    assert max_rel_diff(got[valid], ref[valid]) < TOL
    for name in back.params:
        np.testing.assert_array_equal(back.params[name], model.params[name], err_msg=name)


def test_pre_ln_and_roberta_positions_gradient_float64():
    cfg = config("roberta-prelayernorm", vocab_size=31, hidden_size=12, num_attention_heads=3, intermediate_size=20,
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=10)
    rng = np.random.default_rng(0)
    model = BertForMaskedLM(cfg, seed=1, dtype=np.float64)
    for p in model.params.values():
        p += 0.05 * rng.standard_normal(p.shape)
    ids, _, mask, labels = batch(cfg, rng)  # two sequences, one padded; RoBERTa's one token type

    def loss():
        model.rng = np.random.default_rng(42)
        return model.forward(ids, attention_mask=mask, labels=labels).loss

    loss()
    model.zero_grad()
    model.backward()
    for name in ("bert.LayerNorm.weight", "bert.LayerNorm.bias", "bert.embeddings.position_embeddings.weight",
                 "bert.encoder.layer.0.attention.LayerNorm.weight", "bert.encoder.layer.1.intermediate.LayerNorm.bias"):
        err = check_grad(loss, model.params[name], model.grads[name], rng=rng, max_entries=16)
        assert err < 1e-5, f"{name}: relative error {err:.2e}"
    assert not model.grads["bert.embeddings.position_embeddings.weight"][0].any()  # padding's row: no gradient
    assert not model.grads["bert.embeddings.position_embeddings.weight"][8:].any()  # beyond 1 + 7 tokens: unused
