"""`minibert embed` and `minibert similarity` on a tiny checkpoint: JSON and .npy outputs agree with the Python
API row for row, and bad input is one line with exit code 2."""

import json

import numpy as np
import pytest

from minibert.cli import main
from minibert.embeddings import SentenceEncoder
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "the cat sat on mat a dog ran fast ##s".split() + \
    list("bcdefghijklmnopqrstuvwxyz")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_checkpoint(tmp_path_factory.mktemp("tiny-embed"), VOCAB, hidden_size=16,
                                num_attention_heads=2, intermediate_size=24)


@pytest.fixture(scope="module")
def encoder(model_dir):
    return SentenceEncoder.from_pretrained(model_dir)


def test_embed_prints_json(model_dir, encoder, capsys):
    assert main(["embed", "--model", str(model_dir), "the cat sat", "a dog ran fast"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["dimension"] == 16 and result["normalized"] is True
    assert [e["text"] for e in result["embeddings"]] == ["the cat sat", "a dog ran fast"]
    got = np.array([e["embedding"] for e in result["embeddings"]])
    np.testing.assert_allclose(got, encoder.encode(["the cat sat", "a dog ran fast"]), atol=1e-6)


def test_embed_file_to_npy_one_row_per_line(model_dir, encoder, tmp_path, capsys):
    lines = ["the cat sat on the mat", "", "dogs", "a dog ran fast on the mat the cat sat", "cats"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "emb.npy"
    assert main(["embed", "--model", str(model_dir), "--input", str(tmp_path / "in.txt"), "--out", str(out),
                 "--batch-size", "2", "--no-normalize"]) == 0
    assert "wrote 5 embeddings of dimension 16" in capsys.readouterr().err
    saved = np.load(out, allow_pickle=False)
    np.testing.assert_allclose(saved, encoder.encode(lines, normalize=False), atol=1e-6)
    assert main(["embed", "--model", str(model_dir), "--input", str(tmp_path / "in.txt"), "--out", str(out),
                 "--batch-size", "2", "--no-normalize", "--workers", "2"]) == 0  # 3 batches, 2 at a time
    np.testing.assert_array_equal(np.load(out, allow_pickle=False), saved)
    assert not np.allclose(np.linalg.norm(saved, axis=1), 1.0)  # --no-normalize kept the raw means
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.npy", "in.txt"]  # no temp file left



def test_embed_tokenizes_each_text_once(model_dir, encoder, tmp_path, capsys, monkeypatch):
    """The note about long texts counts the tokens the embedding already needed: no second tokenization."""
    from minibert.tokenizer import WordPieceTokenizer
    calls = []
    encode = WordPieceTokenizer.encode
    monkeypatch.setattr(WordPieceTokenizer, "encode", lambda self, text, *a, **k: calls.append(text) or
                        encode(self, text, *a, **k))
    texts = ["the cat sat", " ".join(["the cat"] * 20), "a dog ran fast"]
    out = tmp_path / "emb.npy"
    assert main(["embed", "--model", str(model_dir), "--max-length", "8", *texts, "--out", str(out)]) == 0
    assert sorted(calls) == sorted(texts)
    assert "note: 1 of 3 texts is longer than the model reads (8 tokens, --max-length; the longest has 42)" \
        in capsys.readouterr().err
    monkeypatch.undo()
    short = SentenceEncoder.from_pretrained(model_dir, max_length=8)
    np.testing.assert_allclose(np.load(out, allow_pickle=False), short.encode(texts), atol=1e-6)


def test_similarity(model_dir, encoder, capsys, monkeypatch):
    from minibert.tokenizer import WordPieceTokenizer
    calls = []
    encode = WordPieceTokenizer.encode
    monkeypatch.setattr(WordPieceTokenizer, "encode", lambda self, text, *a, **k: calls.append(text) or
                        encode(self, text, *a, **k))
    long = " ".join(["the cat"] * 20)
    assert main(["similarity", "--model", str(model_dir), "--max-length", "8", "the cat sat", long]) == 0
    assert calls == ["the cat sat", long]  # once each: for the note and for the model
    captured = capsys.readouterr()
    assert "note: text B has 42 tokens, more than the model reads (8, --max-length)" in captured.err
    monkeypatch.undo()
    short = SentenceEncoder.from_pretrained(model_dir, max_length=8)
    assert float(captured.out) == pytest.approx(short.similarity("the cat sat", long), abs=5e-5)
    assert main(["similarity", "--model", str(model_dir), "the cat sat", "the cat sat on the mat"]) == 0
    printed = float(capsys.readouterr().out)
    assert printed == pytest.approx(encoder.similarity("the cat sat", "the cat sat on the mat"), abs=5e-5)


@pytest.mark.parametrize("args, message", [
    (["embed", "--model", "{dir}", "--out", "x.txt", "hi"], "expected a file name ending in .npy"),
    (["embed", "--model", "{dir}"], "nothing to embed"),
    (["embed", "--model", "{dir}", "--input", "{dir}/missing.txt"], "no such file"),
    (["embed", "--model", "{dir}", "--input", "{dir}/config.json", "hi"], "not both"),
    (["embed", "--model", "{dir}", "--batch-size", "0", "hi"], "--batch-size must be at least 1"),
    (["embed", "--model", "{dir}", "--workers", "0", "hi"], "--workers must be at least 1"),
    (["predict", "--model", "{dir}", "--workers", "0", "hi"], "--workers must be at least 1"),
    (["embed", "--model", "{dir}/nowhere", "hi"], "--model {dir}/nowhere: no such run or model folder"),
    (["similarity", "--model", "{dir}/nowhere", "a", "b"], "--model {dir}/nowhere: no such run or model folder"),
])
def test_bad_input_is_one_line(model_dir, capsys, args, message):
    assert main([a.replace("{dir}", str(model_dir)) for a in args]) == 2
    err = capsys.readouterr().err
    message = message.replace("{dir}", str(model_dir))
    assert err.count("\n") == 1 and err.startswith(f"minibert {args[0]}: error:") and message in err, err


def test_missing_vocab_is_named(model_dir, tmp_path, capsys):
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).write_bytes((model_dir / name).read_bytes())
    assert main(["embed", "--model", str(tmp_path), "hi"]) == 2
    assert "vocab.txt: missing" in capsys.readouterr().err
