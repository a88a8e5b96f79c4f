"""Splitting a batch over model replicas on threads gives the whole batch's gradient and numbers."""

import numpy as np
import pytest

from minibert import BertConfig, BertForPreTraining
from minibert.layers import blas_threads
from minibert.layers.loss import IGNORE_INDEX
from minibert.training.evaluate import evaluate
from minibert.training.metrics import read_metrics
from minibert.training.pretrain import pretrain
from minibert.training.replicas import Replicas
from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus


def tiny_model(dtype=np.float64, dropout=0.0):
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=12, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=dropout)
    return BertForPreTraining(config, seed=3, dtype=dtype)


def padded_batch(B=5, T=10, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, T + 1, size=B)
    lengths[0] = T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int64)  # (B, T)
    ids = rng.integers(5, 50, size=(B, T)) * mask
    labels = np.where((rng.random((B, T)) < 0.3) & (mask == 1), ids, IGNORE_INDEX)
    labels[1] = IGNORE_INDEX  # a row with nothing to predict: its part of the MLM loss has weight 0
    labels[0, 0] = ids[0, 0]
    types = (np.arange(T)[None, :] >= lengths[:, None] // 2).astype(np.int64) * mask
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels,
            "next_sentence_label": rng.integers(0, 2, size=B)}


@pytest.mark.parametrize("use_nsp", [True, False])
@pytest.mark.parametrize("n", [2, 3])
def test_replicas_give_the_whole_batch_gradient_and_losses(use_nsp, n):
    model, batch = tiny_model(), padded_batch()
    whole = Replicas(model, 1).forward_backward(batch, use_nsp, loss_scale=0.5)
    expected = model.grads.clone()
    model.zero_grad()
    replicas = Replicas(model, n)
    split = replicas.forward_backward(batch, use_nsp, loss_scale=0.5)
    for name in model.params:
        np.testing.assert_allclose(model.grads[name], expected[name], rtol=1e-10, atol=1e-13, err_msg=name)
    for replica in replicas.models[1:]:
        assert not replica.grads.buffer.any()  # cleared, ready for the next batch
        assert replica.params is model.params  # one set of weights: an optimizer step moves all replicas
    assert split.loss == pytest.approx(whole.loss, rel=1e-12)
    assert split.mlm_loss == pytest.approx(whole.mlm_loss, rel=1e-12)
    assert split.nsp_loss == pytest.approx(whole.nsp_loss, rel=1e-12)
    assert (split.correct, split.masked, split.nsp_correct, split.pairs, split.tokens) == \
        (whole.correct, whole.masked, whole.nsp_correct, whole.pairs, whole.tokens)
    assert whole.loss > 0 and (whole.nsp_loss > 0) == use_nsp
    replicas.close()


def test_evaluation_over_replicas_equals_one_model():
    model = tiny_model()
    batches = [padded_batch(seed=s) for s in range(3)]
    one = evaluate(model, batches, use_nsp=True)
    two = evaluate(Replicas(model, 2), batches, use_nsp=True)
    assert two.keys() == one.keys()
    for k in one:
        assert two[k] == pytest.approx(one[k], rel=1e-12), k
    assert model.training  # evaluation puts the mode back


def test_replicas_have_their_own_dropout_streams_and_caches():
    model = tiny_model(dropout=0.2)
    replicas = Replicas(model, 2)
    other = replicas.models[1]
    assert other.bert is not model.bert and other.bert.model is other and model.bert.model is model
    a, b = model.rng.random(4), other.rng.random(4)
    assert not np.allclose(a, b)
    states = replicas.rng_states()
    drawn = other.rng.random(3)
    replicas.load_rng_states(states)
    np.testing.assert_array_equal(other.rng.random(3), drawn)


def test_a_replica_error_reaches_the_caller():
    model, batch = tiny_model(), padded_batch()
    replicas = Replicas(model, 2)
    batch["input_ids"] = batch["input_ids"].copy()
    batch["input_ids"][-1, 0] = 10_000  # outside the vocabulary, in the second replica's rows
    with pytest.raises(ValueError, match="vocab"):
        replicas.forward_backward(batch, use_nsp=True)
    replicas.close()


@pytest.mark.skipif(not blas_threads.available(), reason="NumPy's BLAS is not OpenBLAS here")
def test_blas_thread_count_is_changed_and_restored():
    before = blas_threads.get_blas_threads()
    with blas_threads.blas_threads(1):
        assert blas_threads.get_blas_threads() == 1
    assert blas_threads.get_blas_threads() == before


def test_pretraining_with_two_replicas_follows_the_one_replica_run(tmp_path, monkeypatch):
    """Same data, masks and schedule; the gradients differ only in float32 rounding (the two halves' sums are
    added in another order), which after 8 AdamW steps stays far below the changes the steps make."""
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "c.txt", synthetic_documents(60))
    runs = {}
    for n in (1, 2):
        pretrain(tiny_settings(corpus, tmp_path / "runs", name=f"r{n}", steps=8, batch_size=6, replicas=n,
                               eval_every=4, eval_examples=16), log=lambda *a: None)
        runs[n] = read_metrics(tmp_path / "runs" / f"r{n}" / "metrics.jsonl")
    train = {n: [r for r in runs[n] if r["split"] == "train"] for n in runs}
    evals = {n: [r for r in runs[n] if r["split"] == "eval"] for n in runs}
    assert [r["step"] for r in train[1]] == [r["step"] for r in train[2]] and len(evals[1]) == len(evals[2]) == 3
    for a, b in zip(train[1] + evals[1], train[2] + evals[2]):
        assert b["mlm_loss"] == pytest.approx(a["mlm_loss"], rel=1e-4)
        assert b.get("masked_tokens") == a.get("masked_tokens")
    assert evals[1][-1]["mlm_loss"] < evals[1][0]["mlm_loss"]  # it trained
