"""Dynamic masking for the masked-language-model objective (a fresh mask every time a sequence is used).

For each sequence with n maskable tokens (not [CLS]/[SEP]/[PAD]/...), exactly k = max(1, round(0.15 * n)) are
chosen as prediction targets, uniformly at random. Of the chosen positions 80% become [MASK], 10% a random
ordinary token and 10% stay as they are (BERT's recipe: the model cannot rely on seeing [MASK], which never
occurs after pre-training). Labels hold the original id at chosen positions and -100 everywhere else.

Whole-word masking chooses whole words instead (a word is a token plus the `##` pieces after it) until the
next word would pass k, as google-research/bert does, so a sequence gets at most k targets (but at least
one word).
"""

from __future__ import annotations

import numpy as np

from minibert.layers.loss import IGNORE_INDEX  # labels the loss skips: unmasked positions


class Masker:
    def __init__(self, vocab_size: int, mask_id: int, special_ids, continuation=None, mlm_probability=0.15,
                 whole_word: bool = False):
        """continuation: bool array (V,), True for tokens that continue a word ("##ing"); needed for whole_word."""
        if not 0.0 < mlm_probability < 1.0:
            raise ValueError(f"mask probability must be in (0, 1), got {mlm_probability}")
        if whole_word and continuation is None:
            raise ValueError("whole-word masking needs to know which tokens continue a word (## pieces)")
        self.vocab_size, self.mask_id, self.mlm_probability = vocab_size, mask_id, mlm_probability
        self.whole_word = whole_word
        self.is_special = np.zeros(vocab_size, dtype=bool)  # (V,)
        self.is_special[list(special_ids)] = True
        self.ordinary_ids = np.flatnonzero(~self.is_special)  # replacement tokens for the "10% random" case
        self.continuation = None if continuation is None else np.asarray(continuation, dtype=bool)

    def targets_per_sequence(self, maskable_counts: np.ndarray) -> np.ndarray:
        """k = max(1, round(p * n)) for every sequence with n >= 1 maskable tokens, 0 for n = 0."""
        k = np.maximum(1, np.rint(self.mlm_probability * maskable_counts)).astype(np.int64)
        return np.where(maskable_counts > 0, k, 0)

    def __call__(self, input_ids: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(masked input_ids, labels), both (B, T) int64; input_ids itself is not changed."""
        input_ids = np.asarray(input_ids, dtype=np.int64)
        maskable = ~self.is_special[input_ids]  # (B, T) padding and specials are never targets
        k = self.targets_per_sequence(maskable.sum(axis=1))  # (B,)
        if self.whole_word:
            chosen = self._choose_whole_words(input_ids, maskable, k, rng)
        else:
            chosen = self._choose_tokens(maskable, k, rng)
        labels = np.where(chosen, input_ids, IGNORE_INDEX)  # (B, T)

        # 80% [MASK], 10% a random ordinary token, 10% unchanged.
        masked = input_ids.copy()
        action = rng.random(input_ids.shape)  # (B, T)
        to_mask = chosen & (action < 0.8)
        to_random = chosen & (action >= 0.8) & (action < 0.9)
        masked[to_mask] = self.mask_id
        masked[to_random] = rng.choice(self.ordinary_ids, size=int(to_random.sum()))
        return masked, labels

    @staticmethod
    def _choose_tokens(maskable: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Exactly k[b] positions of row b, uniformly among its maskable ones."""
        scores = rng.random(maskable.shape)  # (B, T)
        scores[~maskable] = 2.0  # after every maskable position in the sort
        rank = np.argsort(np.argsort(scores, axis=1, kind="stable"), axis=1, kind="stable")  # (B, T)
        return rank < k[:, None]

    def _choose_whole_words(self, input_ids, maskable, k, rng) -> np.ndarray:
        chosen = np.zeros(input_ids.shape, dtype=bool)
        starts_word = maskable & ~self.continuation[input_ids]  # (B, T)
        for row in range(input_ids.shape[0]):
            starts = np.flatnonzero(starts_word[row])
            if len(starts) == 0:
                continue
            # A word runs from its start to the next start or the next non-maskable token.
            ends = np.empty_like(starts)
            for j, s in enumerate(starts):
                e = s + 1
                while e < input_ids.shape[1] and maskable[row, e] and not starts_word[row, e]:
                    e += 1
                ends[j] = e
            count = 0
            for j in rng.permutation(len(starts)):
                size = ends[j] - starts[j]
                if count + size > k[row]:
                    continue
                chosen[row, starts[j]:ends[j]] = True
                count += size
                if count == k[row]:
                    break
            if count == 0:  # every word is longer than k: take the shortest one whole (at least 1 target)
                j = int(np.argmin(ends - starts))
                chosen[row, starts[j]:ends[j]] = True
        return chosen


def continuation_mask(ids_to_tokens) -> np.ndarray:
    """(V,) True for WordPiece continuation pieces (those written with a leading '##')."""
    tokens = ids_to_tokens if isinstance(ids_to_tokens, (list, tuple)) else \
        [ids_to_tokens[i] for i in range(len(ids_to_tokens))]
    return np.array([t.startswith("##") for t in tokens], dtype=bool)
