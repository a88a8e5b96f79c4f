"""Turning documents of token ids into pre-training sequences, and batches of them.

Two objectives:

- `mlm+nsp`, BERT (google-research/bert, create_pretraining_data.py): `[CLS] A [SEP] B [SEP]`, where A is a run of
  sentences from a document and B is, half the time, the sentences that really follow (NSP label 0) and,
  otherwise, sentences from another, random document (label 1). With probability `short_seq_prob` a sequence
  aims at a random shorter length, so the model also sees short inputs.
- `mlm+sop`, ALBERT's sentence-order prediction: the same pairs, but B always really follows A, and half the
  time the two are swapped (`[CLS] B [SEP] A [SEP]`, label 1); a topic shift cannot give the answer away, only
  the order of the discourse can.
- `mlm`, RoBERTa's FULL-SENTENCES: `[CLS] s1 s2 ... [SEP]` packed with whole sentences up to the length limit,
  running on into the next document with an extra [SEP] between documents. No padding is wasted.

Each epoch's examples are a deterministic function of (seed, epoch): a new pairing and a new order every epoch
(google-research/bert gets the same effect by duplicating the data ten times), and a run resumed from a
checkpoint sees exactly the examples it would have seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from minibert._malloc import release_freed_memory
from minibert.data.grouping import length_grouped_order

OBJECTIVES = ("mlm", "mlm+nsp", "mlm+sop", "electra")  # electra trains on the mlm sequences
PAIR_OBJECTIVES = ("mlm+nsp", "mlm+sop")  # sentence pairs in two segments, with a head on the pooled [CLS]
EXAMPLES_STREAM = 1  # separates this random stream from the masking and dropout streams of the same seed


@dataclass
class Example:
    tokens: np.ndarray   # (t,) int64, special tokens included
    num_a: int           # tokens in segment A ([CLS] and its [SEP] included); the rest is segment B
    is_random_next: int  # NSP label: 1 = B comes from another document, 0 = B really follows A, -1 = no NSP
    #                      (SOP: 1 = the two segments were swapped, 0 = in order)
    doc: int             # the document A comes from
    other_doc: int       # the document B comes from (== doc unless random), -1 when there is no B


def truncate_pair(a: list, b: list, max_tokens: int, rng: np.random.Generator) -> None:
    """Shorten the longer of a and b, one token at a time from a random end, until they fit (in place)."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def nsp_examples(documents: list[list[np.ndarray]], max_seq_len: int, rng: np.random.Generator, cls_id: int,
                 sep_id: int, short_seq_prob: float = 0.1, sentence_order: bool = False) -> list[Example]:
    """BERT's sentence-pair examples from every document, in document order (shuffle them afterwards); see
    iter_nsp_examples."""
    return list(iter_nsp_examples(documents, max_seq_len, rng, cls_id, sep_id, short_seq_prob, sentence_order))


def iter_nsp_examples(documents: list[list[np.ndarray]], max_seq_len: int, rng: np.random.Generator, cls_id: int,
                      sep_id: int, short_seq_prob: float = 0.1, sentence_order: bool = False) -> Iterator[Example]:
    """BERT's sentence-pair examples from every document, in document order, one at a time.

    sentence_order=True makes ALBERT's SOP pairs instead: B is always the real continuation, and after
    truncation a coin swaps A and B (label 1 when swapped).

    One change from create_pretraining_data.py: there, a chunk of a single sentence always gets a random B,
    which makes far more than half the pairs random on a corpus of short documents. Here the coin is tossed
    first; when it says "real next" and the chunk is one sentence, that sentence is cut in two at a random
    token (B still really follows A), so the labels stay 50/50.
    """
    if max_seq_len < 5:
        raise ValueError(f"sequence length {max_seq_len} is too short for sentence pairs (need at least 5)")
    max_tokens = max_seq_len - 3  # [CLS] A [SEP] B [SEP]
    nonempty = [d for d, doc in enumerate(documents) if doc]
    for d, document in enumerate(documents):
        target = _target_length(max_tokens, short_seq_prob, rng)
        chunk, length, i = [], 0, 0
        while i < len(document):
            chunk.append(document[i])
            length += len(document[i])
            if i == len(document) - 1 or length >= target:
                a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
                a = [t for s in chunk[:a_end] for t in s.tolist()]
                random_next = not sentence_order and len(nonempty) > 1 and rng.random() < 0.5
                if random_next:
                    other = d
                    while other == d:
                        other = nonempty[int(rng.integers(len(nonempty)))]
                    b = _random_segment(documents[other], target - len(a), rng)
                    i -= len(chunk) - a_end  # the unused sentences of this chunk start the next one
                elif len(chunk) >= 2:
                    other, b = d, [t for s in chunk[a_end:] for t in s.tolist()]
                elif len(a) >= 2:
                    cut = int(rng.integers(1, len(a)))
                    other, a, b = d, a[:cut], a[cut:]
                else:
                    other, b = d, []  # a one-token document: no real next segment exists
                truncate_pair(a, b, max_tokens, rng)
                label = int(random_next)
                if sentence_order and rng.random() < 0.5:
                    a, b, label = b, a, 1
                if a and b:
                    tokens = np.array([cls_id, *a, sep_id, *b, sep_id], dtype=np.int64)
                    yield Example(tokens, len(a) + 2, label, d, other)
                chunk, length = [], 0
                target = _target_length(max_tokens, short_seq_prob, rng)
            i += 1


