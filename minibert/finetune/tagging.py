"""Token classification on words: pieces and labels for training, tags per word back from the logits.

Each word is tokenized on its own (as Hugging Face's `is_split_into_words=True` does), so a word of the data
is never merged with its neighbour or split differently by context. Its tag's id goes on its FIRST piece; the
other pieces, [CLS], [SEP] and padding get -100 (ignored by the loss), and prediction reads the first piece.
A sentence longer than the window is cut; its words beyond the cut get no token and are predicted "O" (the
number of such words is reported).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from minibert.finetune.ner_data import TaggedSentences
from minibert.finetune.ner_metrics import entity_metrics
from minibert.finetune.train import forward_in_batches
from minibert.layers.loss import IGNORE_INDEX


@dataclass
class EncodedSentences:
    encoded: list  # (input_ids, token_type_ids) per sentence, as finetune.train.collate takes them
    labels: list  # (T_i,) int64 per sentence: the tag id at first pieces, -100 elsewhere (None if unlabelled)
    first_piece: list  # (n_words,) int64 per sentence: token index of each word's first piece, -1 if none
    cut_words: int  # words left without a token (beyond max_length)


def encode_words(tokenizer, words: list[str], max_length: int) -> tuple[list[int], list[int]]:
    """(ids with [CLS]/[SEP], first-piece index per word (-1: the word has no token or was cut))."""
    ids, first = [tokenizer.cls_token_id], []
    budget = max_length - 1  # room left before the final [SEP]
    for word in words:
        pieces = tokenizer.encode(word, add_special_tokens=False).input_ids
        if not pieces or len(ids) + len(pieces) > budget:
            first.append(-1)  # a word of control characters only; or past the window
            if pieces:
                budget = len(ids)  # nothing after a cut word fits either: keep the words in order
            continue
        first.append(len(ids))
        ids += pieces
    ids.append(tokenizer.sep_token_id)
    return ids, first


def any_word_fits(tokenizer, data: TaggedSentences, max_length: int) -> bool:
    """Whether some word of `data` gets a token within max_length (so gets a label, or a prediction). Stops at the
    first sentence that has one: normally the first, so the check costs next to nothing."""
    return any(max(encode_words(tokenizer, words, max_length)[1], default=-1) >= 0 for words in data.words)


def encode_tagged(tokenizer, data: TaggedSentences, tag2id: dict[str, int] | None, max_length: int) \
        -> EncodedSentences:
    encoded, labels, firsts, cut = [], [], [], 0
    for i, words in enumerate(data.words):
        ids, first = encode_words(tokenizer, words, max_length)
        encoded.append((np.asarray(ids, dtype=np.int64), np.zeros(len(ids), dtype=np.int64)))
        first = np.asarray(first, dtype=np.int64)
        firsts.append(first)
        cut += int(sum(first < 0))
        if tag2id is not None and data.tags is not None:
            y = np.full(len(ids), IGNORE_INDEX, dtype=np.int64)  # (T_i,)
            kept = first >= 0
            y[first[kept]] = [tag2id[t] for t, k in zip(data.tags[i], kept) if k]
            labels.append(y)
    return EncodedSentences(encoded, labels if labels else None, firsts, cut)


def padded_labels(labels: list, chosen, T: int) -> np.ndarray:
    """(B, T) labels of the chosen sentences, -100 on padding."""
    out = np.full((len(chosen), T), IGNORE_INDEX, dtype=np.int64)
    for row, i in enumerate(chosen):
        out[row, :len(labels[i])] = labels[i]
    return out


def predict_word_tags(model, data: EncodedSentences, pad_id: int, batch_size: int = 64, progress=False,
                      desc="evaluating", workers: int | None = None):
    """(tags per sentence (one per word), word scores (softmax probability of the tag), mean loss or None)."""
    id2label = model.id2label
    tags, scores = [None] * len(data.encoded), [None] * len(data.encoded)
    loss_sum, loss_count = 0.0, 0
    for chosen, out in forward_in_batches(model, data.encoded, pad_id, batch_size, progress, desc, workers):
        logits = out.logits.astype(np.float64)  # (B, T, C)
        log_probs = logits - logits.max(-1, keepdims=True)
        log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))  # (B, T, C)
        for row, i in enumerate(chosen):
            first = data.first_piece[i]
            word_logp = log_probs[row, np.maximum(first, 0)]  # (n_words, C)
            best = word_logp.argmax(-1)
            tags[i] = [id2label[int(b)] if f >= 0 else "O" for b, f in zip(best, first)]
            scores[i] = [float(np.exp(lp[b])) if f >= 0 else 0.0 for lp, b, f in zip(word_logp, best, first)]
            if data.labels is not None:
                y = data.labels[i]
                mask = y != IGNORE_INDEX
                loss_sum -= float(log_probs[row, np.flatnonzero(mask), y[mask]].sum())
                loss_count += int(mask.sum())
    loss = None
    if data.labels is not None:  # (a mean over no labelled word is no number: never report it as a loss of 0)
        loss = loss_sum / loss_count if loss_count else float("nan")
    return tags, scores, loss


def evaluate_tagger(model, data: EncodedSentences, gold: TaggedSentences, pad_id, batch_size=64, progress=False,
                    desc="evaluating") -> dict:
    """Entity-level P/R/F1 (per type and micro), token accuracy, and the mean cross-entropy per labelled word."""
    tags, _, loss = predict_word_tags(model, data, pad_id, batch_size, progress, desc)
    metrics = entity_metrics(gold.tags, tags)
    metrics["loss"] = loss
    metrics["words_without_token"] = data.cut_words
    return metrics
