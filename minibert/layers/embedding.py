"""BERT's input embeddings: word + position + token type, then LayerNorm and dropout.

Parameter names (with the model's prefix, e.g. "bert."):
  embeddings.word_embeddings.weight (V, H), embeddings.position_embeddings.weight (P, H),
  embeddings.token_type_embeddings.weight (type_vocab_size, H), embeddings.LayerNorm.{weight,bias} (H,)
(P is max_position_embeddings.) A model without token types (DistilBERT) passes token_type_ids=None and has
no token_type_embeddings. DeBERTa may have no absolute positions (absolute_positions=False: position_biased_input
false) and multiplies its embeddings by the attention mask after the LayerNorm (token_mask), so padding enters
the encoder as zeros.

As in Hugging Face (nn.Embedding's padding_idx), the [PAD] row of the word embeddings gets no gradient from the
lookup: padding is not a word to learn. (With a tied decoder it still gets the decoder's share.)
"""

import numpy as np

from minibert.layers.dropout import dropout_backward, dropout_forward
from minibert.layers.layernorm import layernorm_backward, layernorm_forward


def scatter_add_rows(dW, ids, drows):
    """dW[ids[n]] += drows[n] for every n, duplicates summed.

    np.add.at does this but is slow (it handles one element at a time); sorting the ids and summing each run of
    equal ids with np.add.reduceat is several times faster.
    """
    ids = ids.reshape(-1)  # (N,)
    if ids.size == 0:
        return
    drows = drows.reshape(len(ids), -1)  # (N, H)
    order = np.argsort(ids, kind="stable")  # (N,)
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])  # first index of each run
    dW[sorted_ids[starts]] += np.add.reduceat(drows[order], starts, axis=0)


def roberta_position_ids(input_ids, pad_token_id):
    """RoBERTa's positions (fairseq's make_positions): real tokens count from pad_token_id + 1, skipping padding;
    padding tokens sit at position pad_token_id, a row that never learns."""
    not_pad = (input_ids != pad_token_id).astype(np.int64)  # (B, T)
    return np.cumsum(not_pad, axis=1) * not_pad + pad_token_id  # (B, T)


def embedding_forward(params, prefix, input_ids, token_type_ids, eps, p_drop, rng, training, position_ids=None,
                      absolute_positions=True, token_mask=None):
    # input_ids (B, T) int; token_type_ids (B, T) int or None (no token-type embeddings: DistilBERT);
    # position_ids (B, T) int or None for 0..T-1 (BERT); token_mask (B, T) 0/1 or None (DeBERTa's mask multiply)
    T = input_ids.shape[1]
    word = params[prefix + "embeddings.word_embeddings.weight"][input_ids]  # (B, T, H)
    if absolute_positions:
        positions = params[prefix + "embeddings.position_embeddings.weight"]  # (P, H)
        word += positions[:T] if position_ids is None else positions[position_ids]  # (T, H) or (B, T, H)
    if token_type_ids is not None:
        word += params[prefix + "embeddings.token_type_embeddings.weight"][token_type_ids]  # (B, T, H)
    x, ln_cache = layernorm_forward(word, params[prefix + "embeddings.LayerNorm.weight"],
                                    params[prefix + "embeddings.LayerNorm.bias"], eps)  # (B, T, H)
    if token_mask is not None:
        token_mask = token_mask[..., None].astype(x.dtype)  # (B, T, 1)
        x *= token_mask  # padding's embeddings are zeros
    x, drop_mask = dropout_forward(x, p_drop, rng, training)  # (B, T, H)
    return x, (input_ids, token_type_ids, position_ids if absolute_positions else False, ln_cache, drop_mask,
               token_mask)


def embedding_backward(dout, cache, params, grads, prefix, pad_token_id):
    input_ids, token_type_ids, position_ids, ln_cache, drop_mask, token_mask = cache
    dx = dropout_backward(dout, drop_mask)  # (B, T, H)
    if token_mask is not None:
        dx = dx * token_mask  # (B, T, H)
    dx = layernorm_backward(dx, ln_cache, params[prefix + "embeddings.LayerNorm.weight"],
                            grads[prefix + "embeddings.LayerNorm.weight"],
                            grads[prefix + "embeddings.LayerNorm.bias"])  # (B, T, H)
    T = dx.shape[1]
    not_pad = input_ids.reshape(-1) != pad_token_id  # (B*T,)
    if position_ids is False:  # no absolute positions (DeBERTa's position_biased_input false)
        pass
    elif position_ids is None:
        grads[prefix + "embeddings.position_embeddings.weight"][:T] += dx.sum(axis=0)  # (T, H)
    else:  # RoBERTa: padding's position row gets no gradient (its nn.Embedding has padding_idx too)
        scatter_add_rows(grads[prefix + "embeddings.position_embeddings.weight"], position_ids.reshape(-1)[not_pad],
                         dx.reshape(-1, dx.shape[-1])[not_pad])
    if token_type_ids is not None:
        scatter_add_rows(grads[prefix + "embeddings.token_type_embeddings.weight"], token_type_ids, dx)
    scatter_add_rows(grads[prefix + "embeddings.word_embeddings.weight"], input_ids.reshape(-1)[not_pad],
                     dx.reshape(-1, dx.shape[-1])[not_pad])
    # The input ids are integers: there is no input gradient to return.
