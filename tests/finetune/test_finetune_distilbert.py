"""A DistilBERT folder works wherever a BERT does: embed/similarity (mean-pooled like transformers'
DistilBertModel), finetune + predict (a DistilBertForSequenceClassification that transformers loads with the
same logits), attention and fill-mask."""

import json

import numpy as np
import pytest

from finetune_helpers import SPECIALS, FILLERS, KEYWORDS, make_examples, write_rows
from minibert.cli import main
from minibert.distilbert_config import DistilBertConfig
from minibert.models.distilbert import DistilBertForMaskedLM
from minibert.tokenizer import WordPieceTokenizer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def distil_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("distil")
    tokenizer = WordPieceTokenizer(SPECIALS + FILLERS + list(KEYWORDS) + ["!", "unseen"])
    config = DistilBertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    model = DistilBertForMaskedLM(config, seed=0)
    rng = np.random.default_rng(0)
    for p in model.params.values():
        p += rng.normal(0, 0.05, p.shape).astype(p.dtype)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_embed_and_similarity_match_transformers_mean_pooling(distil_dir, capsys):
    texts = ["the cat sits on the tree", "a big dog"]
    assert main(["embed", "--model", str(distil_dir), *texts]) == 0
    got = np.array([e["embedding"] for e in json.loads(capsys.readouterr().out)["embeddings"]])
    tok = WordPieceTokenizer.from_pretrained(distil_dir)
    hf = transformers.DistilBertModel.from_pretrained(distil_dir).eval()
    for text, row in zip(texts, got):
        ids = torch.tensor([tok.encode(text).input_ids])
        with torch.no_grad():
            ref = hf(input_ids=ids).last_hidden_state[0].mean(0).numpy()
        np.testing.assert_allclose(row, ref / np.linalg.norm(ref), atol=2e-5)
    assert main(["similarity", "--model", str(distil_dir), *texts]) == 0
    assert f"{float(got[0] @ got[1]):.4f}" in capsys.readouterr().out


def test_finetune_then_predict_and_transformers_agree(distil_dir, tmp_path, capsys):
    train = write_rows(tmp_path / "train.csv", make_examples(120, seed=0, classes=("positive", "negative")))
    test = write_rows(tmp_path / "test.csv", make_examples(40, seed=2, classes=("positive", "negative")))
    out = tmp_path / "out"
    assert main(["finetune", "--model", str(distil_dir), "--train", train, "--test", test, "--epochs", "6", "--lr",
                 "3e-3", "--batch-size", "16", "--warmup-ratio", "0", "--out", str(out), "--json",
                 "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["test"]["accuracy"] > 0.8, report["test"]  # the keyword decides: learnable in a few epochs
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["DistilBertForSequenceClassification"] and config["model_type"] == "distilbert"

    assert main(["predict", "--model", str(out), "the good cat", "--json"]) == 0
    printed = capsys.readouterr().out
    hf = transformers.DistilBertForSequenceClassification.from_pretrained(out).eval()
    ids = torch.tensor([WordPieceTokenizer.from_pretrained(out).encode("the good cat").input_ids])
    with torch.no_grad():
        label = hf.config.id2label[int(hf(input_ids=ids).logits.argmax())]
    assert label in printed


def test_attention_and_fill_mask(distil_dir, tmp_path, capsys):
    page = tmp_path / "attention.html"
    assert main(["attention", "the cat sits", "--model", str(distil_dir), "--html", str(page)]) == 0
    assert page.stat().st_size > 0
    assert main(["fill-mask", "--model", str(distil_dir), "the [MASK] sits"]) == 0
    assert capsys.readouterr().out.strip()
