"""From start/end logits to answers: the best valid span of every question across its windows.

A span (s, e) of a window scores start_logits[s] + end_logits[e]. It is valid when both ends lie inside the
context part of the window, s <= e, and it is at most `max_answer_length` tokens long. The answer is the best
valid span over all windows of the question, cut out of the context by the tokens' character offsets. For SQuAD
2.0 the "no answer" score is start_logits[0] + end_logits[0] ([CLS]), the lowest over the windows (as Hugging
Face's postprocessing does); the answer is "" when it beats the best span.

With `align_to_words` an answer that starts or ends inside a word (the pieces `bor ##n`, best span `bor`) is
widened to the whole word ("born"), as Hugging Face's question-answering pipeline does by default.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from minibert.finetune.train import forward_in_batches
from minibert.tokenizer.basic import is_cjk, is_punctuation


DEFAULT_MAX_ANSWER_LENGTH = 30  # tokens: the longest answer considered when none is given (fine-tuning, predict)


def _in_word(char: str) -> bool:
    # A word as BERT's basic tokenizer splits text: a run of characters that are not white space, punctuation
    # or CJK (each of those is a word of its own).
    return not (char.isspace() or is_punctuation(char) or is_cjk(char))


def word_span(text: str, start: int, end: int) -> tuple[int, int]:
    """text[start:end] widened to the words it starts and ends in."""
    while 0 < start < len(text) and _in_word(text[start - 1]) and _in_word(text[start]):
        start -= 1
    while 0 < end < len(text) and _in_word(text[end - 1]) and _in_word(text[end]):
        end += 1
    return start, end


def best_spans(start_logits, end_logits, offsets, max_answer_length: int, k: int = 1, key=None) -> list:
    """The k best valid spans of one window: [(score, first token, last token)], best first. With `key(first,
    last)`, spans of the same key (e.g. the same words) count once: the best of them is kept."""
    inside = np.array([o is not None for o in offsets])  # (T,)
    T = len(offsets)
    scores = start_logits[:T, None] + end_logits[None, :T]  # (T, T): row = start token, column = end token
    s, e = np.indices((T, T))
    valid = inside[:, None] & inside[None, :] & (e >= s) & (e - s < max_answer_length)
    scores = np.where(valid, scores, -np.inf)
    key = key or (lambda s, e: (s, e))
    spans, seen = [], set()
    for i in np.argsort(scores, axis=None)[::-1]:
        if len(spans) == k or not np.isfinite(scores.flat[i]):
            break
        first, last = divmod(int(i), T)
        if key(first, last) not in seen:
            seen.add(key(first, last))
            spans.append((float(scores.flat[i]), first, last))
    return spans


def span_chars(offsets, s, e, context: str | None = None) -> tuple[int, int]:
    """The characters of tokens s..e of a window; widened to whole words of `context` when it is given."""
    a, b = offsets[s][0], offsets[e][1]
    return (a, b) if context is None else word_span(context, a, b)


def answer_questions(model, examples, windows, pad_id, max_answer_length=DEFAULT_MAX_ANSWER_LENGTH, allow_null=False,
                     k=1, batch_size=64, progress=False, desc="answering", workers: int | None = None,
                     align_to_words=False):
    """Per example: {"answers": [{"text", "start", "end", "score"}] (k best, best first), "null_score", "text"
    (the prediction: "" for no answer when allowed and better)}, and the mean loss of windows with positions.
    With align_to_words every answer is widened to whole words of the context."""
    encoded = [(w.input_ids, w.token_type_ids) for w in windows]
    candidates = [[] for _ in examples]
    null = [np.inf for _ in examples]
    loss_sum = 0.0
    for chosen, out in forward_in_batches(model, encoded, pad_id, batch_size, progress, desc, workers):
        for row, i in enumerate(chosen):
            w = windows[i]
            T = len(w.input_ids)
            start, end = out.start_logits[row, :T].astype(np.float64), out.end_logits[row, :T].astype(np.float64)
            null[w.example] = min(null[w.example], start[0] + end[0])
            context = examples[w.example].context
            chars = partial(span_chars, w.context_offsets, context=context if align_to_words else None)
            for score, s, e in best_spans(start, end, w.context_offsets, max_answer_length, k, key=chars):
                a, b = chars(s, e)
                candidates[w.example].append({"text": context[a:b], "start": a, "end": b, "score": score})
            log_z_s = np.log(np.exp(start - start.max()).sum()) + start.max()
            log_z_e = np.log(np.exp(end - end.max()).sum()) + end.max()
            loss_sum += (log_z_s - start[w.start_position] + log_z_e - end[w.end_position]) / 2
    results = []
    for cands, null_score in zip(candidates, null):
        best = sorted(cands, key=lambda c: -c["score"])
        unique = []  # two windows may find the same span: keep it once
        for c in best:
            if all((c["start"], c["end"]) != (u["start"], u["end"]) for u in unique):
                unique.append(c)
        text = unique[0]["text"] if unique else ""
        if allow_null and (not unique or null_score > unique[0]["score"]):
            text = ""
        results.append({"text": text, "answers": unique[:k], "null_score": float(null_score)})
    return results, loss_sum / max(len(windows), 1)
