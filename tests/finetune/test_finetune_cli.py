"""`minibert finetune` and `minibert predict` end to end on a tiny model, and their one-line errors."""

import json

import numpy as np
import pytest

from finetune_helpers import make_examples, make_model_dir, write_rows
from minibert.cli import main
from recompute_helpers import record_recomputed_layers


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Fine-tune a tiny random BERT on 'is the keyword good or bad?' (2 classes); returns (folder, stdout JSON)."""
    root = tmp_path_factory.mktemp("finetune")
    model = make_model_dir(root / "model")
    classes = ("positive", "negative")
    train = write_rows(root / "train.csv", make_examples(160, seed=0, classes=classes))
    ev = write_rows(root / "eval.jsonl", make_examples(40, seed=1, classes=classes))
    test = write_rows(root / "test.tsv", make_examples(40, seed=2, classes=classes))
    out = root / "out"
    capture = pytest.MonkeyPatch()
    import io
    import sys
    buffer = io.StringIO()
    capture.setattr(sys, "stdout", buffer)
    try:
        rc = main(["finetune", "--model", str(model), "--train", train, "--eval", ev, "--test", test,
                   "--epochs", "8", "--lr", "3e-3", "--batch-size", "16", "--warmup-ratio", "0", "--out", str(out),
                   "--json", "--no-progress"])
    finally:
        capture.undo()
    assert rc == 0
    return root, out, json.loads(buffer.getvalue())


def test_finetuning_learns_and_saves_everything(trained):
    root, out, summary = trained
    # A model that ignored its gradients would stay at 50%: the keyword is the whole signal.
    assert summary["eval"]["accuracy"] >= 0.9 and summary["test"]["accuracy"] >= 0.9
    assert summary["history"][-1]["train_loss"] < 0.5 * summary["history"][0]["train_loss"]
    assert summary["labels"] == ["negative", "positive"] and summary["reported_split"] == "test"
    assert len(summary["history"]) == 8 and 1 <= summary["best_epoch"] <= 8
    for name in ("config.json", "model.safetensors", "vocab.txt", "metrics.json"):
        assert (out / name).is_file(), name
    pytest.importorskip("matplotlib")
    assert (out / "confusion_matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "negative", "1": "positive"}
    assert config["label2id"] == {"negative": 0, "positive": 1}
    assert config["problem_type"] == "single_label_classification"
    assert json.loads((out / "metrics.json").read_text())["test"] == summary["test"]


def test_the_saved_best_epoch_is_what_was_reported(trained, capsys):
    root, out, summary = trained
    rc = main(["predict", "--model", str(out), "--input", str(root / "test.tsv"), "--label-column", "label",
               "--json", "--no-progress"])
    assert rc == 0
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    assert len(records) == 40
    accuracy = np.mean([r["label"] == r["true_label"] for r in records])
    assert accuracy == pytest.approx(summary["test"]["accuracy"])  # predict reloads exactly the reported model
    assert all(abs(sum(r["probabilities"].values()) - 1) < 1e-6 for r in records)
    assert "accuracy" in captured.err


def test_predict_texts_and_output_files(trained, capsys, tmp_path):
    _, out, _ = trained
    assert main(["predict", "--model", str(out), "the cat is good", "a bad dog sits"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["positive", "negative"]
    target = tmp_path / "pred.csv"
    assert main(["predict", "--model", str(out), "good tree", "--output", str(target)]) == 0
    header, row = target.read_text().splitlines()
    assert header == "text,label,score,prob_negative,prob_positive" and row.startswith("good tree,positive,")


def test_saved_model_loads_in_transformers_with_identical_logits(trained):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from minibert.finetune.loading import load_classifier
    from minibert.tokenizer import WordPieceTokenizer
    _, out, _ = trained
    ours = load_classifier(out)
    theirs = transformers.BertForSequenceClassification.from_pretrained(out, attn_implementation="eager").eval()
    assert theirs.config.id2label == {0: "negative", 1: "positive"}
    batch = WordPieceTokenizer.from_pretrained(out).encode_batch(["the good cat", "bad", "a small tree sits bad"])
    logits = ours.forward(batch["input_ids"], token_type_ids=batch["token_type_ids"],
                          attention_mask=batch["attention_mask"]).logits
    with torch.no_grad():
        ref = theirs(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits.numpy()
    np.testing.assert_allclose(logits, ref, rtol=1e-5, atol=1e-5)


def test_sentence_pairs_and_eval_split(tmp_path, capsys):
    model = make_model_dir(tmp_path / "model")
    rows = [{"premise": r["text"], "hypothesis": "the tree", "y": r["label"]} for r in make_examples(40)]
    train = write_rows(tmp_path / "pairs.jsonl", rows)
    rc = main(["finetune", "--model", str(model), "--train", train, "--text-column", "premise",
               "--text-pair-column", "hypothesis", "--label-column", "y", "--eval-split", "0.25", "--epochs", "1",
               "--batch-size", "8", "--dropout", "0.2", "--out", str(tmp_path / "out"), "--json", "--no-progress"])
    assert rc == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    # 30 examples, batch 8, 1 epoch: 4 steps, far too few, and the user is told what to change
    assert "note: only 4 optimizer steps (30 examples, --epochs 1, --batch-size 8)" in captured.err
    assert "a smaller --batch-size or more --epochs" in captured.err
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["hidden_dropout_prob"] == config["classifier_dropout"] == 0.2
    assert summary["num_train"] == 30 and summary["num_eval"] == 10 and summary["test"] is None
    assert summary["eval"]["num_examples"] == 10
    assert main(["predict", "--model", str(tmp_path / "out"), "--input", train, "--text-column", "premise",
                 "--text-pair-column", "hypothesis", "--output", str(tmp_path / "p.jsonl")]) == 0
    first = json.loads((tmp_path / "p.jsonl").read_text().splitlines()[0])
    assert first["text_pair"] == "the tree" and first["label"] in ("negative", "neutral", "positive")


def test_recompute_gives_the_same_fine_tuning(tmp_path, capsys, monkeypatch):
    """--recompute (activation recompute) changes memory and time, not one number: dropout on, 2 epochs."""
    recomputed = record_recomputed_layers(monkeypatch)
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(40, seed=3))
    results = []
    for extra in ([], ["--recompute"]):
        out = tmp_path / f"out{len(extra)}"
        assert main(["finetune", "--model", str(model), "--train", train, "--epochs", "2", "--batch-size", "8",
                     "--dropout", "0.2", "--out", str(out), "--json", "--no-progress", *extra]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert bool(recomputed) == bool(extra)  # the layers were recomputed with --recompute only
        results.append(([{k: v for k, v in h.items() if not k.startswith("elapsed")} for h in summary["history"]],
                        summary["eval"], (out / "model.safetensors").read_bytes()))
    assert results[0][0][-1]["train_loss"] != results[0][0][0]["train_loss"]  # it trained
    assert results[0] == results[1]


def test_baseline_is_reported_beside_bert(trained, tmp_path, capsys):
    pytest.importorskip("sklearn")
    root, _, _ = trained
    rc = main(["finetune", "--model", str(root / "model"), "--train", str(root / "train.csv"), "--eval",
               str(root / "eval.jsonl"), "--epochs", "1", "--baseline", "--out", str(tmp_path / "b"), "--json",
               "--no-progress"])
    assert rc == 0
    baseline = json.loads(capsys.readouterr().out)["baseline"]
    # TF-IDF sees the keyword directly: it must solve this task perfectly
    assert baseline["method"] == "tfidf+logistic_regression" and baseline["eval"]["accuracy"] == 1.0
    # --baseline-only needs no model at all
    rc = main(["finetune", "--model", "nowhere", "--train", str(root / "train.csv"), "--baseline-only",
               "--out", str(tmp_path / "only"), "--json"])
    assert rc == 0
    only = json.loads(capsys.readouterr().out)
    assert only["reported_split"] == "eval" and only["num_eval"] == 16 and only["baseline"]["eval"]["accuracy"] == 1.0
    assert (tmp_path / "only" / "baseline_metrics.json").is_file()


@pytest.mark.parametrize("change, message", [
    ({"--text-column": "review"}, "no column 'review' (--text-column); the file has columns: 'text', 'label'"),
    ({"--train": "empty.csv"}, "empty.csv: the file is empty"),
    ({"--train": "one_class.csv"}, "every example has the label 'positive'; a classifier needs at least two classes"),
    ({"--eval": "unseen.csv"}, "unseen.csv: label 'neutral' (3 examples) does not occur in the training data"),
    ({"--max-length": "64"}, "--max-length 64 is longer than the model's max_position_embeddings (32"),
    ({"--model": "nowhere"}, "--model nowhere: no such run or model folder"),
])
def test_bad_input_is_one_line_before_training(tmp_path, capsys, monkeypatch, change, message):
    monkeypatch.chdir(tmp_path)
    make_model_dir(tmp_path / "model")
    write_rows(tmp_path / "train.csv", make_examples(20, classes=("positive", "negative")))
    write_rows(tmp_path / "eval.csv", make_examples(6, classes=("positive", "negative")))
    write_rows(tmp_path / "one_class.csv", make_examples(6, classes=("positive",)))
    write_rows(tmp_path / "unseen.csv", make_examples(9))
    (tmp_path / "empty.csv").write_text("")
    args = {"--model": "model", "--train": "train.csv", "--eval": "eval.csv", "--text-column": "text",
            "--out": "out"}
    args.update(change)
    rc = main(["finetune"] + [x for kv in args.items() for x in kv] + ["--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("minibert finetune: error: ") and message in err
    assert not (tmp_path / "out" / "model.safetensors").exists()  # stopped before any training
