"""benchmarks/fill_mask_words.py: two vocabularies are scored on the same words, every piece of a masked word is
masked, and a word counts as filled only when all its pieces are."""

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from minibert.layers.loss import cross_entropy_forward
from minibert.tokenizer import WordPieceTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fill_mask_words  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WHOLE = WordPieceTokenizer(SPECIALS + ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "."])
PIECES = WordPieceTokenizer(SPECIALS + ["the", "c", "##at", "s", "m", "on", "a", "d", "##og", "r", "##an", "."])
SENTENCES = ["the cat sat on the mat.", "a dog ran on the mat.", "the zebra sat.", "the cat ran."]


class Guesser:
    """A stand-in masked LM that guesses every masked piece right, except the ids in `wrong`."""

    training = False

    def __init__(self, vocab_size, wrong=()):
        self.V, self.wrong = vocab_size, set(wrong)

    def eval(self):
        pass

    def train(self, mode=True):
        pass

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, labels=None):
        positions = np.flatnonzero(labels.reshape(-1) != -100)
        targets = labels.reshape(-1)[positions]
        guesses = np.array([(t + 1) % self.V if t in self.wrong else t for t in targets])
        logits = np.zeros((len(targets), self.V))
        logits[np.arange(len(targets)), guesses] = 5.0
        mlm_loss, _ = cross_entropy_forward(logits, targets)  # (the mean over the masked pieces, as a model gives it)
        return SimpleNamespace(prediction_logits=logits, masked_positions=positions, mlm_loss=mlm_loss)


def test_the_same_words_are_chosen_whatever_the_vocabulary():
    encoded = fill_mask_words.encodings(SENTENCES, [WHOLE, PIECES])
    chosen = fill_mask_words.shared_words(encoded, [512, 512], [WHOLE.unk_token_id, PIECES.unk_token_id])
    again = fill_mask_words.shared_words(encoded[::-1], [512, 512], [PIECES.unk_token_id, WHOLE.unk_token_id])
    chosen = dict(chosen)
    assert chosen == dict(again)
    for s in (0, 1, 3):  # every word known to both: the seeded draw, whole
        assert chosen[s] == fill_mask_words.masked_words(len(WHOLE.basic.tokenize(SENTENCES[s])), s)
    assert 1 not in chosen.get(2, [])  # "zebra" is [UNK] for both: never masked


def test_a_sentence_too_long_for_one_row_is_left_out_of_every_row():
    encoded = fill_mask_words.encodings(SENTENCES, [WHOLE, PIECES])
    longest_whole = max(len(e.input_ids) for e in encoded[0])
    chosen = fill_mask_words.shared_words(encoded, [512, longest_whole], [1, 1])
    kept = {s for s, _ in chosen}
    assert 0 not in kept  # (the cat sat on the mat.: 9 tokens whole, 11 in pieces)
    assert kept and all(len(encoded[1][s].input_ids) <= longest_whole for s in kept)


def test_every_piece_of_a_chosen_word_is_masked():
    enc = PIECES.encode("the cat sat.")
    batch, word_of = fill_mask_words.masked_batch([enc], [[1]], PIECES.mask_token_id, PIECES.pad_token_id)
    masked = batch["input_ids"][0] == PIECES.mask_token_id
    assert masked.tolist() == [w == 1 for w in enc.word_ids]  # "c", "##at": both pieces of "cat"
    assert batch["labels"][0][masked].tolist() == [PIECES.vocab["c"], PIECES.vocab["##at"]]
    assert len(set(word_of[0][masked].tolist())) == 1


def test_a_word_is_filled_only_when_all_its_pieces_are():
    sentences = ["the cat sat."] * 2
    encoded = fill_mask_words.encodings(sentences, [PIECES])
    chosen = [(0, [1]), (1, [0, 1])]  # "cat"; "the" and "cat"
    right = fill_mask_words.fill_words(SimpleNamespace(tokenizer=PIECES, model=Guesser(len(PIECES))),
                                       encoded[0], chosen, batch_size=1)
    assert right["words"] == 3 and right["word_accuracy"] == 1.0 and right["pieces_per_word"] == 5 / 3
    one_piece_wrong = Guesser(len(PIECES), wrong=[PIECES.vocab["##at"]])
    wrong = fill_mask_words.fill_words(SimpleNamespace(tokenizer=PIECES, model=one_piece_wrong), encoded[0],
                                       chosen, batch_size=2)
    assert wrong["word_accuracy"] == 1 / 3  # "the" alone: each "cat" lost one of its two pieces
    assert wrong["piece_accuracy"] == 3 / 5
    assert wrong["nats_per_word"] > right["nats_per_word"]
