"""How well does a pre-trained model fill in masked words of held-out text? Measured on whole words, so models
with different vocabularies (a `wiki` run's tokenizer and a `wiki imdb` run's) are scored on the same words.

    python benchmarks/fill_mask_words.py --corpus wiki \
        --row "wiki=runs/mini-wiki" --row "wiki imdb=runs/mini-wiki-imdb"

The text is the corpus's held-out documents: those every pre-training run on it holds out, alone or in a mix
(`split_documents` draws them part by part with a fixed seed). In each sentence, 15% of the words (at least one)
are chosen by a generator seeded by the sentence's number, and every piece of a chosen word becomes [MASK]. A
word is filled when the model's best guess at each of its pieces is right; its loss is the sum of its pieces'
losses (nats). A sentence longer than some row's positions, and a word some row reads as [UNK], are left out of
every row, so every row fills the same words.

The held-out accuracy a run prints counts pieces of its own vocabulary, on sequences of its own mix: it cannot
compare a `wiki` run with a `wiki imdb` run on Wikipedia text. This can.
"""

from __future__ import annotations

import argparse

import numpy as np

from finetune_table import parse_row  # benchmarks/finetune_table.py
from minibert.data.corpus import load_corpus, split_documents
from minibert.fill_mask import FillMask
from minibert.layers.loss import IGNORE_INDEX
from minibert.models.base import forward_only

WORD_SEED = 20261207  # which words are masked: the same for every row and every run
MASK_SHARE = 0.15


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", nargs="+", default=["wiki"],
                   help="whose held-out documents to fill in: a built-in corpus or files, as pretrain --corpus "
                        "(default wiki)")
    p.add_argument("--row", action="append", required=True, metavar="NAME=MODEL",
                   help="a table row: a name and a model folder or `minibert pretrain` run with a masked-LM head")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward (default 32)")
    return p.parse_args()


def held_out_sentences(sources) -> list[str]:
    corpus = load_corpus(sources)
    _, held = split_documents(corpus)
    return [sentence for i in held for sentence in corpus.documents[i]]


def masked_words(n_words: int, number: int) -> list[int]:
    """The words of sentence `number` to mask: 15% of its n_words (at least one), the same for every model."""
    k = max(1, round(MASK_SHARE * n_words))
    return sorted(np.random.default_rng([WORD_SEED, number]).permutation(n_words)[:k].tolist())


def encodings(sentences: list[str], tokenizers: list) -> list[list]:
    """For each tokenizer, each sentence's encoding (one list per tokenizer, in sentence order)."""
    return [[tok.encode(s) for s in sentences] for tok in tokenizers]


def word_count(encoding) -> int:
    """How many words the tokenizer's basic pre-tokenization found in the encoded text."""
    return max((w for w in encoding.word_ids if w is not None), default=-1) + 1


def shared_words(encoded: list, max_lengths: list[int], unk_ids: list) -> list[tuple[int, list[int]]]:
    """(sentence number, the words to mask) for the sentences every row can read whole, without the words some
    row reads as [UNK]. `encoded[r][s]`: row r's encoding of sentence s."""
    chosen = []
    for s in range(len(encoded[0])):
        rows = [enc[s] for enc in encoded]
        if any(len(e.input_ids) > m for e, m in zip(rows, max_lengths)):
            continue
        n_words = word_count(rows[0])
        if n_words == 0 or any(word_count(e) != n_words for e in rows):
            continue  # (the rows' tokenizers split this sentence into different words: not comparable)
        unknown = {w for e, unk in zip(rows, unk_ids) for i, w in zip(e.input_ids, e.word_ids) if i == unk}
        words = [w for w in masked_words(n_words, s) if w not in unknown]
        if words:
            chosen.append((s, words))
    return chosen


