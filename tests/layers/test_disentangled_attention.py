"""DeBERTa's disentangled attention (layers/disentangled_attention.py): the float64 finite-difference check of its
backward (with log buckets that collide and distances clamped at the table's ends, a padded key and a fully padded
query row), the scatter-add of the gathers against a plain loop, and the relative-position index table against
transformers' own, as integers."""

import numpy as np
import pytest
from gradcheck import check_grad

from minibert import DebertaV2Config
from minibert.layers.disentangled_attention import (RelativeAttention, disentangled_attention_backward,
                                                    disentangled_attention_forward, make_log_bucket_position,
                                                    relative_position_index, scatter_columns)

PREFIX = "attention.self."
TOL = 1e-6  # relative error, as every layer's check (tests/layers/test_layer_gradients.py)


def config(**kw):
    # T = 7 with 4 buckets (mid 2) up to 6 positions: distances 3..6 share log buckets, and 6 maps past the table
    values = dict(vocab_size=11, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  relative_attention=True, position_buckets=4, max_relative_positions=6,
                  pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=False)
    values.update(kw)
    return DebertaV2Config(**values)


def test_index_table_has_colliding_and_clamped_buckets():
    cfg = config()
    T, S = 7, cfg.relative_span
    r = np.arange(T)[:, None] - np.arange(T)[None, :]
    bucket = make_log_bucket_position(r, cfg.position_buckets, cfg.max_relative_positions)
    idx = relative_position_index(T, cfg)
    assert ((bucket + S < 0) | (bucket + S > 2 * S - 1)).any()  # clamped to the first or last row
    assert len(np.unique(idx[T - 1])) < T  # a query row where two keys read the same relative row
    assert idx.min() == 0 and idx.max() == 2 * S - 1


@pytest.mark.parametrize("one_hot_limit", [1 << 22, 0], ids=["one-hot", "bincount"])
def test_scatter_columns_sums_collisions(monkeypatch, one_hot_limit):
    from minibert.layers import disentangled_attention
    monkeypatch.setattr(disentangled_attention, "ONE_HOT_LIMIT", one_hot_limit)
    rng = np.random.default_rng(0)
    d = rng.standard_normal((2, 3, 5, 5))
    idx = rng.integers(0, 4, (5, 5))  # many collisions in each row
    expected = np.zeros((2, 3, 5, 4))
    for i in range(5):
        for j in range(5):
            expected[:, :, i, idx[i, j]] += d[:, :, i, j]
    np.testing.assert_allclose(scatter_columns(d, idx, 4), expected, rtol=1e-12, atol=1e-12)


def _params(cfg, rng):
    H = cfg.hidden_size
    names = ["query_proj", "key_proj", "value_proj", *cfg.separate_position_projections]
    params = {}
    for n in names:
        params[PREFIX + n + ".weight"] = rng.standard_normal((H, H)) * 0.5
        params[PREFIX + n + ".bias"] = rng.standard_normal(H) * 0.5
    return params


@pytest.mark.parametrize("kw", [dict(share_att_key=False), dict(share_att_key=True),
                                dict(pos_att_type=["c2p"], position_buckets=-1, max_relative_positions=3),
                                dict(pos_att_type=["p2c"], position_buckets=-1, max_relative_positions=3)],
                         ids=["separate-keys", "shared-keys", "c2p-clamped", "p2c-clamped"])
