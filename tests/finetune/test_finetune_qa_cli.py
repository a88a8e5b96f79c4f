"""`minibert finetune --task-type qa` and `minibert predict --question --context`, end to end on a tiny model,
and the one-line errors of bad input."""

import json
import re

import pytest

from heads_helpers import FIXTURES, make_tiny_model_dir, run_cli_json
from minibert.cli import main
from minibert.finetune import synthetic
from recompute_helpers import record_recomputed_layers


@pytest.fixture(scope="module")
def reader(tmp_path_factory):  # ~4 s of CPU
    """A tiny random BERT fine-tuned on generated SQuAD 1.1 paragraphs (new paragraphs at eval)."""
    root = tmp_path_factory.mktemp("qa")
    model = make_tiny_model_dir(root / "model")
    synthetic.write_squad(root / "train.json", synthetic.qa_paragraphs(300, seed=0, part="train"), "1.1")
    synthetic.write_squad(root / "eval.json", synthetic.qa_paragraphs(30, seed=1, part="train"), "1.1")
    out = root / "out"
    return root, out, run_cli_json([
        "finetune", "--task-type", "qa", "--model", str(model), "--train", str(root / "train.json"), "--eval",
        str(root / "eval.json"), "--epochs", "8", "--lr", "3e-3", "--batch-size", "16", "--warmup-ratio", "0",
        "--out", str(out)])


def test_reader_learns_and_saves(reader):
    root, out, summary = reader
    # Picking a random valid span scores near 0 exact match: the answer is 1-2 of ~30 context tokens (this
    # setting reached 0.70 when written; a one-token shift in the answer mapping would score ~0).
    assert summary["eval"]["exact_match"] >= 0.4 and summary["eval"]["f1"] >= 0.4
    assert summary["history"][-1]["train_loss"] < 0.5 * summary["history"][0]["train_loss"]
    assert summary["squad_version"] == "1.1" and summary["num_train"] == 900
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForQuestionAnswering"]


def test_predict_answers_with_a_span_of_the_context(reader, capsys):
    root, out, _ = reader
    context = "Globex was founded in Lima. The head of Initech is Anna Schmidt. Boris works for Hooli."
    assert main(["predict", "--model", str(out), "--question", "Who is the head of Initech?", "--context", context,
                 "--json", "--top-k", "3"]) == 0
    result = json.loads(capsys.readouterr().out)
    answers = result["answers"]
    assert 1 <= len(answers) <= 3 and answers[0]["score"] >= answers[-1]["score"]
    for a in answers:
        assert context[a["start"]:a["end"]] == a["text"]
    assert result["no_answer_scores_higher"] == (result["null_score"] > answers[0]["score"])
    assert main(["predict", "--model", str(out), "--question", "Where was Globex founded?", "--context",
                 context]) == 0
    text, score = capsys.readouterr().out.splitlines()[0].split("\t")
    assert text in context and float(score) > result["null_score"] - 100


def test_fixtures_of_both_versions_run(tmp_path, capsys, monkeypatch):
    recomputed = record_recomputed_layers(monkeypatch)
    model = make_tiny_model_dir(tmp_path / "model")
    for name, extra in (("squad_v1_small", []), ("squad_v2_small", ["--recompute"])):
        rc = main(["finetune", "--task-type", "qa", "--model", str(model), "--train", str(FIXTURES / f"{name}.json"),
                   "--eval", str(FIXTURES / f"{name}.json"), "--epochs", "1", "--out", str(tmp_path / name),
                   "--json", "--no-progress", *extra])
        assert bool(recomputed) == bool(extra)  # --recompute reached the reader's encoder
        summary = json.loads(capsys.readouterr().out)
        assert rc == 0 and summary["eval"]["num_questions"] == {"squad_v1_small": 5, "squad_v2_small": 3}[name]
    assert summary["squad_version"] == "2.0" and summary["eval"]["no_answer_count"] == 1


@pytest.mark.parametrize("problem, message", [
    ("answer", r"bad.json: question q1: answer_start 0 does not point at the answer 'Oslo'"),
    ("question", r"question q1: the question has \d+ tokens, which leaves \d+ of the 64-token window"),
    ("stride", r"--doc-stride must be >= 0, got -1"),
])
def test_bad_input_is_one_line_before_training(tmp_path, capsys, problem, message):
    model = make_tiny_model_dir(tmp_path / "model")
    context = "anna was born in oslo ."
    question = "where was anna born ?" * (12 if problem == "question" else 1)
    start = 0 if problem == "answer" else context.index("oslo")
    text = "Oslo" if problem == "answer" else "oslo"
    data = {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "q1", "question": question, "answers": [{"text": text, "answer_start": start}]}]}]}]}
    (tmp_path / "bad.json").write_text(json.dumps(data), encoding="utf-8")
    argv = ["finetune", "--task-type", "qa", "--model", str(model), "--train", str(tmp_path / "bad.json"),
            "--eval", str(tmp_path / "bad.json"), "--out", str(tmp_path / "out"), "--no-progress"]
    if problem == "stride":
        argv += ["--doc-stride", "-1"]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("minibert finetune: error: ")
    assert re.search(message, err), err
    assert not (tmp_path / "out" / "model.safetensors").exists()
