"""Solutions to the exercises of chapter 6 (pre-training)."""

import numpy as np

IGNORE_INDEX = -100  # the label the loss skips


def mask_bernoulli(ids, maskable, rng, p=0.15):
    from minibert.data.builtin import minilm_dir
    from minibert.tokenizer import WordPieceTokenizer
    tokenizer = WordPieceTokenizer.from_pretrained(minilm_dir())  # the chapter's tokenizer: its [MASK] and specials
    special = np.zeros(tokenizer.vocab_size, dtype=bool)  # (V,)
    special[tokenizer.all_special_ids] = True
    chosen = maskable & (rng.random(ids.shape) < p)  # (B, T) each token on its own coin
    u = rng.random(ids.shape)  # (B, T)
    masked = np.where(chosen & (u < 0.8), tokenizer.mask_token_id, ids)  # (B, T)
    to_random = chosen & (u >= 0.8) & (u < 0.9)  # (B, T)
    masked[to_random] = rng.choice(np.flatnonzero(~special), size=int(to_random.sum()))
    labels = np.where(chosen, ids, IGNORE_INDEX)  # (B, T)
    return masked, labels


def masked_accuracy(logits, labels):
    valid = labels != IGNORE_INDEX  # (N,)
    return float((logits.argmax(axis=-1)[valid] == labels[valid]).mean())


def unigram_bias(counts, special_ids):
    smoothed = counts.astype(np.float64) + 1.0  # (V,) add-one: no token has probability 0
    smoothed[list(special_ids)] = 1.0  # never a target: the probability of an unseen token
    return np.log(smoothed / smoothed.sum())  # (V,)