def masked_batch(encs: list, words: list[list[int]], mask_id: int, pad_id: int) -> tuple[dict, np.ndarray]:
    """A padded batch with every piece of the chosen words masked, and (B, T) word numbers (-1: not masked; row b's
    word w is b * T + w, unique in the batch since a word has at least one piece)."""
    B, T = len(encs), max(len(e.input_ids) for e in encs)
    ids = np.full((B, T), pad_id, dtype=np.int64)        # (B, T)
    attention = np.zeros((B, T), dtype=np.int64)          # (B, T)
    labels = np.full((B, T), IGNORE_INDEX, dtype=np.int64)
    word_of = np.full((B, T), -1, dtype=np.int64)
    for b, (e, chosen) in enumerate(zip(encs, words)):
        n = len(e.input_ids)
        ids[b, :n], attention[b, :n] = e.input_ids, 1
        for t, w in enumerate(e.word_ids):
            if w is not None and w in chosen:
                labels[b, t], ids[b, t], word_of[b, t] = ids[b, t], mask_id, b * T + w
    return {"input_ids": ids, "attention_mask": attention, "token_type_ids": np.zeros_like(ids),
            "labels": labels}, word_of


def fill_words(fill: FillMask, encs: list, chosen: list[tuple[int, list[int]]], batch_size: int) -> dict:
    """Word accuracy, nats per word, and piece accuracy of one model on the chosen words."""
    tok, model = fill.tokenizer, fill.model
    n_words = n_filled = n_pieces = n_pieces_right = 0
    loss_sum = 0.0
    with forward_only(model):
        for start in range(0, len(chosen), batch_size):
            part = chosen[start:start + batch_size]
            batch, word_of = masked_batch([encs[s] for s, _ in part], [w for _, w in part],
                                          tok.mask_token_id, tok.pad_token_id)
            out = model.forward(batch["input_ids"], token_type_ids=batch["token_type_ids"],
                                attention_mask=batch["attention_mask"], labels=batch["labels"])
            targets = batch["labels"].reshape(-1)[out.masked_positions]          # (M,)
            right = out.prediction_logits.argmax(axis=-1) == targets              # (M,)
            word = word_of.reshape(-1)[out.masked_positions]                      # (M,)
            ids, where = np.unique(word, return_inverse=True)
            n_words += len(ids)
            n_filled += int((np.bincount(where, weights=~right, minlength=len(ids)) == 0).sum())
            loss_sum += float(out.mlm_loss) * len(targets)  # (mlm_loss: the mean over the masked pieces)
            n_pieces += len(targets)
            n_pieces_right += int(right.sum())
    return {"words": n_words, "word_accuracy": n_filled / n_words, "nats_per_word": loss_sum / n_words,
            "pieces_per_word": n_pieces / n_words, "piece_accuracy": n_pieces_right / n_pieces}


def main():
    args = parse_args()
    rows = []
    for text in args.row:
        name, path, flags = parse_row(text)
        if flags:
            raise SystemExit(f"--row {text!r}: expected NAME=MODEL (fine-tuning flags do not apply)")
        rows.append((name, FillMask.from_pretrained(path, "--row")))
    sentences = held_out_sentences(args.corpus)
    tokenizers = [fill.tokenizer for _, fill in rows]
    encoded = encodings(sentences, tokenizers)
    max_lengths = [fill.model.config.max_position_embeddings for _, fill in rows]
    chosen = shared_words(encoded, max_lengths, [tok.unk_token_id for tok in tokenizers])
    print(f"{' '.join(args.corpus)}: {len(chosen):,} of {len(sentences):,} held-out sentences, "
          f"{sum(len(w) for _, w in chosen):,} masked words")
    print("| row | words filled | nats per word | pieces per word | pieces filled |")
    print("|---|---|---|---|---|")
    for (name, fill), encs in zip(rows, encoded):
        m = fill_words(fill, encs, chosen, args.batch_size)
        print(f"| {name} | {100 * m['word_accuracy']:.1f}% | {m['nats_per_word']:.2f} | "
              f"{m['pieces_per_word']:.2f} | {100 * m['piece_accuracy']:.1f}% |")


if __name__ == "__main__":
    main()
