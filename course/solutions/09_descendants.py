"""Solutions to the exercises of chapter 9 (Descendants)."""

import numpy as np


def albert_parameters(cfg):
    V, P, S, H, F, E = (cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size, cfg.hidden_size,
                        cfg.intermediate_size, cfg.embedding_width)
    embeddings = (V + P + S) * E + 2 * E  # three tables of width E and their LayerNorm
    projection = E * H + H  # E -> H
    layer = 4 * (H * H + H) + 2 * H + (H * F + F) + (F * H + H) + 2 * H  # one layer, shared by all
    head = (E * H + E) + 2 * E + V  # dense H -> E, LayerNorm over E, output bias (decoder tied)
    return embeddings + projection + layer + head


def corrupt(input_ids, labels, sampled):
    masked = labels != -100  # (B, T)
    original = np.where(masked, labels, input_ids)  # (B, T) the text before masking
    corrupted = original.copy()
    corrupted[masked] = sampled  # row-major order, as the samples come
    return corrupted, (corrupted != original).astype(np.int64)


def positions(input_ids, pad_token_id):
    real = (input_ids != pad_token_id).astype(np.int64)  # (B, T)
    return np.cumsum(real, axis=1) * real + pad_token_id  # (B, T)
