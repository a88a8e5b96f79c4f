"""`minibert tokenize`: show how a tokenizer cuts a text into WordPiece pieces, and their ids."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import unicodedata

from minibert._plural import counted


def add_arguments(parser):
    parser.description = (
        "Print the pieces and ids a tokenizer gives a text: [CLS] text [SEP] (or [CLS] text [SEP] pair [SEP]). "
        "'##' marks a piece that continues the word before it.")
    parser.add_argument("--tokenizer", required=True, metavar="DIR",
                        help="a folder with vocab.txt or tokenizer.json (+ tokenizer_config.json), e.g. a BERT "
                             "checkpoint; a vocab.txt file; a pre-training run folder; or 'minilm' (the built-in "
                             "all-MiniLM-L6-v2)")
    parser.add_argument("text", help="the text to tokenize ('-' reads it from standard input)")
    parser.add_argument("--pair", default=None, metavar="TEXT", help="a second text (segment B)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="truncate to this many tokens (longest text first)")
    parser.add_argument("--no-special-tokens", action="store_true", help="do not add [CLS] and [SEP]")
    parser.add_argument("--json", action="store_true",
                        help="print JSON: tokens, input_ids, token_type_ids, attention_mask, word_ids")


def run(args) -> int:
    from minibert.tokenizer import WordPieceTokenizer

    from minibert.viz.model_select import resolve_tokenizer_folder
    tok = WordPieceTokenizer.from_pretrained(resolve_tokenizer_folder(args.tokenizer))  # before stdin is read
    if args.max_length is not None:
        specials = 0 if args.no_special_tokens else (3 if args.pair is not None else 2)
        if args.max_length < max(1, specials):
            raise ValueError(f"--max-length {args.max_length} is too small: " +
                             (f"{'[CLS] and two [SEP]' if specials == 3 else '[CLS] and [SEP]'} take {specials} "
                              f"tokens, so at least {specials}" if specials else "at least 1"))
    if args.pair is not None:
        check_argument_text(args.pair, "--pair")
    text = read_stdin_text() if args.text == "-" else check_argument_text(args.text, "argument 1")
    enc = tok.encode(text, args.pair, max_length=args.max_length, truncation=args.max_length is not None,
                     add_special_tokens=not args.no_special_tokens)
    if args.json:
        print(json.dumps({"tokens": enc.tokens, "input_ids": enc.input_ids, "token_type_ids": enc.token_type_ids,
                          "attention_mask": enc.attention_mask, "word_ids": enc.word_ids}, ensure_ascii=False))
        return 0
    # Aligned rows, each column as wide as its widest cell so a piece sits above its id; long texts are
    # wrapped into blocks that fit the terminal.
    rows = [["piece", *enc.tokens], ["id", *map(str, enc.input_ids)]]
    if args.pair is not None:
        rows.append(["type", *map(str, enc.token_type_ids)])
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    room = max(40, shutil.get_terminal_size((100, 24)).columns)
    start = 1
    while start < len(widths):
        end, used = start, widths[0]
        while end < len(widths) and (end == start or used + 2 + widths[end] <= room):
            used += 2 + widths[end]
            end += 1
        for row in rows:
            cells = [row[0]] + row[start:end]
            print("  ".join(c + " " * (w - display_width(c)) for c, w in zip(cells, [widths[0]] + widths[start:end]))
                  .rstrip())
        start = end
        if start < len(widths):
            print()
    print(counted(len(enc), "token"))
    return 0


def read_stdin_text() -> str:
    """Standard input as UTF-8 text; a byte that is not UTF-8 is an error naming its offset, not dropped."""
    from minibert.tokenizer.vocab_io import decode_utf8
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # (a text stream put in its place, as tests do)
        return sys.stdin.read()
    return decode_utf8(stream.read(), "<stdin>")


def check_argument_text(text: str, name: str) -> str:
    """`text`, refused if it has lone surrogates: the bytes of a command-line argument that were not UTF-8
    (Python keeps them as U+DC80-U+DCFF) and that the tokenizer would silently drop."""
    surrogate = re.search("[\ud800-\udfff]", text)
    if surrogate is None:
        return text
    from minibert.tokenizer.vocab_io import decode_utf8
    try:
        raw = os.fsencode(text)  # the bytes as typed
    except UnicodeEncodeError:  # (a surrogate that no byte gives)
        position = surrogate.start()
        raise ValueError(f"{name}: not UTF-8 text: a lone surrogate U+{ord(text[position]):04X} at character "
                         f"{position}") from None
    return decode_utf8(raw, name)


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: 2 for wide characters (CJK, kana, fullwidth forms), 0 for combining
    marks and format characters, 1 for the others."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width
