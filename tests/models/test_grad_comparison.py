"""The float32 parity comparison itself (hf_reference.assert_grads_match): the gradients it treats as zero in theory
are zero (in float64, where rounding is a billion times smaller), the rounding residue that another CPU path leaves
on them passes, and neither a small spurious gradient there nor a small error in a gradient with signal does."""

import numpy as np
import pytest
from hf_reference import ZERO_ROUNDOFFS, assert_grads_match, torch_grads, zero_in_theory
from test_classification_parity import padded_pairs
from test_deberta_parity import _perturb, reference
from test_deberta_parity import config as deberta_config
from test_distilbert_parity import config as distilbert_config
from test_token_heads_parity import small_config, twin

from minibert import BertConfig, DebertaV2ForQuestionAnswering, DebertaV2Model, DistilBertForMaskedLM
from minibert.models.question_answering import BertForQuestionAnswering

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

START, END = np.array([3, 9, 1, 5]), np.array([6, 12, 4, 16])  # the last end is T: ignored


def qa_model(model_type, dtype=np.float32):
    cfg = BertConfig.from_dict({**small_config().to_dict(), "model_type": model_type})
    return BertForQuestionAnswering(cfg, seed=7, dtype=dtype)


def inputs():
    """(ids, types, mask) (B 4, T 16) with padding; ids below 97, every model's vocabulary here."""
    ids, types, mask = padded_pairs(np.random.default_rng(0))
    return ids % 97, types, mask


def qa_backward(model):
    ids, types, mask = inputs()
    model.forward(ids, token_type_ids=types, attention_mask=mask, start_positions=START, end_positions=END)
    model.backward()
    return ids, types, mask


def deberta_qa(dtype=np.float32):
    model = DebertaV2ForQuestionAnswering(deberta_config(share_att_key=False), seed=0, dtype=dtype)
    _perturb(model)
    return model


def largest(grads):
    return max(float(np.abs(g).max()) for g in grads.values())


def deberta_c2p():
    model = DebertaV2Model(deberta_config(pos_att_type=["c2p"], share_att_key=False), seed=0, dtype=np.float64)
    _perturb(model)
    ids, _, mask = inputs()
    out = model.forward(ids, attention_mask=mask)
    model.backward(np.random.default_rng(1).standard_normal(out.last_hidden_state.shape))
    return model


def distilbert_mlm():
    model = DistilBertForMaskedLM(distilbert_config(), seed=2, dtype=np.float64)
    ids, _, mask = inputs()
    rng = np.random.default_rng(1)
    model.forward(ids, attention_mask=mask, labels=np.where(rng.random(ids.shape) < 0.3, ids, -100))
    model.backward()
    return model


def qa_float64(model):
    if isinstance(model, DebertaV2ForQuestionAnswering):
        ids, _, mask = inputs()
        model.forward(ids, attention_mask=mask, start_positions=START, end_positions=END)
        model.backward()
    else:
        qa_backward(model)
    return model


# A model after one backward in float64, and names that must NOT count as zero: what the rules leave out, and why.
FLOAT64_CASES = {
    "bert-qa": (lambda: qa_float64(qa_model("bert", np.float64)), []),
    # the final LayerNorm feeds the head; the last layer's own output is normalised by it, so not zero
    "preln-qa": (lambda: qa_float64(qa_model("roberta-prelayernorm", np.float64)),
                 ["bert.encoder.layer.1.output.dense.bias"]),
    # ALBERT's one layer also feeds its own next application
    "albert-qa": (lambda: qa_float64(qa_model("albert", np.float64)), ["bert.encoder.layer.0.output.LayerNorm.bias"]),
    # p2c reads the keys through the positions
    "deberta-qa-p2c": (lambda: qa_float64(deberta_qa(np.float64)),
                       ["deberta.encoder.layer.0.attention.self.key_proj.bias"]),
    "deberta-c2p": (deberta_c2p, []),
    "distilbert-mlm": (distilbert_mlm, []),
}


@pytest.mark.parametrize("case", list(FLOAT64_CASES))
def test_what_is_compared_as_zero_is_zero_in_float64(case):
    build, with_signal = FLOAT64_CASES[case]
    model = build()
    zero = zero_in_theory(model)
    assert any("key" in n or "k_lin" in n for n in zero), "every model here has attention key biases"
    top = largest(model.grads)
    for name in zero:
        assert np.abs(model.grads[name]).max() <= 1e-13 * top, name
    for name in with_signal:  # a rule that took these in would hide a real gradient behind the noise bound
        assert name not in zero and np.abs(model.grads[name]).max() > 1e-4 * top, name
    if "qa_outputs.bias" in model.grads:
        assert "qa_outputs.bias" in zero


def float32_qa_pairs():
    """(minibert QA model, the reference's gradients) after the same backward, float32: BERT and DeBERTa."""
    ours = qa_model("bert")
    theirs = twin(ours).train()
    ids, types, mask = qa_backward(ours)
    ref = theirs(input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types),
                 attention_mask=torch.from_numpy(mask), start_positions=torch.from_numpy(START),
                 end_positions=torch.from_numpy(END))
    ref.loss.backward()
    yield "bert", ours, torch_grads(theirs)
    ours = deberta_qa()
    hf = reference(ours, "DebertaV2ForQuestionAnswering")
    ours.forward(ids, attention_mask=mask, start_positions=START, end_positions=END)
    ours.backward()
    hf(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), start_positions=torch.from_numpy(START),
       end_positions=torch.from_numpy(END)).loss.backward()
    yield "deberta", ours, torch_grads(hf, ours)


@pytest.mark.parametrize("family", ["bert", "deberta"])
def test_rounding_residue_of_another_cpu_path_passes(family):
    """4e-8 on a zero-in-theory gradient is what MKL's AVX-512 path left on the QA bias (against ~1e-8 on its AVX2
    path): added to ours, away from the reference's own residue, the comparison must still hold. (A relative
    comparison floored at 1e-3 x the largest gradient refuses this: its bound is 1e-7 of the largest.)"""
    _, model, theirs = next(c for c in float32_qa_pairs() if c[0] == family)
    assert_grads_match(model, theirs)
    for name in zero_in_theory(model):
        model.grads[name] -= np.float32(4e-8) * np.where(theirs[name] > 0, 1, -1).astype(np.float32)
    assert_grads_match(model, theirs)


@pytest.mark.parametrize("family", ["bert", "deberta"])
def test_a_small_spurious_gradient_or_error_is_refused(family):
    _, model, theirs = next(c for c in float32_qa_pairs() if c[0] == family)
    top = largest(theirs)
    bound = ZERO_ROUNDOFFS * float(np.finfo(np.float32).eps) / 2 * top
    model.grads["qa_outputs.bias"] += np.float32(3 * bound)  # three times the noise bound: a wrong gradient
    with pytest.raises(AssertionError, match="qa_outputs.bias: zero in theory"):
        assert_grads_match(model, theirs)
    model.grads["qa_outputs.bias"][:] = theirs["qa_outputs.bias"]
    model.grads["qa_outputs.weight"] *= np.float32(1 + 3e-4)  # a gradient with signal, 3e-4 off: above tol 1e-4
    with pytest.raises(AssertionError, match="qa_outputs.weight: relative error"):
        assert_grads_match(model, theirs)
