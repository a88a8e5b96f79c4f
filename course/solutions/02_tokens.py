"""Solutions to the exercises of chapter 2, Tokens."""

import numpy as np


def join_pieces(tokens):
    words = []
    for token in tokens:
        if token.startswith("##") and words:
            words[-1] += token[2:]  # a continuation glues to the word before it
        else:
            words.append(token)
    return words


def pad_batch(sequences, pad_id):
    T = max(len(s) for s in sequences)
    input_ids = np.full((len(sequences), T), pad_id, dtype=np.int64)  # (B, T)
    attention_mask = np.zeros((len(sequences), T), dtype=np.int64)  # (B, T)
    for row, s in enumerate(sequences):
        input_ids[row, :len(s)] = s
        attention_mask[row, :len(s)] = 1
    return input_ids, attention_mask


def segment_ids(n_a, n_b):
    return [0] * (1 + n_a + 1) + [1] * (n_b + 1)  # [CLS] A [SEP] | B [SEP]