def _target_length(max_tokens: int, short_seq_prob: float, rng: np.random.Generator) -> int:
    """How many tokens the next pair aims for: max_tokens, or with probability short_seq_prob a random shorter
    length (so the model also sees short inputs, as at fine-tuning time)."""
    if rng.random() < short_seq_prob:
        return int(rng.integers(2, max_tokens + 1))
    return max_tokens


def _random_segment(document: list[np.ndarray], target_length: int, rng: np.random.Generator) -> list[int]:
    """Sentences of `document` from a random start, until at least `target_length` tokens."""
    start = int(rng.integers(len(document)))
    b = []
    for sentence in document[start:]:
        b.extend(sentence.tolist())
        if len(b) >= target_length:
            break
    return b


def full_sentence_examples(documents: list[list[np.ndarray]], max_seq_len: int, rng: np.random.Generator,
                           cls_id: int, sep_id: int, fill: bool = False) -> list[Example]:
    """RoBERTa's FULL-SENTENCES packing over the documents in a random order; see iter_full_sentence_examples."""
    return list(iter_full_sentence_examples(documents, max_seq_len, rng, cls_id, sep_id, fill))


def iter_full_sentence_examples(documents: list[list[np.ndarray]], max_seq_len: int, rng: np.random.Generator,
                                cls_id: int, sep_id: int, fill: bool = False) -> Iterator[Example]:
    """RoBERTa's FULL-SENTENCES packing over the documents in a random order (a long sentence is cut), one
    sequence at a time.

    fill=True fills every sequence to the length limit instead: a sentence that does not fit is cut there and
    goes on at the start of the next sequence. Whole sentences leave ~1/4 of a 64-token sequence as padding on
    wiki (sentences are ~25 tokens); filled sequences carry ~30% more text for the same step time."""
    if max_seq_len < 3:
        raise ValueError(f"sequence length {max_seq_len} is too short (need at least 3)")
    max_tokens = max_seq_len - 2  # [CLS] ... [SEP]
    current, first_doc = [], -1

    def flushed():
        """The example `current` makes (None if it is empty)."""
        if current and current[-1] == sep_id:
            current.pop()  # a document boundary at the very end: the closing [SEP] marks it already
        if current:
            tokens = np.array([cls_id, *current, sep_id], dtype=np.int64)
            return Example(tokens, len(tokens), -1, first_doc, -1)
        return None

    for d in rng.permutation(len(documents)).tolist():
        for sentence in documents[d]:
            pieces = sentence.tolist()
            while pieces:
                if len(current) + len(pieces) > max_tokens:
                    if current and not fill:
                        example, current = flushed(), []
                    else:  # cut the sentence: fill this sequence, the rest starts the next one
                        if not current:
                            first_doc = d
                        room = max_tokens - len(current)
                        current, pieces = current + pieces[:room], pieces[room:]
                        example, current = flushed(), []
                    if example is not None:
                        yield example
                    continue
                if not current:
                    first_doc = d
                current.extend(pieces)
                pieces = []
        if current and len(current) < max_tokens:
            current.append(sep_id)  # the extra separator between documents
    example = flushed()
    if example is not None:
        yield example


