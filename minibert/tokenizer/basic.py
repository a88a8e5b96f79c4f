"""BERT's basic tokenizer: clean and normalise the text, then cut it into words.

What BERT calls "basic tokenization" runs before WordPiece and never looks at the vocabulary:

1. clean: drop control characters (and U+FFFD, the "replacement character"), turn every kind of
   whitespace (tab, newline, no-break space, ideographic space...) into a plain space;
2. put spaces around CJK ideographs, so each one becomes a word of its own (Chinese has no spaces);
3. optionally strip accents: decompose (NFD: "é" -> "e" + U+0301) and drop the non-spacing marks;
4. optionally lowercase;
5. split on spaces, and make every punctuation character a one-character word.

The order is the one of Hugging Face's Rust `BertNormalizer` + `BertPreTokenizer` (accents are stripped
*before* lowercasing), because minibert must give exactly the same words as the reference.

Every step is a whole-string regular expression or `str` method, run in C, instead of a Python loop over
characters: that is what makes a pure-Python tokenizer fast enough.
"""

from __future__ import annotations

import re
import unicodedata

from minibert.tokenizer import unicode_tables

# Code points of CJK ideographs, as BERT defines them (the "CJK Unified Ideographs" blocks and their
# extensions, and the compatibility ideographs). Hangul, Hiragana and Katakana are *not* in here: those
# languages put spaces between words.
CJK_RANGES = [
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
]

# Unicode's White_Space property (what Rust's `char::is_whitespace` and most of Python's `str.isspace` say).
# \x0b, \x0c, \x1c-\x1f and \x85 are white space too, but they are control characters and step 1 drops
# those first, so they are not listed.
WHITESPACE = "\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def parse_ranges(table: str) -> list[tuple[int, int]]:
    """'0041-005A 00AD' -> [(0x41, 0x5A), (0xAD, 0xAD)]."""
    out = []
    for item in table.split():
        first, _, last = item.partition("-")
        out.append((int(first, 16), int(last or first, 16)))
    return out


def char_class(ranges: list[tuple[int, int]]) -> str:
    """The inside of a regex [...] class matching the given code point ranges."""
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in ranges)


