"""Reading and writing the files a tokenizer lives in: `vocab.txt` and corpus text files.

`vocab.txt` is Hugging Face's (and Google's original) format: one token per line, the line number (from 0)
is the token's id. Corpus files are read as a stream of UTF-8 chunks, so a corpus larger than memory can
be counted; a byte that is not UTF-8 is reported with the file name and its byte offset.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from minibert.io.atomic import atomic_write_text
from minibert.tokenizer.basic import PUNCT_CLASS, WHITESPACE

CHUNK_BYTES = 1 << 20  # read corpora 1 MiB at a time


def decode_utf8(data: bytes, path: str | os.PathLike, offset: int = 0) -> str:
    """`data.decode("utf-8")`, with an error that says which file and which byte is wrong."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = data[e.start:e.start + 1].hex()
        raise ValueError(f"{path}: not UTF-8 text: byte 0x{bad} at byte offset {offset + e.start} "
                         f"({e.reason})") from None


# What Hugging Face's vocab.txt reader (Rust's `str::trim_end`) removes from the end of each line: Unicode's
# White_Space characters. (Python's str.rstrip() would also remove the separators U+001C-U+001F.)
LINE_END_SPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                  "\u200a\u2028\u2029\u202f\u205f\u3000")


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The tokens of a vocab.txt, in id order, read as Hugging Face's tokenizers read it: one token per line,
    white space at the end of a line removed (so "hello \\r" is "hello"), white space at its start kept. A file
    that starts with a byte-order mark, duplicates and an empty file are errors."""
    path = Path(path)
    text = decode_utf8(path.read_bytes(), path)
    lines = text.split("\n")
    if lines[-1] == "":  # the file's final newline does not start another token
        lines.pop()
    if not lines:
        raise ValueError(f"{path}: empty vocabulary file")
    if text.startswith("\ufeff"):  # Hugging Face would keep it in the first token, which then never matches
        raise ValueError(f"{path}: starts with a UTF-8 byte-order mark, which Hugging Face reads as part of the first "
                         f"token ({lines[0].rstrip(LINE_END_SPACE)!r}); save the file without it")
    tokens = [line.rstrip(LINE_END_SPACE) for line in lines]
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token in seen:
            why = "" if lines[i] == lines[seen[token]] else (" (white space at a line's end does not count, as in "
                                                               "Hugging Face's reader)")
            raise ValueError(f"{path}: duplicate token {token!r} on lines {seen[token] + 1} and {i + 1}{why}")
        seen[token] = i
    return tokens


def write_vocab(path: str | os.PathLike, tokens: list[str]) -> None:
    """Write tokens one per line (atomically)."""
    for token in tokens:
        if "\n" in token or "\r" in token:
            raise ValueError(f"token {token!r} contains a line break and cannot be written to vocab.txt")
    atomic_write_text(path, "".join(token + "\n" for token in tokens))


def corpus_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Expand files and folders (recursively, sorted, hidden files skipped) into a list of files."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(f for f in p.rglob("*")
                           if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts))
            if not found:
                raise ValueError(f"corpus folder {p} contains no files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"corpus file or folder not found: {p}")
    return files


def read_chunks(path: Path, chunk_bytes: int | None = None, text_field: str = "text"
                ) -> Iterator[tuple[str, int]]:
    """Yield (text, number of bytes read) pieces of a corpus file, in the formats `pretrain` reads:

    - UTF-8 text, cut at a line break, else a space, else (a long line without spaces) after any white space
      or punctuation character: the basic tokenizer splits words there whatever its settings, so counting
      words piece by piece gives the same counts as reading the whole file at once;
    - `.jsonl`: one JSON object per line, its `text_field` string is the text (one record at a time);
    - `.gz` of either, decompressed as it is read.

    Memory stays bounded (about chunk_bytes + MAX_WORD_BYTES) whatever the file: a run of more than
    MAX_WORD_BYTES bytes with no white space or punctuation (one "word" of over a million characters, which
    training leaves out anyway: it is far longer than max_input_chars_per_word) is skipped, not held.
    """
    path = Path(path)
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    name = path.name.lower()
    compressed = name.endswith(".gz")
    where = f"{path} (decompressed)" if compressed else path  # byte offsets count the decompressed text
    try:
        with (gzip.open(path, "rb") if compressed else open(path, "rb")) as f:
            if name.removesuffix(".gz").endswith(".jsonl"):
                yield from _jsonl_texts(f, path, where, text_field, chunk_bytes)
            else:
                yield from _text_chunks(f, where, chunk_bytes)
    except (OSError, EOFError, zlib.error) as e:
        if not compressed:
            raise
        raise ValueError(f"{path}: cannot be read as gzip ({e})") from None


MAX_WORD_BYTES = 1 << 22  # a run without white space or punctuation longer than this (4 MiB) is skipped

# Where a text can be cut without changing its words: after white space or a punctuation character, which end a
# word for every setting of the basic tokenizer (none of them is a control character, which it would drop, nor a
# combining mark). Not CJK ideographs: with tokenize_chinese_chars=False they are ordinary letters.
_BOUNDARY_RE = re.compile(f"[{WHITESPACE}{PUNCT_CLASS}]")


def _text_chunks(f, where, chunk_bytes: int) -> Iterator[tuple[str, int]]:
    offset = 0  # byte offset of `pending` in the file, for error messages
    pending = b""
    skipping = False  # inside a word longer than MAX_WORD_BYTES: left out up to its end
    while True:
        block = f.read(chunk_bytes)
        data = pending + block
        end = not block
        if skipping:
            text, n = _whole_characters(data, where, offset, end)  # (checked as UTF-8 all the same)
            found = _BOUNDARY_RE.search(text)
            if found is None:
                yield "", n
                offset += n
                pending = data[n:]
                if end:
                    return
                continue
            n = len(text[:found.start()].encode("utf-8"))
            yield "", n
            offset += n
            data = data[n:]
            skipping = False
        if end:  # end of file: the rest is the last piece
            if data:
                yield decode_utf8(data, where, offset), len(data)
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            cut = data.rfind(b" ")
        if cut < 0:  # a long line without spaces: cut after its last other white space or punctuation
            cut = _last_boundary(data, where, offset)
        if cut < 0:  # `data` is one word so far
            if len(data) > MAX_WORD_BYTES:
                skipping = True
                text, n = _whole_characters(data, where, offset, False)
                yield "", n
                offset += n
                pending = data[n:]
            else:
                pending = data
            continue
        yield decode_utf8(data[:cut + 1], where, offset), cut + 1
        offset += cut + 1
        pending = data[cut + 1:]


def _whole_characters(data: bytes, where, offset: int, end: bool) -> tuple[str, int]:
    """The text of `data` and its length in bytes, without a character cut off at its end (unless `end`)."""
    n = len(data)
    if not end:
        for back in range(1, min(4, n) + 1):
            lead = data[n - back]
            if lead & 0xC0 != 0x80:  # ASCII or the first byte of a multi-byte character
                size = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
                if size > back:
                    n -= back
                break
    return decode_utf8(data[:n], where, offset), n


def _last_boundary(data: bytes, where, offset: int) -> int:
    """The index of the last byte of the last white space or punctuation character in `data`, or -1."""
    text, _ = _whole_characters(data, where, offset, False)
    found = _BOUNDARY_RE.search(text[::-1])
    if found is None:
        return -1
    return len(text[:len(text) - found.start()].encode("utf-8")) - 1


def jsonl_text(line: str, number: int, path: Path, text_field: str) -> str:
    """The `text_field` string of one JSONL record (line `number` of `path`), or a one-line error saying what is
    wrong with it. pretrain's reader (data/corpus.py) and train-tokenizer's (below) share it."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}, line {number}: not valid JSON ({e.msg})") from None
    if not isinstance(record, dict) or text_field not in record:
        raise ValueError(f"{path}, line {number}: expected a JSON object with a {text_field!r} field "
                         f"(choose the field with --text-field)")
    text = record[text_field]
    if not isinstance(text, str):
        raise ValueError(f"{path}, line {number}: field {text_field!r} must be a string, got {type(text).__name__}")
    return text


def _jsonl_texts(f, path: Path, where, text_field: str, batch_bytes: int) -> Iterator[tuple[str, int]]:
    """The `text_field` strings of a JSONL file, read a line (a record) at a time, about batch_bytes together.
    The errors are those of pretrain's reader (minibert/data/corpus.py), which reads each record with jsonl_text
    too."""
    batch: list[str] = []
    size = offset = 0
    for number, line in enumerate(f, 1):
        text = decode_utf8(line, where, offset)
        offset += len(line)
        size += len(line)
        if text.strip():
            batch.append(jsonl_text(text, number, path, text_field))
        if size >= batch_bytes:
            yield "\n".join(batch), size  # ("\n" between records: two records never make one word)
            batch.clear()
            size = 0
    if size:
        yield "\n".join(batch), size