def test_disentangled_attention_gradient(kw):
    cfg = config(**kw)
    rng = np.random.default_rng(1)
    B, T, H = 2, 7, cfg.hidden_size
    x = rng.standard_normal((B, T, H))
    params = _params(cfg, rng)
    rel = rng.standard_normal((2 * cfg.relative_span, H))
    mask = np.ones((B, T), bool)
    mask[1, 5:] = False  # two padded keys, and two fully padded query rows
    pair = mask[:, None, :, None] & mask[:, None, None, :]
    G = rng.standard_normal((B, T, H))
    idx = relative_position_index(T, cfg)

    def loss():
        shared = RelativeAttention(pair, rel, idx)
        ctx, _, _ = disentangled_attention_forward(x, params, PREFIX, shared, cfg, None, False)
        return float((ctx * G).sum())

    shared = RelativeAttention(pair, rel, idx)
    ctx, probs, cache = disentangled_attention_forward(x, params, PREFIX, shared, cfg, None, False)
    np.testing.assert_allclose(probs[1, :, 6], 1.0 / T)  # a padded query row: uniform, as transformers gives it
    assert np.all(probs[0, :, :, :] > 0) and np.all(probs[1, :, :5, 5:] == 0)  # padded keys get nothing
    grads = {k: np.zeros_like(v) for k, v in params.items()}
    dx = disentangled_attention_backward(G, cache, params, grads, PREFIX, cfg)
    assert check_grad(loss, x, dx) < TOL
    assert check_grad(loss, rel, shared.d_rel) < TOL
    for name, p in params.items():  # 24 random entries of each weight matrix, every bias entry
        assert check_grad(loss, p, grads[name], max_entries=24) < TOL, name
    if "p2c" in cfg.pos_att_type:  # the key bias reaches p2c (k_j varies with j there): not zero as in BERT
        assert np.abs(grads[PREFIX + "key_proj.bias"]).max() > 1e-3


def test_without_relative_attention_the_scale_still_counts_the_terms():
    """transformers divides by sqrt(D (1 + len(pos_att_type))) even when relative_attention is off."""
    cfg_on = config(relative_attention=False)
    cfg_plain = config(relative_attention=False, pos_att_type=[])
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 8))
    params = _params(cfg_plain, rng)
    shared = RelativeAttention(None, None, relative_position_index(5, cfg_on))
    _, p_on, _ = disentangled_attention_forward(x, params, PREFIX, shared, cfg_on, None, False)
    _, p_plain, _ = disentangled_attention_forward(x, params, PREFIX, shared, cfg_plain, None, False)
    assert not np.allclose(p_on, p_plain)
    logits = np.log(p_plain) - np.log(p_plain)[..., :1]
    np.testing.assert_allclose(np.log(p_on) - np.log(p_on)[..., :1], logits / np.sqrt(3), atol=1e-10)


# (position_buckets, max_relative_positions, max_position_embeddings, T): the tests' configs, deberta-mini's, and
# DeBERTa-v3's (256 buckets up to 512 positions)
TABLES = [(4, 6, 16, 7), (8, 12, 24, 18), (6, 24, 24, 18), (-1, 8, 24, 18), (-1, -1, 24, 18), (32, -1, 64, 64),
          (256, 512, 512, 512), (128, 256, 512, 400)]


@pytest.mark.parametrize("buckets,max_rel,positions,T", TABLES, ids=[f"b{t[0]}-m{t[1]}-T{t[3]}" for t in TABLES])
def test_index_table_equals_transformers(buckets, max_rel, positions, T):
    torch = pytest.importorskip("torch")
    from transformers.models.deberta_v2 import modeling_deberta_v2 as hf
    cfg = config(position_buckets=buckets, max_relative_positions=max_rel, max_position_embeddings=positions)
    S = cfg.relative_span
    hidden = torch.zeros(1, T, 8)
    rel = hf.build_relative_position(hidden, hidden, bucket_size=buckets, max_position=cfg.max_positions_for_buckets)
    theirs = torch.clamp(rel[0] + S, 0, 2 * S - 1).numpy()  # c2p's table; p2c's is clamp(-r + S) transposed
    ours = relative_position_index(T, cfg)
    assert ours.dtype.kind == "i" and np.array_equal(ours, theirs)
    p2c = torch.clamp(-rel[0] + S, 0, 2 * S - 1).numpy().T
    assert np.array_equal(ours, p2c)  # both terms read the same table