def make_examples(documents, objective: str, max_seq_len: int, rng: np.random.Generator, cls_id: int,
                  sep_id: int, short_seq_prob: float = 0.1, fill: bool = False) -> list[Example]:
    """All examples of one pass over `documents`, in a random order. fill: mlm only, see full_sentence_examples."""
    examples = list(iter_examples(documents, objective, max_seq_len, rng, cls_id, sep_id, short_seq_prob, fill))
    order = rng.permutation(len(examples))
    return [examples[i] for i in order]


def make_packed_examples(documents, objective: str, max_seq_len: int, rng: np.random.Generator, cls_id: int,
                         sep_id: int, short_seq_prob: float = 0.1, fill: bool = False) -> PackedExamples:
    """make_examples' examples, in its order, packed as they are made: no Python object per example is kept,
    so an epoch of a large corpus costs its packed arrays, not ten times that (IMDB's 7.5M tokens: ~20 MB)."""
    packed = PackedExamples.from_iter(iter_examples(documents, objective, max_seq_len, rng, cls_id, sep_id,
                                                    short_seq_prob, fill))
    return packed.reordered(rng.permutation(len(packed)))


def iter_examples(documents, objective: str, max_seq_len: int, rng: np.random.Generator, cls_id: int, sep_id: int,
                  short_seq_prob: float = 0.1, fill: bool = False) -> Iterator[Example]:
    """The examples of one pass over `documents`, in the order they are made (make_examples then shuffles)."""
    if objective in PAIR_OBJECTIVES:
        return iter_nsp_examples(documents, max_seq_len, rng, cls_id, sep_id, short_seq_prob,
                                 sentence_order=objective == "mlm+sop")
    if objective in ("mlm", "electra"):
        return iter_full_sentence_examples(documents, max_seq_len, rng, cls_id, sep_id, fill)
    raise ValueError(f"unknown objective {objective!r}; expected one of {', '.join(OBJECTIVES)}")


def collate(examples: list[Example], pad_id: int, seq_len: int | None = None) -> dict[str, np.ndarray]:
    """Pad examples into a batch: input_ids, token_type_ids, attention_mask (B, T) and next_sentence_label (B,)."""
    T = seq_len or max(len(e.tokens) for e in examples)
    B = len(examples)
    input_ids = np.full((B, T), pad_id, dtype=np.int64)
    token_type_ids = np.zeros((B, T), dtype=np.int64)
    attention_mask = np.zeros((B, T), dtype=np.int64)
    for row, e in enumerate(examples):
        n = len(e.tokens)
        input_ids[row, :n] = e.tokens
        token_type_ids[row, e.num_a:n] = 1
        attention_mask[row, :n] = 1
    labels = np.array([e.is_random_next for e in examples], dtype=np.int64)
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
            "next_sentence_label": labels}


class PackedExamples:
    """A list of Examples kept in three flat arrays instead of one Python object and one array each: an epoch
    of wiki (23,600 sequences) takes 3 MB instead of 17 MB for the whole run. Indexing returns an equal
    Example (tokens as int64, as make_examples gives them)."""

    CHUNK = 4096  # examples packed at a time by from_iter

    def __init__(self, examples: list[Example]):
        lengths = [len(e.tokens) for e in examples]
        self.starts = np.zeros(len(examples) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        tokens = np.concatenate([e.tokens for e in examples]) if examples else np.zeros(0, dtype=np.int64)
        self.tokens = _narrow(tokens)
        self.fields = np.array([(e.num_a, e.is_random_next, e.doc, e.other_doc) for e in examples],
                               dtype=np.int64).reshape(len(examples), 4)

    @classmethod
    def from_iter(cls, examples: Iterable[Example]) -> PackedExamples:
        """The same arrays as PackedExamples(list(examples)), made CHUNK examples at a time."""
        parts = []
        chunk = []
        for example in examples:
            chunk.append(example)
            if len(chunk) == cls.CHUNK:
                parts.append(cls(chunk))
                chunk = []
        parts.append(cls(chunk))
        packed = parts[0]
        if len(parts) > 1:
            lengths = np.concatenate([np.diff(p.starts) for p in parts])
            packed.starts = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=packed.starts[1:])
            packed.tokens = _narrow(np.concatenate([p.tokens for p in parts]))  # (int64 if any part needs it)
            packed.fields = np.concatenate([p.fields for p in parts])
        return packed

    def reordered(self, order: np.ndarray) -> PackedExamples:
        """These examples in the order `order` (a permutation of their indices), copied once."""
        lengths = np.diff(self.starts)[order]
        starts = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        tokens = np.empty_like(self.tokens)
        old_starts, new_starts = self.starts[order].tolist(), starts[:-1].tolist()
        for a, b, n in zip(old_starts, new_starts, lengths.tolist()):
            tokens[b:b + n] = self.tokens[a:a + n]
        packed = PackedExamples([])
        packed.starts, packed.tokens, packed.fields = starts, tokens, self.fields[order]
        return packed

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = range(len(self))[i]  # negative indices count from the end; out of range raises IndexError
        num_a, is_random_next, doc, other_doc = self.fields[i].tolist()
        tokens = self.tokens[self.starts[i]:self.starts[i + 1]].astype(np.int64)
        return Example(tokens, num_a, is_random_next, doc, other_doc)


