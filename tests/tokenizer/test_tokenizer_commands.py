"""`minibert train-tokenizer` and `minibert tokenize`, run through the real command line entry point."""

from __future__ import annotations

import io
import json

from minibert.cli import main
from minibert.tokenizer import WordPieceTokenizer

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
    monkeypatch.setattr("sys.stdin", io.StringIO("The fox"))
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
    assert WordPieceTokenizer.from_pretrained(out).vocab_size > 6 and not (out / "tokenizer.json").exists()


def test_a_file_that_is_no_vocabulary_is_named_in_the_error(tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("hello world\nthe cat sat\n", encoding="utf-8")
    assert main(["tokenize", "--tokenizer", str(text), "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(text) in err and "no unknown token '[UNK]'" in err
