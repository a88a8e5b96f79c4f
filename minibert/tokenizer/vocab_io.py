"""Reading and writing the files a tokenizer lives in: `vocab.txt` and corpus text files.

`vocab.txt` is Hugging Face's (and Google's original) format: one token per line, the line number (from 0)
is the token's id. Corpus files are read as a stream of UTF-8 chunks, so a corpus larger than memory can
be counted; a byte that is not UTF-8 is reported with the file name and its byte offset.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from minibert.io.atomic import atomic_write_text

CHUNK_BYTES = 1 << 20  # read corpora 1 MiB at a time


def decode_utf8(data: bytes, path: str | os.PathLike, offset: int = 0) -> str:
    """`data.decode("utf-8")`, with an error that says which file and which byte is wrong."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = data[e.start:e.start + 1].hex()
        raise ValueError(f"{path}: not UTF-8 text: byte 0x{bad} at byte offset {offset + e.start} "
                         f"({e.reason})") from None


def read_vocab(path: str | os.PathLike) -> list[str]:
    """The tokens of a vocab.txt, in id order. Duplicates and an empty file are errors."""
    path = Path(path)
    text = decode_utf8(path.read_bytes(), path)
    # One token per line. Only the line break is removed: a token is taken exactly as written.
    tokens = [line.rstrip("\r") for line in text.split("\n")]
    if tokens and tokens[-1] == "":  # the file's final newline does not start another token
        tokens.pop()
    if not tokens:
        raise ValueError(f"{path}: empty vocabulary file")
    seen: dict[str, int] = {}
    for i, token in enumerate(tokens):
        if token in seen:
            raise ValueError(f"{path}: duplicate token {token!r} on lines {seen[token] + 1} and {i + 1}")
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


def read_chunks(path: Path, chunk_bytes: int | None = None) -> Iterator[tuple[str, int]]:
    """Yield (text, number of bytes) pieces of a UTF-8 file, each ending at a line break or space.

    Cutting only at white space keeps words (and multi-byte characters) whole, so counting words chunk by
    chunk gives the same counts as reading the whole file at once.
    """
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    offset = 0  # byte offset of `pending` in the file, for error messages
    pending = b""
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_bytes)
            data = pending + block
            if not block:  # end of file: the rest is the last piece
                if data:
                    yield decode_utf8(data, path, offset), len(data)
                return
            cut = data.rfind(b"\n")
            if cut < 0:
                cut = data.rfind(b" ")
            if cut < 0:  # one very long line without spaces: keep reading
                pending = data
                continue
            yield decode_utf8(data[:cut + 1], path, offset), cut + 1
            offset += cut + 1
            pending = data[cut + 1:]