def bmp_part(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges cut to the Basic Multilingual Plane (U+0000-U+FFFF)."""
    return [(a, min(b, 0xFFFF)) for a, b in ranges if a <= 0xFFFF]


# The character classes come from unicode_tables.py rather than `unicodedata.category`: the reference uses
# an older Unicode table than Python does, and "the same ids as Hugging Face" must hold for every
# character. Lone surrogates (possible in a Python str, impossible in UTF-8 text) are dropped as well.
_CONTROL = parse_ranges(unicode_tables.CONTROL) + [(0xD800, 0xDFFF)]
PUNCT_CLASS = char_class(parse_ranges(unicode_tables.PUNCTUATION))  # (also vocab_io's word boundaries)
_MARKS = parse_ranges(unicode_tables.NONSPACING_MARKS)
_CONTROL_RE = re.compile(f"[{char_class(_CONTROL)}]+")
_PUNCT_RE = re.compile(f"[{PUNCT_CLASS}]")
_CJK_RE = re.compile(f"[{char_class(CJK_RANGES)}]")
_MARKS_RE = re.compile(f"[{char_class(_MARKS)}]+")
# After cleaning, the only white space left is " ". A word is a run of anything else that is not
# punctuation, or a single punctuation character.
_WORD_RE = re.compile(f"[^ {PUNCT_CLASS}]+|[{PUNCT_CLASS}]")
# White space other than " " itself (so that ordinary text has nothing to replace).
_SPACE_RE = re.compile(f"[{WHITESPACE.replace(' ', '')}]")

# Speed. Python's `re` tests a character against the part of a class inside U+0000-U+FFFF with one table
# lookup, but against each range above U+FFFF one by one, and most text has no such character. So each
# class also exists cut to U+0000-U+FFFF, used when the text has no character above U+FFFF (which one
# quick search tells). And "is there anything to clean at all?" is one search, usually answered no.
_ASTRAL_RE = re.compile("[\U00010000-\U0010FFFF]")
_CONTROL_BMP_RE = re.compile(f"[{char_class(bmp_part(_CONTROL))}]+")
_MARKS_BMP_RE = re.compile(f"[{char_class(bmp_part(_MARKS))}]+")
_CJK_BMP_RE = re.compile(f"[{char_class(bmp_part(CJK_RANGES))}]")
_DIRTY_BMP_RE = re.compile(f"[{char_class(bmp_part(_CONTROL))}{WHITESPACE.replace(' ', '')}]")

_KEPT_WHOLE_RE = re.compile(f"([{char_class(parse_ranges(unicode_tables.NFD_KEPT_WHOLE))}])")
_EXTRA_LOWER = {}
for _pair in unicode_tables.EXTRA_LOWERCASE.split():
    _upper, _lower = _pair.split(">")
    _EXTRA_LOWER[int(_upper, 16)] = "".join(chr(int(x, 16)) for x in _lower.split("+"))
_EXTRA_LOWER_RE = re.compile(f"[{''.join(re.escape(chr(c)) for c in _EXTRA_LOWER)}]")


def is_cjk(char: str) -> bool:
    return any(a <= ord(char) <= b for a, b in CJK_RANGES)


def is_punctuation(char: str) -> bool:
    """BERT's punctuation: ASCII punctuation and symbols ($, +, ^, ...) and Unicode's P* categories."""
    return _PUNCT_RE.fullmatch(char) is not None


def nfd(text: str) -> str:
    """Canonical decomposition (NFD), leaving whole the few characters that the reference does not split."""
    if _KEPT_WHOLE_RE.search(text) is None:
        return unicodedata.normalize("NFD", text)
    parts = _KEPT_WHOLE_RE.split(text)  # odd positions hold the characters kept whole
    return "".join(p if i % 2 else unicodedata.normalize("NFD", p) for i, p in enumerate(parts))


def lowercase(text: str) -> str:
    """Lowercase one character at a time, as the reference does.

    `str.lower()` knows one context rule, the Greek final sigma ("ΟΔΟΣ" -> "οδος"); the reference lowercases
    each character alone ("οδοσ"). Mapping Σ to σ first gives the character-by-character result.
    """
    if text.isascii():
        return text.lower()
    text = text.replace("\u03a3", "\u03c3").lower()
    if _EXTRA_LOWER_RE.search(text):
        text = text.translate(_EXTRA_LOWER)
    return text


class BasicTokenizer:
    """Normalise text and split it into words (no vocabulary involved).

    >>> BasicTokenizer().tokenize("Héllo, WORLD!  中文")
    ['hello', ',', 'world', '!', '中', '文']
    """

    def __init__(self, do_lower_case: bool = True, strip_accents: bool | None = None,
                 tokenize_chinese_chars: bool = True):
        self.do_lower_case = do_lower_case
        # As in BERT: when not said otherwise, accents are stripped exactly when text is lowercased.
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self._strip = do_lower_case if strip_accents is None else bool(strip_accents)

    def normalize(self, text: str) -> str:
        """Steps 1-4: the cleaned, normalised text."""
        astral = not text.isascii() and _ASTRAL_RE.search(text) is not None
        if astral:
            text = _SPACE_RE.sub(" ", _CONTROL_RE.sub("", text))
        elif _DIRTY_BMP_RE.search(text):
            text = _SPACE_RE.sub(" ", _CONTROL_BMP_RE.sub("", text))
        if not text.isascii():  # ASCII text has no CJK, no accents: skip two passes
            if self.tokenize_chinese_chars:
                text = (_CJK_RE if astral else _CJK_BMP_RE).sub(r" \g<0> ", text)
            if self._strip:
                text = nfd(text)
                # (NFD can turn a character below U+FFFF into one above: search again.)
                marks = _MARKS_RE if _ASTRAL_RE.search(text) else _MARKS_BMP_RE
                text = marks.sub("", text)
        if self.do_lower_case:
            text = lowercase(text)
        return text

    def split_words(self, normalized: str) -> list[str]:
        """Step 5: words and punctuation characters of already normalised text."""
        return _WORD_RE.findall(normalized)

    def tokenize(self, text: str) -> list[str]:
        """The words of `text`."""
        return _WORD_RE.findall(self.normalize(text))

    def __repr__(self) -> str:
        return (f"BasicTokenizer(do_lower_case={self.do_lower_case}, strip_accents={self.strip_accents}, "
                f"tokenize_chinese_chars={self.tokenize_chinese_chars})")