def _narrow(tokens: np.ndarray) -> np.ndarray:
    """Token ids as uint16 when they all fit, else int64."""
    small = len(tokens) == 0 or (tokens.min() >= 0 and tokens.max() <= np.iinfo(np.uint16).max)
    return tokens.astype(np.uint16 if small else np.int64)


class ExampleStream:
    """An endless supply of examples, epoch after epoch; its position is two integers a checkpoint can keep."""

    def __init__(self, documents, objective, max_seq_len, seed, cls_id, sep_id, short_seq_prob=0.1, fill=False,
                 group_batch_size=None):
        """group_batch_size=B: serve the examples in batches of B of similar length (minibert.data.grouping);
        take() must then be called with B."""
        self.documents, self.objective, self.max_seq_len, self.fill = documents, objective, max_seq_len, fill
        self.seed, self.cls_id, self.sep_id, self.short_seq_prob = seed, cls_id, sep_id, short_seq_prob
        self.group_batch_size = group_batch_size
        self.epoch, self.position = 0, 0
        self._examples: PackedExamples | None = None
        self._order: np.ndarray | None = None  # the order examples are served in (None: as made)
        self._examples = self._build(0)
        if not len(self):
            raise ValueError("the training documents gave no examples (every document is empty after "
                             "tokenization?)")

    def _build(self, epoch: int) -> PackedExamples:
        rng = np.random.default_rng([self.seed, EXAMPLES_STREAM, epoch])
        self._examples = None  # the previous epoch's examples go before the next epoch's are made
        packed = make_packed_examples(self.documents, self.objective, self.max_seq_len, rng, self.cls_id,
                                      self.sep_id, self.short_seq_prob, self.fill)
        release_freed_memory()  # (what making the examples took beyond the packed arrays)
        if self.group_batch_size:  # its own stream: the examples themselves stay those of an ungrouped run
            self._order = length_grouped_order(np.diff(packed.starts), self.group_batch_size,
                                               np.random.default_rng([self.seed, EXAMPLES_STREAM, epoch, 1]))
        return packed

    def __len__(self) -> int:
        """Examples in the current epoch (it varies a little from epoch to epoch)."""
        return len(self._examples) if self._order is None else len(self._order)

    def _example(self, i: int) -> Example:
        return self._examples[i if self._order is None else int(self._order[i])]

    def take(self, n: int) -> list[Example]:
        if self.group_batch_size and n != self.group_batch_size:
            raise ValueError(f"this stream serves batches of {self.group_batch_size} examples, not {n}")
        batch = []
        while len(batch) < n:
            if self.position == len(self):
                self.epoch, self.position = self.epoch + 1, 0
                self._examples = self._build(self.epoch)
            batch.append(self._example(self.position))
            self.position += 1
        return batch

    def peek(self, n: int) -> list[Example]:
        """Up to n of the next examples, without moving the position."""
        return [self._example(i) for i in range(self.position, min(self.position + n, len(self)))]

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._examples = self._build(self.epoch)
        if self.position > len(self):
            raise ValueError(f"data position {self.position} is past the end of epoch {self.epoch} "
                             f"({len(self)} examples): the corpus or tokenizer changed since the "
                             f"checkpoint was written")
