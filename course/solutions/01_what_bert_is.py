"""Solutions to the exercises of chapter 1, What BERT is."""

import numpy as np


def causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))  # (T, T) row i: True at 0..i


def parameters_for(L, H, F, V, P):
    embeddings = (V + P + 2) * H + 2 * H  # word, position, 2 segment rows; LayerNorm
    layer = 4 * (H * H + H) + (F * H + F) + (H * F + H) + 4 * H  # Q, K, V, output; FFN; two LayerNorms
    mlm_head = H * H + H + 2 * H + V  # transform dense + LayerNorm; decoder bias (its weight is the word table)
    return embeddings + L * layer + mlm_head


def embedding_share(c):
    total = parameters_for(c.num_hidden_layers, c.hidden_size, c.intermediate_size, c.vocab_size,
                           c.max_position_embeddings)
    embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * c.hidden_size + 2 * c.hidden_size
    return embeddings / total
