"""Build the Hugging Face reference for a minibert model: same config, same weights (copied by name).

Families other than BERT (RoBERTa, RobertaPreLayerNorm, ALBERT) name their tensors differently; minibert.io.families
renames between the two, as checkpoints do."""

import re

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
    assert_grads_match(model, torch_grads(hf_model, model), tol)


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
    assert_grads_match(model, torch_grads(hf_model, model), tol)
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
    assert_grads_match(model, grads, tol)  # every parameter, tied or shared ones once
    return grads


def max_rel_diff(ours, ref, floor=1e-6):
    """max |ours - ref| divided by the reference tensor's scale (its max |value|, at least `floor`)."""
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    scale = max(float(np.abs(ref).max()), floor)
    return float(np.abs(ours - ref).max()) / scale


# Float32 parity and gradients that are zero in theory
#
# Some gradients are exactly zero in exact arithmetic, whatever the weights and the batch:
# - the attention key bias (BERT, RoBERTa, ALBERT, ELECTRA, DistilBERT's k_lin, DeBERTa's pos_key_proj, and DeBERTa's
#   key_proj when no p2c term reads the keys through the positions): q . (k_j + b) = q . k_j + q . b adds the same
#   q . b to every key j of a query's row, and the softmax over keys ignores a shift shared by the whole row;
# - the QA head's bias, and the bias of the LayerNorm whose output it reads: each adds one value to the start (or
#   end) logit of every position, and the softmax over positions ignores that shift too. In numbers: the bias's
#   gradient is the sum over positions of (softmax - one-hot), and each row of that sums to 0.
# In float32 both sides hold only the rounding left by that cancellation, and how much is left depends on the order
# of the sums: MKL's AVX-512 path (Intel CPUs) leaves a different residue from its AVX2 path (AMD CPUs), and
# OpenBLAS's kernels differ likewise. Measured: up to ~8e-8 x the model's largest gradient for the QA bias, where
# the cancelling terms are of order one; ~1e-10 for key biases, where they cancel inside each softmax row.
# A relative comparison would compare noise with noise. These tensors are compared absolutely instead: the
# reference's within ZERO_ROUNDOFFS unit roundoffs of the model's largest gradient, and ours within as much of the
# reference's. In float32 (unit roundoff 6e-8) that is
# ~1e-6 x the largest gradient: ten times the largest residue measured, and still far below what a wrong gradient
# gives (a share of the largest gradient, not a millionth of it). Every other tensor keeps its relative bound.
# tests/models/test_grad_comparison.py checks that each of these gradients is zero in float64, that injected noise
# of the measured size passes, and that a small real gradient does not.
ZERO_ROUNDOFFS = 16

_KEY_BIAS = re.compile(r"(attention\.(self\.)?key|attention\.k_lin|pos_key_proj)\.bias$")
_CONTENT_KEY_BIAS = re.compile(r"attention\.self\.key_proj\.bias$")


def zero_in_theory(model) -> set[str]:
    """The parameters of `model` (any minibert model) whose gradient is exactly zero in exact arithmetic, under
    minibert's names (the block above says why)."""
    names = set(model.grads)
    zero = {n for n in names if _KEY_BIAS.search(n)}
    cfg = getattr(model, "config", None)
    if cfg is not None and cfg.model_type == "deberta-v2" and "p2c" not in (cfg.pos_att_type or []):
        zero |= {n for n in names if _CONTENT_KEY_BIAS.search(n)}
    if "qa_outputs.bias" in names:
        zero.add("qa_outputs.bias")
        if not cfg.shared_layers:  # ALBERT's one layer also feeds its next application: not zero there
            enc = model.bert
            zero.add(enc.prefix + "LayerNorm.bias" if cfg.layer_norm_position == "pre"
                     else enc.layer_prefix(cfg.num_hidden_layers - 1) + "output.LayerNorm.bias")
    assert zero <= names, zero - names  # a name that moved must not turn a check into no check
    return zero


def assert_grads_match(model, theirs: dict, tol=1e-4):
    """Every parameter gradient of `model` (a minibert model) equals the reference's `theirs` (same names).

    A gradient with signal: max |ours - theirs| < tol x its own scale, the scale floored at 1e-3 x the model's
    largest gradient (a tensor a thousand times smaller than the largest holds as much rounding, relative to
    itself, as it has signal). A gradient that is zero in theory (zero_in_theory): the reference's within
    ZERO_ROUNDOFFS unit roundoffs (of our gradients' dtype) of the largest gradient, and ours within as much of the
    reference's, compared absolutely (the block above says why).
    """
    ours = model.grads
    assert set(ours) == set(theirs), set(ours) ^ set(theirs)
    largest = max(float(np.abs(g).max()) for g in theirs.values())
    zero = zero_in_theory(model)
    for name, g in theirs.items():
        if name in zero:
            noise = ZERO_ROUNDOFFS * float(np.finfo(ours[name].dtype).eps) / 2 * largest
            assert float(np.abs(g).max()) <= noise, f"{name}: the reference's gradient is not zero: {g}"
            diff = float(np.abs(np.asarray(ours[name], np.float64) - g).max())
            assert diff <= noise, f"{name}: zero in theory; ours {ours[name]}, theirs {g}: {diff:.3g} > {noise:.3g}"
        else:
            err = max_rel_diff(ours[name], g, floor=1e-3 * largest)
            assert err < tol, f"{name}: relative error {err:.3g} >= {tol}"
