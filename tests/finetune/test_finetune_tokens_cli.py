"""`minibert finetune --task-type tokens` and `minibert predict` on a word tagger, end to end on a tiny model,
and the one-line errors of bad input."""

import json
import re

import pytest

from heads_helpers import FIXTURES, make_tiny_model_dir, run_cli_json
from minibert.cli import main
from minibert.finetune import synthetic
from recompute_helpers import record_recomputed_layers


def run_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0, out.err
    return out.out


@pytest.fixture(scope="module")
def tagged(tmp_path_factory):
    """A tiny random BERT fine-tuned on the generated NER set. Eval has new sentences from the training names:
    a randomly initialised model has no way to know a name it never saw (MiniLM does; docs/finetuning-ner-qa.md)."""
    root = tmp_path_factory.mktemp("ner")
    model = make_tiny_model_dir(root / "model")
    synthetic.write_conll(root / "train.conll", *synthetic.ner_sentences(240, seed=0, part="train"))
    synthetic.write_tagged_jsonl(root / "eval.jsonl", *synthetic.ner_sentences(60, seed=1, part="train"))
    out = root / "out"
    return root, out, run_cli_json([
        "finetune", "--task-type", "tokens", "--model", str(model), "--train", str(root / "train.conll"), "--eval",
        str(root / "eval.jsonl"), "--epochs", "6", "--lr", "3e-3", "--batch-size", "16", "--warmup-ratio", "0",
        "--out", str(out)])


def test_tagger_learns(tagged):
    root, out, summary = tagged
    # Entities span several words and three types: an untrained head scores near 0 here.
    assert summary["eval"]["f1"] >= 0.8 and summary["eval"]["token_accuracy"] >= 0.85
    assert summary["history"][-1]["train_loss"] < 0.5 * summary["history"][0]["train_loss"]
    assert summary["labels"] == ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    assert set(summary["eval"]["per_type"]) == {"LOC", "ORG", "PER"}
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"] and config["id2label"]["5"] == "B-PER"
    assert json.loads((out / "metrics.json").read_text())["best_epoch"] == summary["best_epoch"]


def test_predict_words_and_spans(tagged, capsys):
    root, out, _ = tagged
    text = "Flights from Oslo to Perth were cancelled ."
    plain = run_json(capsys, ["predict", "--model", str(out), text]).strip()
    assert plain == "Flights from Oslo/B-LOC to Perth/B-LOC were cancelled ."
    text = "Shares of Stark Industries rose after Anna spoke."  # the final "." is a word of its own
    record = json.loads(run_json(capsys, ["predict", "--model", str(out), "--json", text]))
    for entity in record["entities"]:  # spans index the text as written
        assert text[entity["start"]:entity["end"]] == entity["text"] and 0 < entity["score"] <= 1
    assert [(e["type"], e["text"]) for e in record["entities"]] == [("ORG", "Stark Industries"), ("PER", "Anna")]


def test_predict_refuses_what_a_tagger_cannot_do(tagged, capsys):
    root, out, _ = tagged
    assert main(["predict", "--model", str(out), "--question", "Who?", "--context", "Anna left."]) == 2
    assert "--question/--context are for question answering models" in capsys.readouterr().err
    assert main(["predict", "--model", str(out), "Anna left.", "--output", str(root / "tags.csv")]) == 2
    assert "a tagger writes JSONL" in capsys.readouterr().err
    assert main(["predict", "--model", str(out), "Anna left.", "--label-column", "tags"]) == 2
    assert "are for text classifiers" in capsys.readouterr().err


def test_hand_written_fixtures_train_for_one_epoch(tmp_path, capsys, monkeypatch):
    recomputed = record_recomputed_layers(monkeypatch)
    model = make_tiny_model_dir(tmp_path / "model")
    out = tmp_path / "out"
    summary = json.loads(run_json(capsys, [
        "finetune", "--task-type", "tokens", "--model", str(model), "--train", str(FIXTURES / "ner_small.conll"),
        "--eval", str(FIXTURES / "ner_small.conll"), "--epochs", "1", "--out", str(out), "--json", "--no-progress",
        "--recompute"]))
    assert recomputed  # --recompute reached the tagger's encoder
    assert summary["labels"] == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    # EU, German, British; Peter Blackburn; France, Britain, Fischler
    assert summary["eval"]["num_sentences"] == 3 and summary["eval"]["support"] == 7


@pytest.mark.parametrize("extra, message", [
    (["--eval", str(FIXTURES / "ner_small.jsonl")], r"ner_small.jsonl: sentence 1 has tag 'B-LOC', whose type is "
                                                     r"not in the training data .* \(entity types there: PER\)"),
    (["--task", "drug-reviews"], "text classification task"),
    (["--baseline-only"], "--baseline-only applies to text classification only"),
    (["--select-metric", "accuracy"], "--select-metric accuracy does not apply to --task-type tokens"),
])
def test_bad_input_is_one_line_before_training(tmp_path, capsys, extra, message):
    train = tmp_path / "train.conll"
    train.write_text("Anna B-PER\nSchmidt I-PER\nleft O\n\nPeter B-PER\n", encoding="utf-8")
    argv = ["finetune", "--task-type", "tokens", "--model", str(tmp_path / "nothing-here"), "--train", str(train),
            "--out", str(tmp_path / "out")] + extra
    if "--eval" not in extra:
        argv += ["--eval", str(train)]
    if "--task" in extra:
        argv.remove("--train")
        argv.remove(str(train))
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("minibert finetune: error: ")
    assert re.search(message, err), err
