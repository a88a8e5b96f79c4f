"""Activation recompute (models/bert.py): with `set_recompute(True)` the forward keeps each layer's input only and
the backward runs the layer's forward again. The loss, every gradient and the dropout stream afterwards must be
the same bits as without it, in every family that runs on the shared encoder, with dropout and padding on."""

import numpy as np
import pytest

from minibert import BertConfig, BertForPreTraining, DistilBertConfig, DistilBertForMaskedLM
from minibert.models.electra_pretraining import ElectraPretrainer
from masked_batches import padded_masked_batch
from recompute_helpers import record_recomputed_layers

DROPOUT = dict(hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
SIZES = dict(vocab_size=53, hidden_size=24, num_hidden_layers=3, num_attention_heads=4, intermediate_size=40,
             max_position_embeddings=16)
FAMILIES = {
    "bert": lambda: BertForPreTraining(BertConfig(**SIZES, **DROPOUT), seed=3),
    "roberta-prelayernorm": lambda: BertForPreTraining(
        BertConfig(**SIZES, **DROPOUT, model_type="roberta-prelayernorm", type_vocab_size=1), seed=3),
    "albert (one layer, used 3 times)": lambda: BertForPreTraining(
        BertConfig(**SIZES, **DROPOUT, model_type="albert", embedding_size=8), seed=3),
    "distilbert": lambda: DistilBertForMaskedLM(DistilBertConfig(**SIZES, **DROPOUT), seed=3),
    "electra (generator and discriminator)": lambda: ElectraPretrainer(
        BertConfig(**SIZES, **DROPOUT, embedding_size=16), seed=3),
}


def batch(vocab_size, seed):
    return padded_masked_batch(vocab_size, {0: [1, 6], 1: [2, 3, 7], 2: [1]}, seed)


def step(model, seed):
    ids, mask, labels = batch(model.config.vocab_size, seed)
    model.zero_grad()
    # (ELECTRA samples its replacements from the model's own generator, between the two models' dropout draws)
    out = model.forward(ids, attention_mask=mask, labels=labels)
    model.backward()
    return out.loss


@pytest.mark.parametrize("family", list(FAMILIES))
def test_recompute_gives_the_same_bits(family, monkeypatch):
    plain, again = FAMILIES[family](), FAMILIES[family]()
    again.set_recompute(True)
    assert plain.training and again.recompute and not plain.recompute
    recomputed = record_recomputed_layers(monkeypatch)
    for seed in (0, 1):  # two steps: the second draws its dropout masks from where the first left the stream
        assert step(plain, seed) == step(again, seed)
        for name, g in plain.grads.items():
            np.testing.assert_array_equal(again.grads[name], g, err_msg=f"{family}: {name}, step {seed}")
        layer_grads = [g for name, g in plain.grads.items() if ".layer." in name]
        assert layer_grads and all(np.any(g != 0) for g in layer_grads)  # the layers were really backpropagated
    assert plain.rng.bit_generator.state == again.rng.bit_generator.state
    # every layer of every encoder was recomputed (ELECTRA: the generator's and the discriminator's), twice
    encoders = {id(m) for m, _ in recomputed}
    assert len(encoders) == (2 if isinstance(again, ElectraPretrainer) else 1)
    assert len(recomputed) == 2 * again.config.num_hidden_layers * len(encoders)


def test_a_forward_whose_layer_caches_are_dropped_skips_the_gelu_derivative(gelu_kernel, monkeypatch):
    """With recompute (a step's first pass, and forward_only's evaluations and inference) no backward reads the
    layers' caches, so their GELU computes no derivative; the backward's recompute pass does. Same numbers."""
    from minibert.layers import activations
    from minibert.models.base import forward_only
    gelu, gelu_backward = activations.ACTIVATIONS["gelu"]
    derivatives = []  # per encoder-layer GELU (F = intermediate_size): was its derivative computed?

    def recording(x, for_backward=True):
        out, cache = gelu(x, for_backward)
        if x.shape[-1] == SIZES["intermediate_size"]:  # (not the MLM head's GELU, of width H)
            derivatives.append(cache is not None)
        return out, cache
    monkeypatch.setitem(activations.ACTIVATIONS, "gelu", (recording, gelu_backward))
    plain, again = FAMILIES["bert"](), FAMILIES["bert"]()
    again.set_recompute(True)
    L = SIZES["num_hidden_layers"]
    assert step(plain, 0) == step(again, 0)
    assert derivatives == [True] * L + [False] * L + [True] * L  # plain; recompute: forward, then backward
    derivatives.clear()
    ids, mask, _ = batch(SIZES["vocab_size"], 1)
    with forward_only(plain):
        inferred = plain.forward(ids, attention_mask=mask).prediction_logits
    assert derivatives == [False] * L
    plain.eval()
    np.testing.assert_array_equal(inferred, plain.forward(ids, attention_mask=mask).prediction_logits)


def _bytes_held(obj, seen):
    """Bytes of the distinct NumPy buffers reachable through tuples, lists and dicts (views count once)."""
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if id(base) in seen:
            return 0
        seen.add(id(base))
        return base.nbytes
    if isinstance(obj, (tuple, list)):
        return sum(_bytes_held(o, seen) for o in obj)
    if isinstance(obj, dict):
        return sum(_bytes_held(o, seen) for o in obj.values())
    return 0


def test_recompute_keeps_only_the_layer_inputs():
    cfg = BertConfig(vocab_size=53, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64, **DROPOUT)
    rng = np.random.default_rng(0)
    ids, mask = rng.integers(5, 53, (4, 64)), np.ones((4, 64), dtype=np.int64)
    held = {}
    for recompute in (False, True):
        model = BertForPreTraining(cfg, seed=0).set_recompute(recompute)
        model.forward(ids, attention_mask=mask)
        layers = model.bert._cache[2]  # (c_emb, c_proj, c_layers, ...): what the encoder keeps per layer
        held[recompute] = _bytes_held(layers, set())
    inputs = cfg.num_hidden_layers * 4 * 64 * 32 * 4  # L inputs of (B, T, H) float32
    assert held[True] == inputs
    assert held[False] > 10 * held[True]  # attention probabilities, dropout masks, the (B, T, F) activations...


def test_inference_paths_keep_no_layer_activations_and_restore_the_model():
    """Fine-tuning's evaluation and prediction (forward_in_batches) and sentence embeddings run forward only:
    the layers keep just their inputs while they run, and the model comes back in the mode it was in."""
    from minibert import BertForSequenceClassification
    from minibert.embeddings import SentenceEncoder
    from minibert.finetune.train import forward_in_batches
    from minibert.tokenizer.wordpiece import WordPieceTokenizer
    cfg = BertConfig(**SIZES, **DROPOUT)
    model = BertForSequenceClassification(cfg, num_labels=3, seed=0)
    rng = np.random.default_rng(0)
    encoded = [(rng.integers(5, 53, n), np.zeros(n, dtype=np.int64)) for n in (5, 9, 12)]
    kept, forward = [], model.forward

    def forward_and_look(*args, **kwargs):  # what the encoder keeps when each batch's forward returns
        out = forward(*args, **kwargs)
        kept.extend(len(entry) for entry in model.bert._cache[2])
        return out

    model.forward = forward_and_look
    assert len(list(forward_in_batches(model, encoded, 0, batch_size=2))) == 2
    del model.forward
    assert kept == [6] * (2 * cfg.num_hidden_layers)  # (input, generator, state, mask, training, rows) per layer
    assert model._cache is None and model.bert._cache is None  # each batch's caches dropped after its forward
    assert model.training and not model.recompute
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(48)]
    encoder = SentenceEncoder(model, WordPieceTokenizer(vocab))
    assert encoder.encode(["w1 w2 w3", "w4"]).shape == (2, cfg.hidden_size)
    assert not model.recompute
