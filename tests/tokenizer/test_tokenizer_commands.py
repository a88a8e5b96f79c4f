"""`minibert train-tokenizer` and `minibert tokenize`, run through the real command line entry point."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from minibert.cli import main
from minibert.tokenizer import WordPieceTokenizer, train_wordpiece

TEXT = "The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away!\n"


def write_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "more").mkdir(parents=True)
    (corpus / "a.txt").write_text(TEXT * 20, encoding="utf-8")
    (corpus / "more" / "b.txt").write_text("Foxes and dogs, dogs and foxes.\n" * 10, encoding="utf-8")
    return corpus


def test_train_then_tokenize(tmp_path, capsys):
    corpus = write_corpus(tmp_path)
    out = tmp_path / "tok"
    assert main(["train-tokenizer", "--corpus", str(corpus), "--vocab-size", "80", "--out", str(out),
                 "--no-progress"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (out / "vocab.txt").exists() and (out / "tokenizer_config.json").exists()
    tok = WordPieceTokenizer.from_pretrained(out)
    assert tok.vocab_size <= 80 and tok.do_lower_case

    assert main(["tokenize", "--tokenizer", str(out), "The lazy foxes!", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = tok.encode("The lazy foxes!")
    assert shown["input_ids"] == expected.input_ids and shown["tokens"] == expected.tokens
    assert shown["word_ids"] == expected.word_ids

    assert main(["tokenize", "--tokenizer", str(out), "The dog", "--pair", "runs"]) == 0
    text = capsys.readouterr().out
    assert "[CLS]" in text and "type" in text and text.rstrip().endswith("tokens")


def test_cased_training_and_stdin(tmp_path, capsys, monkeypatch):
    corpus = write_corpus(tmp_path)
    out = tmp_path / "cased"
    assert main(["train-tokenizer", "--corpus", str(corpus / "a.txt"), "--vocab-size", "60", "--out", str(out),
                 "--cased", "--no-progress"]) == 0
    tok = WordPieceTokenizer.from_pretrained(out)
    assert tok.do_lower_case is False
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("The fox".encode()), encoding="utf-8"))
    assert main(["tokenize", "--tokenizer", str(out), "-", "--json", "--no-special-tokens"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "[CLS]" not in shown["tokens"] and tok.decode(shown["input_ids"]) == "The fox"


def test_bad_input_gives_one_line_errors(tmp_path, capsys):
    assert main(["train-tokenizer", "--corpus", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "missing.txt" in err and err.count("\n") == 1
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok text\n\x80oops")
    assert main(["train-tokenizer", "--corpus", str(bad), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "bad.txt" in err and "byte offset 8" in err and err.count("\n") == 1
    assert main(["train-tokenizer", "--corpus", str(bad), "--out", str(tmp_path / "o"), "--vocab-size", "3"]) == 2
    assert "--vocab-size" in capsys.readouterr().err
    assert main(["tokenize", "--tokenizer", str(tmp_path / "nowhere"), "text"]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_folder_that_holds_a_tokenizer_is_replaced_only_when_asked(tmp_path, capsys):
    # A model's folder: a new vocabulary would silently stop matching its embeddings.
    corpus = write_corpus(tmp_path)
    out = tmp_path / "model"
    out.mkdir()
    (out / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n", encoding="utf-8")
    (out / "tokenizer.json").write_text("{}", encoding="utf-8")  # a fast tokenizer's file, loaded first by HF
    train = ["train-tokenizer", "--corpus", str(corpus), "--vocab-size", "80", "--out", str(out), "--no-progress"]
    assert main(train) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already holds vocab.txt, tokenizer.json" in err and "--overwrite" in err
    assert (out / "vocab.txt").read_text(encoding="utf-8").split() == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                                        "the"]  # untouched
    assert main([*train, "--overwrite"]) == 0
    assert WordPieceTokenizer.from_pretrained(out).vocab_size > 6
    assert not (out / "tokenizer.json").exists() or (out / "tokenizer.json").read_text() != "{}"  # gone, or new


def test_a_file_that_is_no_vocabulary_is_named_in_the_error(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello world\nthe cat sat\n", encoding="utf-8")
    assert main(["tokenize", "--tokenizer", str(text), "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(text) in err and "no unknown token '[UNK]'" in err


def one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and not captured.out, captured
    return captured.err


def test_frequency_is_the_default_score_and_help_says_what_each_gives(tmp_path, capsys):
    corpus = write_corpus(tmp_path)
    assert main(["train-tokenizer", "--corpus", str(corpus), "--vocab-size", "60", "--out", str(tmp_path / "t"),
                 "--no-progress"]) == 0
    files = sorted(corpus.rglob("*.txt"))
    by_frequency = train_wordpiece(files, vocab_size=60, progress=False, score="frequency")
    by_ratio = train_wordpiece(files, vocab_size=60, progress=False, score="wordpiece")
    assert by_frequency.ids_to_tokens != by_ratio.ids_to_tokens  # (so the test tells them apart)
    assert WordPieceTokenizer.from_pretrained(tmp_path / "t").ids_to_tokens == by_frequency.ids_to_tokens
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["train-tokenizer", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "'frequency' = the most frequent pair (default;" in shown and "letter by letter" in shown


def test_out_is_checked_before_the_corpus_is_read(tmp_path, capsys):
    bad = tmp_path / "bad.txt"  # read first, it would be the error
    bad.write_bytes(b"ok \x80 text\n")
    (tmp_path / "empty.txt").write_text("")
    err = one_line_error(capsys, ["train-tokenizer", "--corpus", str(bad),
                                  "--out", str(tmp_path / "empty.txt" / "sub")])
    assert f"--out {tmp_path / 'empty.txt' / 'sub'}: {tmp_path / 'empty.txt'} is a file; expected a folder" in err
    (tmp_path / "out" / "vocab.txt").mkdir(parents=True)
    err = one_line_error(capsys, ["train-tokenizer", "--corpus", str(bad), "--out", str(tmp_path / "out")])
    assert "vocab.txt: is a folder" in err
    if Path("/proc/1").is_dir():  # a folder nobody may write in, root included
        err = one_line_error(capsys, ["train-tokenizer", "--corpus", str(bad), "--out", "/proc/1/nope"])
        assert "--out /proc/1/nope: no permission to write in /proc/1" in err


def test_the_out_folder_and_repeated_files_are_not_read(tmp_path, capsys):
    corpus = write_corpus(tmp_path)
    out = corpus / "tok"  # inside the corpus folder: a second run must not learn from the first one's files
    train = ["train-tokenizer", "--corpus", str(corpus), "--vocab-size", "70", "--out", str(out), "--no-progress"]
    assert main(train) == 0
    assert "left out" not in capsys.readouterr().out
    first = (out / "vocab.txt").read_text(encoding="utf-8")
    written = len(list(out.iterdir()))  # (vocab.txt, tokenizer_config.json, maybe tokenizer.json)
    assert main([*train, "--overwrite"]) == 0
    assert f"on 2 files (left out: {written} tokenizer files of --out)" in capsys.readouterr().out
    assert (out / "vocab.txt").read_text(encoding="utf-8") == first
    a = corpus / "a.txt"
    assert main([*train, "--overwrite", "--corpus", str(a), str(a), str(corpus),
                 str(tmp_path / "corpus" / ".." / "corpus")]) == 0
    assert (f"on 2 files (left out: {4 + written} repeated files and {written} tokenizer files of --out)"
            in capsys.readouterr().out)
    assert (out / "vocab.txt").read_text(encoding="utf-8") == first
    err = one_line_error(capsys, ["train-tokenizer", "--corpus", str(out / "vocab.txt"), "--out", str(out),
                                  "--overwrite"])
    assert "--corpus: no file to train on: the files given are --out's own tokenizer files" in err


def test_jsonl_and_gz_corpora_as_pretrain_reads_them(tmp_path, capsys):
    import gzip
    records = "".join(json.dumps({"text": line, "n": i}) + "\n" for i, line in enumerate([TEXT] * 20))
    with gzip.open(tmp_path / "docs.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(records)
    (tmp_path / "plain.txt").write_text(TEXT * 20, encoding="utf-8")
    for name in ("docs.jsonl.gz", "plain.txt"):
        assert main(["train-tokenizer", "--corpus", str(tmp_path / name), "--vocab-size", "60", "--out",
                     str(tmp_path / name.split(".")[0]), "--no-progress"]) == 0
    assert ((tmp_path / "docs" / "vocab.txt").read_text(encoding="utf-8")
            == (tmp_path / "plain" / "vocab.txt").read_text(encoding="utf-8"))
    assert "{" not in (tmp_path / "docs" / "vocab.txt").read_text(encoding="utf-8").split()  # no JSON learnt
    capsys.readouterr()
    err = one_line_error(capsys, ["train-tokenizer", "--corpus", str(tmp_path / "docs.jsonl.gz"), "--text-field",
                                  "body", "--out", str(tmp_path / "x"), "--no-progress"])
    assert "docs.jsonl.gz, line 1: expected a JSON object with a 'body' field" in err


def test_vocab_size_messages_name_the_options(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("aaa aa\n", encoding="utf-8")
    base = ["train-tokenizer", "--corpus", str(tmp_path / "a.txt"), "--no-progress"]
    err = one_line_error(capsys, [*base, "--vocab-size", "5", "--out", str(tmp_path / "o")])
    assert "--vocab-size 5 leaves no room after the 5 special tokens" in err
    err = one_line_error(capsys, [*base, "--vocab-size", "6", "--out", str(tmp_path / "o")])
    assert ("--vocab-size 6 leaves room for 1 token after the 5 special tokens, but the corpus's alphabet needs 2: "
            "1 character," in err and "raise --vocab-size to at least 7, or set --limit-alphabet" in err)
    assert "vocab_size=" not in err and "limit_alphabet" not in err
    assert main([*base, "--vocab-size", "7", "--out", str(tmp_path / "o")]) == 0
    assert "trained a vocabulary of 7 tokens on 1 file;" in capsys.readouterr().out
    assert main([*base, "--vocab-size", "9", "--out", str(tmp_path / "o9")]) == 0
    assert ("trained a vocabulary of 8 tokens (fewer than --vocab-size 9: the corpus is small, no pair of pieces left "
            "that appears --min-frequency 2 times) on 1 file;") in capsys.readouterr().out


def test_tokenize_refuses_text_that_is_not_utf8(tmp_path, capsys, monkeypatch):
    out = tmp_path / "tok"
    assert main(["train-tokenizer", "--corpus", str(write_corpus(tmp_path)), "--vocab-size", "80", "--out", str(out),
                 "--no-progress"]) == 0
    capsys.readouterr()
    # As `printf 'caf\xe9 ok' | minibert tokenize ... -` under a C locale: stdin decodes with surrogateescape
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"caf\xe9 ok"), encoding="utf-8",
                                                      errors="surrogateescape"))
    err = one_line_error(capsys, ["tokenize", "--tokenizer", str(out), "-"])
    assert "<stdin>: not UTF-8 text: byte 0xe9 at byte offset 3" in err
    argv_text = os.fsdecode(b"caf\xe9 ok") if sys.getfilesystemencoding() == "utf-8" else "caf\udce9 ok"
    err = one_line_error(capsys, ["tokenize", "--tokenizer", str(out), argv_text])
    assert "argument 1: not UTF-8 text: byte 0xe9 at byte offset 3" in err
    err = one_line_error(capsys, ["tokenize", "--tokenizer", str(out), "ok", "--pair", "x\udcff"])
    assert "--pair: not UTF-8 text: byte 0xff at byte offset 1" in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("café ok".encode()), encoding="utf-8"))
    assert main(["tokenize", "--tokenizer", str(out), "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == WordPieceTokenizer.from_pretrained(out).encode(
        "café ok").tokens  # (read whole, not dropped)


def test_tokenize_table_aligns_wide_and_combining_characters(tmp_path, capsys):
    from minibert.commands.tokenize import display_width
    assert [display_width(t) for t in ("abc", "東京", "ｶﾀ", "Ａ", "e\u0301", "##\u0301", "")] == [3, 4, 2, 2, 1, 2, 0]
    folder = tmp_path / "wide"
    folder.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "東", "京", "は", "ｶﾀｶﾅ", "e\u0301", "x", "##\u0301"]
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False, "strip_accents": False}))
    assert main(["tokenize", "--tokenizer", str(folder), "東京は ｶﾀｶﾅ e\u0301 x\u0301"]) == 0
    piece, ids = capsys.readouterr().out.splitlines()[:2]
    assert piece.split()[1:] == ["[CLS]", "東", "京", "は", "ｶﾀｶﾅ", "e\u0301", "x", "##\u0301", "[SEP]"]

    def starts(line):  # the screen column where each cell starts
        return [display_width(line[:m.start()]) for m in re.finditer(r"\S+", line)]
    assert starts(piece) == starts(ids)
