"""float64 finite differences through the DistilBERT path: no token types, the renamed parameters, dropout on
(no dropout after out_lin, fixed masks per call) and the extra logits/hidden-state gradients a distillation
loss adds into BertForMaskedLM.backward."""

import numpy as np
from gradcheck import check_grad

from minibert.distilbert_config import DistilBertConfig
from minibert.models.distilbert import DistilBertForMaskedLM

TOL = 1e-6


def test_distilbert_mlm_gradient_with_dropout_and_extra_output_gradients():
    cfg = DistilBertConfig(vocab_size=31, hidden_size=12, num_hidden_layers=2, num_attention_heads=3,
                           intermediate_size=20, max_position_embeddings=12, hidden_act="gelu",
                           hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    rng = np.random.default_rng(0)
    model = DistilBertForMaskedLM(cfg, seed=1, dtype=np.float64)
    for p in model.params.values():
        p += 0.05 * rng.standard_normal(p.shape)
    ids = rng.integers(1, cfg.vocab_size, (2, 7))
    mask = np.array([[1] * 7, [1] * 5 + [0] * 2])
    ids[mask == 0] = 0
    labels = np.full((2, 7), -100)
    labels[0, [1, 4]] = ids[0, [1, 4]]
    labels[1, [2, 3]] = rng.integers(1, cfg.vocab_size, 2)
    R_logits = rng.standard_normal((4, cfg.vocab_size))  # another loss: sum(R * logits) + sum(S * hidden)
    R_hidden = rng.standard_normal((2, 7, 12))

    def loss():
        model.rng = np.random.default_rng(42)
        out = model.forward(ids, attention_mask=mask, labels=labels, output_hidden_states=True)
        return out.loss + (R_logits * out.prediction_logits).sum() + (R_hidden * out.hidden_states[-1]).sum()

    loss()
    model.zero_grad()
    model.rng = np.random.default_rng(42)
    model.forward(ids, attention_mask=mask, labels=labels, output_hidden_states=True)  # (the whole last layer: below)
    model.backward(d_logits=R_logits, d_last_hidden_state=R_hidden)
    for name, p in model.params.items():
        err = check_grad(loss, p, model.grads[name], rng=rng, max_entries=8)
        assert err < TOL, f"{name}: relative error {err:.2e}"
