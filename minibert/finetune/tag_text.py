"""Tag raw text with a fine-tuned token classifier: words with their tags, and entities as character spans.

The text is tokenized with character offsets; a word is what the tokenizer calls a word (punctuation is a word
of its own), its tag is read at its first piece, and an entity (B-X I-X ...) becomes the span of the original
text from its first word's start to its last word's end, so it can be cut out of the text as written.
"""

from __future__ import annotations

import numpy as np

from minibert.finetune.ner_metrics import entity_spans
from minibert.finetune.tagging import EncodedSentences, predict_word_tags


def _words_of(encoding) -> tuple[list[tuple[int, int]], list[int]]:
    """(character span of every word, token index of its first piece)."""
    spans, first = [], []
    for t, w in enumerate(encoding.word_ids):
        if w is None:
            continue
        s, e = encoding.offsets[t]
        if w == len(spans):
            spans.append((s, e))
            first.append(t)
        else:
            spans[w] = (spans[w][0], e)
    return spans, first


def tag_texts(model, tokenizer, texts: list[str], max_length: int, batch_size: int = 32, progress=False,
              workers: int | None = None) -> list:
    """One record per text: {"text", "words": [{"word", "tag", "score", "start", "end"}], "entities": [...]}."""
    encodings = [tokenizer.encode(t, truncation=True, max_length=max_length, return_offsets_mapping=True)
                 for t in texts]
    words = [_words_of(e) for e in encodings]
    data = EncodedSentences(
        [(np.asarray(e.input_ids, dtype=np.int64), np.asarray(e.token_type_ids, dtype=np.int64)) for e in encodings],
        None, [np.asarray(first, dtype=np.int64) for _, first in words], 0)
    tags, scores, _ = predict_word_tags(model, data, tokenizer.pad_token_id, batch_size, progress, "tagging",
                                         workers)
    records = []
    for text, (spans, _), sentence_tags, sentence_scores in zip(texts, words, tags, scores):
        entities = []
        for kind, a, b in sorted(entity_spans(sentence_tags), key=lambda x: x[1]):
            start, end = spans[a][0], spans[b - 1][1]
            entities.append({"type": kind, "text": text[start:end], "start": start, "end": end,
                             "score": float(np.mean(sentence_scores[a:b]))})
        records.append({"text": text, "words": [
            {"word": text[s:e], "tag": tag, "score": score, "start": s, "end": e}
            for (s, e), tag, score in zip(spans, sentence_tags, sentence_scores)], "entities": entities})
    return records
