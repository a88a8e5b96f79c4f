"""The sparse last layer (models/pretraining.py, models/bert.py): with labels, a masked-LM model runs its last
encoder layer after the attention only at the positions the loss reads (and [CLS] for the pooler), and a sequence
classifier only at [CLS]. The loss, the logits and every gradient must be those of the full layer, in every
family that runs on the shared encoder, and the last layer must really have run on those rows only."""

import numpy as np
import pytest

import minibert.models.bert as bert_module
from minibert import (BertConfig, BertForMaskedLM, BertForPreTraining, BertForSequenceClassification,
                      DistilBertConfig, DistilBertForMaskedLM, DistilBertForSequenceClassification)
from minibert.models.electra import ElectraForMaskedLM
from masked_batches import padded_masked_batch

SIZES = dict(vocab_size=53, hidden_size=24, num_hidden_layers=3, num_attention_heads=4, intermediate_size=40,
             max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
FAMILIES = {  # name: (model, whether it has a pooler and an NSP head)
    "bert pre-training (NSP: [CLS] rows too)": (lambda: BertForPreTraining(BertConfig(**SIZES), seed=3,
                                                                           dtype=np.float64), True),
    "bert masked LM": (lambda: BertForMaskedLM(BertConfig(**SIZES), seed=3, dtype=np.float64), False),
    "roberta-prelayernorm (final LayerNorm on the rows)": (lambda: BertForMaskedLM(
        BertConfig(**SIZES, model_type="roberta-prelayernorm", type_vocab_size=1), seed=3, dtype=np.float64), False),
    "albert (one layer, used 3 times)": (lambda: BertForPreTraining(
        BertConfig(**SIZES, model_type="albert", embedding_size=8), seed=3, dtype=np.float64), True),
    "distilbert": (lambda: DistilBertForMaskedLM(DistilBertConfig(**SIZES), seed=3, dtype=np.float64), False),
    "electra generator": (lambda: ElectraForMaskedLM(BertConfig(**SIZES, embedding_size=16), seed=3,
                                                     dtype=np.float64), False),
}


def batch(vocab_size):
    # row 1's position 0: a [CLS] row that the loss reads as well (counted once among the last layer's rows)
    return padded_masked_batch(vocab_size, {0: [1, 6, 10], 1: [0, 3, 7], 2: [4]})


def record_layer_output_shapes(monkeypatch) -> list:
    """The shape of every encoder layer's output from now on, in call order."""
    shapes, original = [], bert_module.encoder_layer_forward

    def recording(*args, **kwargs):
        out = original(*args, **kwargs)
        shapes.append(out[0].shape)
        return out
    monkeypatch.setattr(bert_module, "encoder_layer_forward", recording)
    return shapes


def run(model, sparse, with_nsp, shapes):
    """One forward and backward; returns the output, the gradients and the shapes the layers returned."""
    model.sparse_last_layer = sparse
    shapes.clear()
    ids, mask, labels = batch(model.config.vocab_size)
    model.zero_grad()
    nsp = dict(next_sentence_label=np.array([0, 1, 1])) if with_nsp else {}
    out = model.forward(ids, attention_mask=mask, labels=labels, **nsp)
    model.backward()
    return out, {k: g.copy() for k, g in model.grads.items()}, list(shapes)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_sparse_last_layer_gives_the_full_layers_loss_logits_and_gradients(family, monkeypatch):
    make, with_nsp = FAMILIES[family]
    model, shapes = make(), record_layer_output_shapes(monkeypatch)
    dense_out, dense_grads, dense_shapes = run(model, False, with_nsp, shapes)
    sparse_out, sparse_grads, sparse_shapes = run(model, True, with_nsp, shapes)

    np.testing.assert_allclose(sparse_out.loss, dense_out.loss, rtol=1e-13)
    np.testing.assert_allclose(sparse_out.prediction_logits, dense_out.prediction_logits, rtol=1e-11, atol=1e-13)
    np.testing.assert_array_equal(sparse_out.masked_positions, dense_out.masked_positions)
    for name, g in dense_grads.items():
        np.testing.assert_allclose(sparse_grads[name], g, rtol=1e-9, atol=1e-13, err_msg=name)
    assert all(np.any(g != 0) for name, g in dense_grads.items() if ".layer." in name)

    # Which rows the last layer ran on: the 7 labelled positions, plus the [CLS] rows the pooler reads (one of
    # them, row 1's, is labelled too); every other layer, and the dense run, on all 3 x 11 positions.
    L, H = model.config.num_hidden_layers, model.config.hidden_size
    assert dense_shapes == [(3, 11, H)] * L
    assert sparse_shapes == [(3, 11, H)] * (L - 1) + [(7 + 2, H) if with_nsp else (7, H)]


def test_the_sparse_last_layer_is_on_by_default_and_off_where_all_positions_are_asked_for():
    model = FAMILIES["bert masked LM"][0]()
    assert model.sparse_last_layer
    ids, mask, labels = batch(model.config.vocab_size)
    out = model.forward(ids, attention_mask=mask, labels=labels, output_hidden_states=True)
    assert out.hidden_states[-1].shape == (3, 11, model.config.hidden_size)  # the whole last layer
    assert model.forward(ids, attention_mask=mask).logits.shape == (3, 11, model.config.vocab_size)  # no labels


def test_a_gradient_for_the_whole_last_hidden_state_needs_the_whole_last_layer():
    """A distillation loss on the last hidden state (backward's d_last_hidden_state) must come with a forward
    that computed all of it (output_hidden_states=True); otherwise a one-line error, not wrong gradients."""
    model = FAMILIES["bert masked LM"][0]()
    ids, mask, labels = batch(model.config.vocab_size)
    d_hidden = np.ones((3, 11, model.config.hidden_size))
    model.forward(ids, attention_mask=mask, labels=labels)
    with pytest.raises(ValueError, match=r"d_last_hidden_state has shape \(3, 11, 24\), expected \(7, 24\).*"
                                         r"output_hidden_states=True"):
        model.backward(d_last_hidden_state=d_hidden)
    model.forward(ids, attention_mask=mask, labels=labels, output_hidden_states=True)
    model.backward(d_last_hidden_state=d_hidden)  # fine


def test_switching_it_off_reaches_the_models_inside_electras_pretrainer(monkeypatch):
    from minibert.models.electra_pretraining import ElectraPretrainer
    model = ElectraPretrainer(BertConfig(**SIZES, embedding_size=16), seed=3)
    shapes = record_layer_output_shapes(monkeypatch)
    ids, mask, labels = batch(model.config.vocab_size)
    model.forward(ids, attention_mask=mask, labels=labels)
    generator_last = [s for s in shapes if len(s) == 2]
    assert generator_last == [(7, model.gen_config.hidden_size)]  # the generator's last layer at the 7 rows
    model.sparse_last_layer = False
    assert not model.generator.sparse_last_layer and not model.discriminator.sparse_last_layer
    shapes.clear()
    model.forward(ids, attention_mask=mask, labels=labels)
    assert all(len(s) == 3 for s in shapes)


def test_the_encoders_rows_are_checked():
    model = FAMILIES["bert masked LM"][0]()
    ids, mask, _ = batch(model.config.vocab_size)
    with pytest.raises(ValueError, match=r"rows must be flat indices into the 3 x 11 batch, in 0\.\.32"):
        model.bert.forward(ids, attention_mask=mask, rows=np.array([0, 33]))
    with pytest.raises(ValueError, match=r"rows must be flat indices into B\*T or \"cls\", got 'CLS'"):
        model.bert.forward(ids, attention_mask=mask, rows="CLS")
    with pytest.raises(ValueError, match="rows must be integer flat indices into B\\*T, got dtype bool"):
        model.bert.forward(ids, attention_mask=mask, rows=np.ones(33, dtype=bool))
    with pytest.raises(ValueError, match="output_hidden_states"):
        model.bert.forward(ids, attention_mask=mask, output_hidden_states=True, rows=np.array([0, 5]))
    out = model.bert.forward(ids, attention_mask=mask, rows=np.array([7, 2, 7]))  # sorted and made distinct
    np.testing.assert_array_equal(out.rows, [2, 7])
    full = model.bert.forward(ids, attention_mask=mask).last_hidden_state.reshape(33, -1)
    np.testing.assert_allclose(out.last_hidden_state, full[[2, 7]], rtol=1e-12)


CLASSIFIERS = {  # the head reads [CLS] through the pooler (BERT) or directly (DistilBERT's pre_classifier)
    "bert": lambda: BertForSequenceClassification(BertConfig(**SIZES), num_labels=3, seed=3, dtype=np.float64),
    "distilbert": lambda: DistilBertForSequenceClassification(DistilBertConfig(**SIZES), num_labels=3, seed=3,
                                                              dtype=np.float64),
}


@pytest.mark.parametrize("family", list(CLASSIFIERS))
def test_a_classifier_runs_its_last_layer_at_cls_only_with_the_same_numbers(family, monkeypatch):
    model, shapes = CLASSIFIERS[family](), record_layer_output_shapes(monkeypatch)
    ids, mask, _ = batch(model.config.vocab_size)
    results = {}
    for sparse in (False, True):
        model.sparse_last_layer = sparse
        shapes.clear()
        model.zero_grad()
        model.rng = np.random.default_rng(7)  # the same classifier dropout (DistilBERT's seq_classif_dropout)
        out = model.forward(ids, attention_mask=mask, labels=np.array([0, 2, 1]))
        model.backward()
        results[sparse] = out, {k: g.copy() for k, g in model.grads.items()}, list(shapes)
    (dense_out, dense_grads, dense_shapes), (sparse_out, sparse_grads, sparse_shapes) = results[False], results[True]
    np.testing.assert_allclose(sparse_out.loss, dense_out.loss, rtol=1e-13)
    np.testing.assert_allclose(sparse_out.logits, dense_out.logits, rtol=1e-11, atol=1e-13)
    for name, g in dense_grads.items():
        np.testing.assert_allclose(sparse_grads[name], g, rtol=1e-9, atol=1e-13, err_msg=name)
    L, H = model.config.num_hidden_layers, model.config.hidden_size
    assert dense_shapes == [(3, 11, H)] * L
    assert sparse_shapes == [(3, 11, H)] * (L - 1) + [(3, H)]  # one row per sequence: its [CLS]
    # a single sequence given as a 1-D array, and hidden states asked for (the whole last layer); no dropout
    model.eval()
    logits = model.forward(ids, attention_mask=mask).logits
    np.testing.assert_allclose(model.forward(ids[0]).logits, logits[:1], rtol=1e-11)  # row 0 has no padding
    out = model.forward(ids, attention_mask=mask, output_hidden_states=True)
    assert out.hidden_states[-1].shape == (3, 11, H)
    np.testing.assert_allclose(out.logits, logits, rtol=1e-12)
