"""Question + context -> windows of tokens the model reads, and answers from characters to token positions.

A window is `[CLS] question [SEP] part of the context [SEP]`. A context longer than one window is cut into
several that overlap by `doc_stride` tokens (Hugging Face's `stride`), so that an answer cut by one window's
edge is whole in the next. The tokenizer's character offsets map an answer's characters to its first and last
token; a window that does not hold the whole answer (and every window of an unanswerable question) is
labelled with position 0, the [CLS] token: "no answer here", as in BERT's SQuAD recipe.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Window:
    example: int  # index of the QAExample
    input_ids: np.ndarray  # (T,)
    token_type_ids: np.ndarray  # (T,)
    context_offsets: list  # (start, end) in the context for every token of the window; None outside the context
    start_position: int = 0  # answer's first and last token (0 = [CLS]: no answer in this window)
    end_position: int = 0


def default_doc_stride(max_length: int) -> int:
    """The overlap of a long context's windows when none is given: min(128, a third of the window), as fine-tuning
    and prediction both cut them."""
    return min(128, max_length // 3)


def context_room(question_tokens: int, max_length: int) -> int:
    """How many context tokens fit in a window after [CLS] question [SEP] ... [SEP]."""
    return max_length - question_tokens - 3


def check_fits(question_ids, max_length: int, doc_stride: int, where: str):
    """A question must leave room for more context than the overlap, or the windows would never advance."""
    room = context_room(len(question_ids), max_length)
    if room <= doc_stride:
        raise ValueError(f"{where}: the question has {len(question_ids)} tokens, which leaves {max(room, 0)} of the "
                         f"{max_length}-token window for the context, not more than --doc-stride {doc_stride}; "
                         f"shorten the question, or raise --max-length or lower --doc-stride")


def windows_of(tokenizer, question: str, context: str, max_length: int, doc_stride: int, example: int = 0,
               answer: tuple[str, int] | None = None, where: str = "question") -> list[Window]:
    """All windows of one example; with `answer` (text, character start) their start/end positions."""
    q = tokenizer.encode(question, add_special_tokens=False).input_ids
    check_fits(q, max_length, doc_stride, where)
    c = tokenizer.encode(context, add_special_tokens=False, return_offsets_mapping=True)
    room = context_room(len(q), max_length)
    head = [tokenizer.cls_token_id] + q + [tokenizer.sep_token_id]
    windows, start = [], 0
    while True:
        part = slice(start, min(start + room, len(c.input_ids)))
        ids = head + c.input_ids[part] + [tokenizer.sep_token_id]
        types = [0] * len(head) + [1] * (len(ids) - len(head))
        offsets = [None] * len(head) + c.offsets[part] + [None]
        window = Window(example, np.asarray(ids, dtype=np.int64), np.asarray(types, dtype=np.int64), offsets)
        if answer is not None:
            window.start_position, window.end_position = answer_positions(offsets, answer)
        windows.append(window)
        if part.stop >= len(c.input_ids):
            return windows
        start += room - doc_stride


def answer_positions(offsets: list, answer: tuple[str, int]) -> tuple[int, int]:
    """(first token, last token) of the answer's characters in a window, or (0, 0) when it is not all inside."""
    text, char_start = answer
    char_end = char_start + len(text)
    inside = [i for i, o in enumerate(offsets) if o is not None]
    if not inside or offsets[inside[0]][0] > char_start or offsets[inside[-1]][1] < char_end:
        return 0, 0
    # The first token that ends after the answer starts, and the last that starts before it ends.
    first = next(i for i in inside if offsets[i][1] > char_start)
    last = next(i for i in reversed(inside) if offsets[i][0] < char_end)
    return (first, last) if first <= last else (0, 0)


def build_windows(tokenizer, examples, max_length: int, doc_stride: int, with_answers: bool, source="") -> list:
    """Windows of every example; training windows carry the first answer's positions."""
    out = []
    for i, e in enumerate(examples):
        answer = e.answers[0] if with_answers and e.answers and not e.is_impossible else None
        out += windows_of(tokenizer, e.question, e.context, max_length, doc_stride, i, answer,
                          f"{source}: question {e.id}")
    return out
