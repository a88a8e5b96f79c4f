"""minibert against Hugging Face transformers on identical weights (float32): outputs, losses, every
parameter gradient, and ten AdamW steps with warmup, decay and clipping."""

import numpy as np
import pytest
from hf_reference import assert_grads_match, check_pretraining, copy_weights, hf_config, max_rel_diff, torch_grads

from minibert import AdamW, BertConfig, BertForMaskedLM, BertForPreTraining, BertModel, clip_grad_norm
from minibert import linear_warmup_decay

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-4  # max |diff| relative to the tensor's scale


def config(act="gelu"):
    return BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=24, hidden_act=act,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def make_batch(cfg, seed=0):
    rng = np.random.default_rng(seed)
    B, T = 4, 16
    ids = rng.integers(5, cfg.vocab_size, (B, T))
    lengths = [16, 11, 7, 16]
    mask = np.zeros((B, T), dtype=np.int64)
    types = np.zeros((B, T), dtype=np.int64)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
        types[b, n // 2:n] = 1  # segment B
    ids[mask == 0] = 0
    ids[0, 5] = cfg.pad_token_id  # a [PAD] id at an attended position: its embedding row is special in HF
    labels = np.full((B, T), -100)
    pick = (rng.random((B, T)) < 0.25) & (mask == 1)
    labels[pick] = rng.integers(5, cfg.vocab_size, int(pick.sum()))
    nsl = np.array([0, 1, 1, 0])
    return ids, types, mask, labels, nsl


def t(x):
    return torch.from_numpy(np.asarray(x))


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_pretraining_outputs_loss_and_every_gradient(act, gelu_kernel):
    cfg = config(act)
    model = BertForPreTraining(cfg, seed=0)
    hf = transformers.BertForPreTraining(hf_config(cfg)).train()
    copy_weights(model, hf)
    check_pretraining(model, hf, *make_batch(cfg), tol=TOL)  # every parameter, tied ones once


def test_full_logits_without_labels_and_bert_model_outputs():
    cfg = config()
    model = BertForPreTraining(cfg, seed=1).eval()
    hf = transformers.BertForPreTraining(hf_config(cfg)).eval()
    copy_weights(model, hf)
    ids, types, mask, _, _ = make_batch(cfg, seed=1)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, output_attentions=True)
    with torch.no_grad():
        ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), output_attentions=True)
    assert out.prediction_logits.shape == (4, 16, cfg.vocab_size)
    valid = mask.astype(bool)  # padded positions are never used; compare the real tokens
    assert max_rel_diff(out.prediction_logits[valid], ref.prediction_logits.numpy()[valid]) < TOL
    for ours, theirs in zip(out.attentions, ref.attentions):
        assert ours.shape == (4, cfg.num_attention_heads, 16, 16)
        assert max_rel_diff(ours, theirs.numpy()) < TOL

    bare = BertModel(cfg, seed=2).eval()
    hf_bare = transformers.BertModel(hf_config(cfg)).eval()
    copy_weights(bare, hf_bare)
    o = bare.forward(ids, token_type_ids=types, attention_mask=mask)
    with torch.no_grad():
        r = hf_bare(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask))
    assert max_rel_diff(o.last_hidden_state[valid], r.last_hidden_state.numpy()[valid]) < TOL
    assert max_rel_diff(o.pooler_output, r.pooler_output.numpy()) < TOL


def test_masked_lm_loss_and_gradients():
    cfg = config("gelu_new")
    model = BertForMaskedLM(cfg, seed=3)
    hf = transformers.BertForMaskedLM(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids, types, mask, labels, _ = make_batch(cfg, seed=2)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-5)
    assert_grads_match(model, torch_grads(hf), TOL)


def test_bert_model_gradients_without_mask_or_token_types():
    """BertModel's backward from both outputs, with attention_mask and token_type_ids left out (all tokens, one
    segment), against autograd."""
    cfg = config("gelu")
    model = BertModel(cfg, seed=5)
    hf = transformers.BertModel(hf_config(cfg)).train()
    copy_weights(model, hf)
    ids = make_batch(cfg, seed=3)[0]
    rng = np.random.default_rng(0)
    R1 = rng.standard_normal((*ids.shape, cfg.hidden_size)).astype(np.float32)
    R2 = rng.standard_normal((ids.shape[0], cfg.hidden_size)).astype(np.float32)
    out = model.forward(ids)
    model.backward(R1, R2)
    ref = hf(input_ids=t(ids))
    ((ref.last_hidden_state * t(R1)).sum() + (ref.pooler_output * t(R2)).sum()).backward()
    assert max_rel_diff(out.last_hidden_state, ref.last_hidden_state.detach().numpy()) < TOL
    assert_grads_match(model, torch_grads(hf), TOL)


def test_float64_parity_is_exact_to_rounding():
    """In float64 any difference of formula shows up at once: everything agrees to ~1e-10."""
    cfg = config("gelu")
    model = BertForPreTraining(cfg, seed=6, dtype=np.float64)
    hf = transformers.BertForPreTraining(hf_config(cfg)).double().train()
    copy_weights(model, hf)
    ids, types, mask, labels, nsl = make_batch(cfg, seed=4)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
    model.backward()
    ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels),
             next_sentence_label=t(nsl))
    ref.loss.backward()
    assert out.loss == pytest.approx(ref.loss.item(), rel=1e-12)
    assert_grads_match(model, torch_grads(hf), 1e-9)


def test_ten_adamw_steps_match_torch(gelu_kernel):
    cfg = config()
    model = BertForPreTraining(cfg, seed=4)
    hf = transformers.BertForPreTraining(hf_config(cfg)).train()
    copy_weights(model, hf)
    lr, steps, warmup, clip = 2e-3, 10, 3, 1.0
    opt = AdamW(model.params, model.grads, lr=lr, eps=1e-6, weight_decay=0.01)
    assert opt.flat  # the flat-buffer update is the one compared with torch
    no_decay = [p for n, p in hf.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in hf.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    torch_opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=lr, eps=1e-6)
    sched = transformers.get_linear_schedule_with_warmup(torch_opt, warmup, steps)

    ours, theirs = [], []
    for step in range(steps):
        ids, types, mask, labels, nsl = make_batch(cfg, seed=100 + step % 2)  # two batches, alternating
        model.zero_grad()
        out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=nsl)
        model.backward()
        norm = clip_grad_norm(model.grads, clip)
        opt.step(lr=linear_warmup_decay(step, lr, warmup, steps))
        ours.append(out.loss)

        torch_opt.zero_grad()
        ref = hf(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels),
                 next_sentence_label=t(nsl))
        ref.loss.backward()
        torch_norm = torch.nn.utils.clip_grad_norm_(hf.parameters(), clip)
        torch_opt.step()
        sched.step()
        theirs.append(ref.loss.item())
        assert norm == pytest.approx(torch_norm.item(), rel=1e-4)

    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert ours[-1] < ours[0]  # it learned something, so the comparison is not of two frozen models
    for name, p in hf.named_parameters():
        # floor 1e-2: the key bias has a true gradient of 0 (hf_reference.zero_in_theory), so both sides leave it
        # at its start plus AdamW's steps on ~1e-12 of rounding noise, which eps (1e-6) keeps below 1e-8 a step.
        assert max_rel_diff(model.params[name], p.detach().numpy(), floor=1e-2) < TOL, name
