"""A small rule-based sentence splitter.

BERT's next-sentence prediction and RoBERTa's full-sentence packing both work on sentences, but most text
(Wikipedia summaries, JSONL records) arrives as paragraphs. The rules, in order:

1. A sentence can end after `.`, `!` or `?` (and any closing quotes or brackets right after it).
2. ...but only if whitespace follows and the next word starts like a sentence: an upper-case letter, a digit,
   or an opening quote/bracket.
3. ...and not after a known abbreviation ("Mr.", "e.g.", "St.", "U.S.") or a single initial ("J. R. R. Tolkien").

It is wrong sometimes ("He lives in the U.S. He works." stays one sentence), which costs pre-training nothing
noticeable; what matters is that it is fast, predictable and easy to read.
"""

from __future__ import annotations

import re

# Words that end with a period without ending the sentence (compared lower-case, without the period).
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx ca no nos vol vols fig figs p pp ed eds
inc ltd co corp bros jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt capt gov sen rep
rev hon u.s u.k u.n a.d b.c a.m p.m ph.d b.a m.a d.c
""".split())

# A candidate boundary: end punctuation, optional closing quotes/brackets, whitespace, then a sentence start.
_BOUNDARY = re.compile(r"""([.!?]+["'”’)\]]*)(\s+)(?=["'“‘(\[]?[A-Z0-9])""")


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences; whitespace inside a sentence is normalised to single spaces."""
    text = " ".join(text.split())
    if not text:
        return []
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        end = match.end(1)  # the sentence keeps its final punctuation
        if match.group(1).startswith(".") and _ends_with_abbreviation(text[start:match.start(1)]):
            continue
        sentences.append(text[start:end])
        start = match.end()
    sentences.append(text[start:])
    return [s for s in sentences if s]


def _ends_with_abbreviation(before_period: str) -> bool:
    """True when the word before a period is an abbreviation or a single-letter initial."""
    word = before_period.rsplit(" ", 1)[-1].lstrip("\"'“‘([")
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. R. R. Tolkien", "George W. Bush"
    return word.lower() in ABBREVIATIONS
