import numpy as np
import pytest

from minibert.data.masking import IGNORE_INDEX, Masker, continuation_mask

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
V = 50


def random_batch(rng, B=64, T=40):
    """[CLS] tokens [SEP] [PAD]... rows of random lengths."""
    ids = np.full((B, T), PAD)
    for b in range(B):
        n = rng.integers(3, T + 1)
        ids[b, :n] = rng.integers(5, V, size=n)
        ids[b, 0], ids[b, n - 1] = CLS, SEP
    return ids


def test_exact_count_per_sequence_specials_never_masked_and_80_10_10():
    masker = Masker(V, MASK, [PAD, UNK, CLS, SEP, MASK])
    rng = np.random.default_rng(0)
    counts = {"mask": 0, "random": 0, "kept": 0}
    targets = maskable_total = 0
    for _ in range(60):
        ids = random_batch(rng)
        masked, labels = masker(ids, rng)
        chosen = labels != IGNORE_INDEX
        maskable = ids >= 5
        assert not (chosen & ~maskable).any()  # [CLS], [SEP], [PAD] are never targets
        assert (masked[~chosen] == ids[~chosen]).all()  # nothing else changes
        assert (labels[chosen] == ids[chosen]).all()
        n = maskable.sum(axis=1)
        assert (chosen.sum(axis=1) == np.maximum(1, np.rint(0.15 * n))).all()  # exact k per sequence
        counts["mask"] += int((masked[chosen] == MASK).sum())
        changed = chosen & (masked != MASK) & (masked != ids)
        counts["random"] += int(changed.sum())
        assert (masked[changed] >= 5).all()  # random replacements are ordinary tokens
        targets += int(chosen.sum())
        maskable_total += int(n.sum())
    counts["kept"] = targets - counts["mask"] - counts["random"]
    # A random replacement equal to the original counts as "kept": expected 10% + 10%/45 of the targets.
    assert abs(counts["mask"] / targets - 0.8) < 0.02
    assert abs(counts["random"] / targets - 0.1 * 44 / 45) < 0.015
    assert abs(counts["kept"] / targets - 0.1 * 46 / 45) < 0.015
    assert abs(targets / maskable_total - 0.15) < 0.01


def test_positions_are_uniform_over_the_sequence():
    masker = Masker(V, MASK, [PAD, UNK, CLS, SEP, MASK])
    rng = np.random.default_rng(1)
    ids = np.full((2000, 22), 7)
    ids[:, 0], ids[:, -1] = CLS, SEP
    _, labels = masker(ids, rng)
    per_position = (labels[:, 1:-1] != IGNORE_INDEX).mean(axis=0)  # 20 maskable positions, k = 3
    assert np.allclose(per_position, 3 / 20, atol=0.03)


def test_a_sequence_without_maskable_tokens_gets_no_target():
    masker = Masker(V, MASK, [PAD, UNK, CLS, SEP, MASK])
    masked, labels = masker(np.array([[CLS, SEP, PAD]]), np.random.default_rng(0))
    assert (labels == IGNORE_INDEX).all() and (masked == [[CLS, SEP, PAD]]).all()


def test_whole_word_masking_masks_all_pieces_of_a_word_together():
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + [f"w{i}" for i in range(20)] + [f"##p{i}" for i in range(20)]
    cont = continuation_mask(vocab)
    masker = Masker(len(vocab), MASK, [0, 1, 2, 3, 4], cont, whole_word=True)
    rng = np.random.default_rng(0)
    words, ids = [], [CLS]
    while len(ids) < 60:  # words of 1-3 pieces
        word = [int(rng.integers(5, 25))] + [int(x) for x in rng.integers(25, 45, size=rng.integers(0, 3))]
        words.append((len(ids), len(ids) + len(word)))
        ids += word
    ids.append(SEP)
    batch = np.array([ids] * 200)
    _, labels = masker(batch, rng)
    chosen = labels != IGNORE_INDEX
    k = max(1, round(0.15 * (len(ids) - 2)))
    assert (chosen.sum(axis=1) <= k).all() and (chosen.sum(axis=1) >= 1).all()
    for start, end in words:
        span = chosen[:, start:end]
        assert (span.all(axis=1) | ~span.any(axis=1)).all()  # a word is masked entirely or not at all
    assert chosen.sum(axis=1).mean() > 0.8 * k  # and the budget is nearly used


def test_bad_probability_is_refused():
    with pytest.raises(ValueError, match="mask probability"):
        Masker(V, MASK, [0], mlm_probability=1.5)
