"""Build the Hugging Face reference for a minibert model: same config, same weights (copied by name).

Families other than BERT (RoBERTa, RobertaPreLayerNorm, ALBERT) name their tensors differently; minibert.io.families
renames between the two, as checkpoints do."""

import numpy as np

from minibert.io.families import from_hf_name


def hf_config(cfg, **extra):
    import transformers
    d = {k: v for k, v in cfg.to_dict().items() if k not in ("architectures",)}
    d.update(extra)
    model_type = d.pop("model_type", "bert")
    hf = transformers.AutoConfig.for_model(model_type, **d)
    hf._attn_implementation = "eager"  # the textbook attention, like ours (sdpa would differ only by rounding)
    return hf


def _ours(model, hf_name):
    return from_hf_name(hf_name, model.config.model_type)


def copy_weights(model, hf_model):
    """Copy minibert params into the torch model by name; every torch parameter must be found."""
    import torch
    with torch.no_grad():
        for name, p in hf_model.named_parameters():
            p.copy_(torch.from_numpy(np.ascontiguousarray(model.params[_ours(model, name)])).to(p.dtype))


def torch_grads(hf_model, model=None):
    """Gradients of the torch model, under minibert's names when `model` (a minibert model) is given."""
    return {(_ours(model, name) if model is not None else name): p.grad.double().numpy()
            for name, p in hf_model.named_parameters() if p.grad is not None}


def check_bare_model(model, hf_model, ids, types, mask, tol=1e-4):
    """A bare encoder (BertModel of any family) against its transformers class: outputs at real tokens, pooler,
    and every gradient of a random linear function of both outputs."""
    import torch
    rng = np.random.default_rng(0)
    H = model.config.hidden_size
    R1 = rng.standard_normal((*ids.shape, H)).astype(np.float32) * mask[..., None]  # padding's outputs: unread
    R2 = rng.standard_normal((ids.shape[0], H)).astype(np.float32)
    out = model.forward(ids, token_type_ids=types, attention_mask=mask)
    model.backward(R1, R2)
    t = lambda x: None if x is None else torch.from_numpy(np.asarray(x))  # noqa: E731
    ref = hf_model(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask))
    ((ref.last_hidden_state * t(R1)).sum() + (ref.pooler_output * t(R2)).sum()).backward()
    valid = mask.astype(bool)
    assert max_rel_diff(out.last_hidden_state[valid], ref.last_hidden_state.detach().numpy()[valid]) < tol
    assert max_rel_diff(out.pooler_output, ref.pooler_output.detach().numpy()) < tol
    assert_grads_match(model.grads, torch_grads(hf_model, model), tol)


def check_masked_lm(model, hf_model, ids, types, mask, labels, tol=1e-4):
    """A masked-LM model (any family, ELECTRA's generator too) against its transformers class on one batch: the
    logits at the labelled positions, the loss and every parameter gradient. Returns minibert's output."""
    import torch
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels)
    model.backward()
    t = lambda x: None if x is None else torch.from_numpy(np.asarray(x))  # noqa: E731
    ref = hf_model(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    ref.loss.backward()
    flat = ref.logits.detach().numpy().reshape(-1, model.config.vocab_size)[out.masked_positions]
    assert max_rel_diff(out.prediction_logits, flat) < tol
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    assert_grads_match(model.grads, torch_grads(hf_model, model), tol)
    return out


def check_pretraining(model, hf_model, ids, types, mask, labels, pair_labels, tol=1e-4):
    """A pre-training model (BERT's NSP head, or ALBERT's SOP head under the same minibert names) against its
    transformers class on one batch: the MLM logits at the labelled positions, the pair head's logits, the loss and
    every parameter gradient. Returns torch's gradients under minibert's names."""
    import torch
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, next_sentence_label=pair_labels)
    model.backward()
    t = lambda x: None if x is None else torch.from_numpy(np.asarray(x))  # noqa: E731
    sop = model.config.model_type == "albert"  # transformers names ALBERT's pair task sentence order
    ref = hf_model(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels),
                   **{"sentence_order_label" if sop else "next_sentence_label": t(pair_labels)})
    ref.loss.backward()
    flat = ref.prediction_logits.detach().numpy().reshape(-1, model.config.vocab_size)[out.masked_positions]
    assert max_rel_diff(out.prediction_logits, flat) < tol
    pair_logits = ref.sop_logits if sop else ref.seq_relationship_logits
    assert max_rel_diff(out.seq_relationship_logits, pair_logits.detach().numpy()) < tol
    assert abs(out.loss - ref.loss.item()) <= 1e-5 * abs(ref.loss.item())
    grads = torch_grads(hf_model, model)
    assert_grads_match(model.grads, grads, tol)  # every parameter, tied or shared ones once
    return grads


def max_rel_diff(ours, ref, floor=1e-6):
    """max |ours - ref| divided by the reference tensor's scale (its max |value|, at least `floor`)."""
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = max(float(np.abs(ref).max()), floor)
    return float(np.abs(ours - ref).max()) / scale


def assert_grads_match(ours: dict, theirs: dict, tol=1e-4):
    """Every parameter present on both sides, each gradient within tol of its own scale.

    The scale has a floor of 1e-3 x the largest gradient in the model: the attention key bias has a true
    gradient of exactly 0 (softmax ignores a shift shared by all keys), so both sides hold only rounding
    noise there (~1e-10), which must not be compared as if it were signal.
    """
    assert set(ours) == set(theirs), set(ours) ^ set(theirs)
    floor = 1e-3 * max(float(np.abs(g).max()) for g in theirs.values())
    for name, g in theirs.items():
        assert max_rel_diff(ours[name], g, floor=floor) < tol, name
