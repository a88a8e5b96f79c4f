"""ELECTRA's combined step: generator + discriminator sharing their embedding tables, against torch autograd over
transformers' two models with the same tensors tied, and the sampling / relabelling pieces on their own."""

import numpy as np
import pytest
from electra_reference import electra_batch, electra_config
from hf_reference import assert_grads_match, copy_weights, max_rel_diff

from minibert.config import BertConfig
from minibert.models.electra_pretraining import GEN, ElectraPretrainer, replace_masked, sample_tokens

TOL = 1e-4


def config(embedding_size=16):
    return BertConfig(vocab_size=61, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=20, embedding_size=embedding_size,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def test_sample_tokens_follows_the_softmax():
    logits = np.log(np.array([[0.5, 0.3, 0.2, 0.0]]) + 1e-30).repeat(20000, axis=0)  # token 3 never
    picks = sample_tokens(logits.astype(np.float32), np.random.default_rng(0))
    freq = np.bincount(picks, minlength=4) / len(picks)
    np.testing.assert_allclose(freq, [0.5, 0.3, 0.2, 0.0], atol=0.015)
    again = sample_tokens(logits[:50], np.random.default_rng(0))
    np.testing.assert_array_equal(again, picks[:50])  # seeded: the same draws


def test_replace_masked_labels_only_real_changes():
    ids = np.array([[2, 9, 4, 9, 3]])  # 4 is [MASK]-like at position 2; position 3 was randomly replaced by 9
    labels = np.array([[-100, -100, 7, 8, -100]])
    corrupted, replaced = replace_masked(ids, labels, np.array([7, 5]))  # a correct guess, then a wrong one
    np.testing.assert_array_equal(corrupted, [[2, 9, 7, 5, 3]])
    np.testing.assert_array_equal(replaced, [[0, 0, 0, 1, 0]])


def test_shared_tables_are_one_array():
    model = ElectraPretrainer(config(), seed=0)
    name = "electra.embeddings.word_embeddings.weight"
    assert model.generator.params[name] is model.discriminator.params[name]
    assert model.generator.grads[name] is model.discriminator.grads[name]
    assert GEN + name not in model.params
    assert model.gen_config.hidden_size == 8 and model.gen_config.embedding_size == 16


def test_combined_step_matches_torch_with_tied_embeddings():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = config()
    model = ElectraPretrainer(cfg, seed=1)
    ids, types, mask, labels, _ = electra_batch(cfg, seed=2)
    ids = np.where(labels != -100, 4, ids)  # the generator sees masks where it must predict
    out = model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels,
                        sample_rng=np.random.default_rng(5))
    model.backward(loss_scale=0.5)
    assert out.rtd_labels.sum() > 0 and out.corrupted_ids.shape == ids.shape

    disc = transformers.ElectraForPreTraining(electra_config(cfg)).train()
    gen = transformers.ElectraForMaskedLM(electra_config(model.gen_config)).train()
    copy_weights(model.discriminator, disc)
    copy_weights(model.generator, gen)
    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm"):
        setattr(gen.electra.embeddings, name, getattr(disc.electra.embeddings, name))  # one tensor, two users
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight  # and the tied decoder

    def t(x):
        return torch.from_numpy(np.asarray(x))

    g = gen(input_ids=t(ids), token_type_ids=t(types), attention_mask=t(mask), labels=t(labels))
    d = disc(input_ids=t(out.corrupted_ids), token_type_ids=t(types), attention_mask=t(mask),
             labels=t(out.rtd_labels))  # the same sampled replacements: sampling carries no gradient
    total = g.loss + 50.0 * d.loss
    (0.5 * total).backward()
    assert out.loss == pytest.approx(total.item(), rel=1e-5)
    assert out.rtd_loss == pytest.approx(d.loss.item(), rel=1e-5)
    assert max_rel_diff(out.rtd_logits, d.logits.detach().numpy()) < TOL

    ref = {n: p.grad.double().numpy() for n, p in disc.named_parameters()}
    ref.update({GEN + n: p.grad.double().numpy() for n, p in gen.named_parameters()
                if not n.startswith("electra.embeddings.")})
    assert_grads_match(model, ref, TOL)
    # the shared table really receives both models' shares: neither alone gives the sum
    w = "electra.embeddings.word_embeddings.weight"
    model.zero_grad()
    model.forward(ids, token_type_ids=types, attention_mask=mask, labels=labels, sample_rng=np.random.default_rng(5))
    model.generator.backward(0.5)
    assert max_rel_diff(model.grads[w], ref[w]) > 1e-2
