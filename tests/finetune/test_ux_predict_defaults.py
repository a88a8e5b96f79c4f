"""`minibert predict` reads texts as the model was fine-tuned on them: its default --max-length (and a QA model's
--doc-stride and --max-answer-length) are the fine-tuning's, as `minibert finetune` records them in the saved
folder; texts read otherwise than in training (pairs or single texts) get a note; options that do not apply to
the model are one line, not ignored."""

import json

import pytest

from finetune_helpers import make_examples, make_model_dir, write_rows
from heads_helpers import make_tiny_model_dir
from minibert.cli import main
from minibert.finetune import synthetic

QUESTION = "Who is the head of Initech?"
CONTEXT = "Globex was founded in Lima. The head of Initech is Anna Schmidt. Boris works for Hooli in Perth."


def finetune(argv):
    """`minibert finetune ARGV` in one process, quietly; returns its --json summary."""
    import io
    import sys
    with pytest.MonkeyPatch.context() as mp:
        buffer = io.StringIO()
        mp.setattr(sys, "stdout", buffer)
        assert main(["finetune", *map(str, argv), "--json", "--no-progress", "--procs", "1"]) == 0
    return json.loads(buffer.getvalue())


def predict(capsys, *argv):
    """(stdout, stderr) of a successful `minibert predict ARGV`."""
    code = main(["predict", *map(str, argv)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out, out.err


def without_record(folder, tmp_path):
    """A copy of a fine-tuned folder as it was saved before the fine-tuning's settings were recorded."""
    import shutil
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    config = json.loads((old / "config.json").read_text())
    del config["finetuning"]
    (old / "config.json").write_text(json.dumps(config))
    return old


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """A tiny classifier fine-tuned on 8 tokens per text (positions: 32), most texts longer than that and cut there
    (--long-texts truncate; a model of so few positions would otherwise read them as windows)."""
    root = tmp_path_factory.mktemp("classifier")
    model = make_model_dir(root / "model")
    train = write_rows(root / "train.csv", make_examples(90, seed=0))
    test = write_rows(root / "test.csv", make_examples(30, seed=2))
    summary = finetune(["--model", model, "--train", train, "--test", test, "--max-length", 8, "--epochs", 3,
                        "--lr", 3e-3, "--batch-size", 16, "--warmup-ratio", 0, "--long-texts", "truncate",
                        "--out", root / "out"])
    return root, root / "out", summary


def records(stdout):
    return [json.loads(line) for line in stdout.splitlines()]


def test_predict_defaults_to_the_fine_tuned_length_and_reproduces_the_test_score(classifier, capsys, tmp_path):
    root, out, summary = classifier
    command = ["--model", out, "--input", root / "test.csv", "--label-column", "label", "--json", "--no-progress"]
    default, _ = predict(capsys, *command)
    explicit, _ = predict(capsys, *command, "--max-length", 8)
    assert records(default) == records(explicit)
    accuracy = sum(r["label"] == r["true_label"] for r in records(default)) / len(records(default))
    assert accuracy == pytest.approx(summary["test"]["accuracy"])
    # A folder saved before the record keeps the old default: 128, here the model's 32 positions.
    old = without_record(out, tmp_path)
    command[1] = old
    assert records(predict(capsys, *command)[0]) == records(predict(capsys, *command, "--max-length", 32)[0])
    assert records(predict(capsys, *command)[0]) != records(default)  # (the texts are cut elsewhere)


def test_finetuning_a_fine_tuned_model_again_defaults_to_its_length(classifier, capsys, tmp_path):
    root, out, _ = classifier
    argv = ["finetune", "--train", root / "train.csv", "--epochs", 1, "--no-progress", "--procs", 1]
    assert main([*map(str, argv), "--model", str(out), "--out", str(tmp_path / "again")]) == 0
    assert json.loads((tmp_path / "again" / "config.json").read_text())["finetuning"]["max_length"] == 8
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("max length: ")]
    assert lines == [f"max length: 8 tokens per example (the length {out} was fine-tuned with, recorded in its "
                     f"config.json; --max-length N to change it)"]
    # A model without the record keeps the default: 128, here the model's 32 positions.
    old = without_record(out, tmp_path)
    assert main([*map(str, argv), "--model", str(old), "--out", str(tmp_path / "from-old")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("max length: ")]
    assert lines == [f"max length: 32 tokens per example (the model's max_position_embeddings, {old / 'config.json'})"]
    assert main([*map(str, argv), "--model", str(out), "--max-length", "12", "--out", str(tmp_path / "given")]) == 0
    assert "max length: 12 tokens per example (--max-length)" in capsys.readouterr().out


def test_the_fine_tuned_length_is_what_transformers_tokenizers_truncate_at(classifier):
    _, out, _ = classifier
    assert json.loads((out / "tokenizer_config.json").read_text())["model_max_length"] == 8
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    assert tokenizer.model_max_length == 8
    assert len(tokenizer("the cat sits on the big green tree under the house", truncation=True)["input_ids"]) == 8


def test_a_tagger_predicts_at_its_fine_tuned_length(tmp_path, capsys):
    model = make_tiny_model_dir(tmp_path / "model")  # positions 64
    synthetic.write_conll(tmp_path / "train.conll", *synthetic.ner_sentences(32, seed=0, part="train"))
    finetune(["--task-type", "tokens", "--model", model, "--train", tmp_path / "train.conll", "--max-length", 8,
              "--epochs", 1, "--out", tmp_path / "out"])
    text = "Anna moved to Oslo and Boris moved to Lima and Rosa moved to Perth."  # 16 words and a full stop
    _, err = predict(capsys, "--model", tmp_path / "out", text)
    assert "longer than --max-length 8 tokens" in err
    _, err = predict(capsys, "--model", without_record(tmp_path / "out", tmp_path), text)
    assert "longer than" not in err  # the old default: 512, here the model's 64 positions


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """A tiny QA model fine-tuned on windows of 24 tokens, stride 4, answers of at most 5 tokens."""
    root = tmp_path_factory.mktemp("reader")
    model = make_tiny_model_dir(root / "model")
    synthetic.write_squad(root / "train.json", synthetic.qa_paragraphs(12, seed=0, part="train"), "1.1")
    finetune(["--task-type", "qa", "--model", model, "--train", root / "train.json", "--max-length", 24,
              "--doc-stride", 4, "--max-answer-length", 5, "--epochs", 1, "--out", root / "out"])
    return root / "out"


def test_a_reader_predicts_with_its_fine_tuned_windows_and_answer_length(reader, capsys, tmp_path):
    record = json.loads((reader / "config.json").read_text())["finetuning"]
    assert record == {"task_type": "qa", "max_length": 24, "doc_stride": 4, "max_answer_length": 5,
                      "squad_version": "1.1"}
    command = ["--model", reader, "--question", QUESTION, "--context", CONTEXT, "--json", "--top-k", 3]
    default, _ = predict(capsys, *command)
    explicit, _ = predict(capsys, *command, "--max-length", 24, "--doc-stride", 4, "--max-answer-length", 5)
    assert json.loads(default) == json.loads(explicit)
    old, _ = predict(capsys, "--model", without_record(reader, tmp_path), *command[2:])
    assert json.loads(old) != json.loads(default)  # other windows (64 tokens, stride 21) and answer lengths


def test_the_no_answer_note_is_for_models_that_learned_to_say_it(reader, capsys, tmp_path, monkeypatch):
    import minibert.finetune.qa_predict as qa_predict

    def null_wins(model, examples, windows, *args, **kwargs):  # the [CLS] score above the best span's
        answer = {"text": "Anna Schmidt", "start": 51, "end": 63, "score": 1.0}
        return [{"text": "", "answers": [answer], "null_score": 5.0}], 0.0
    monkeypatch.setattr(qa_predict, "answer_questions", null_wins)
    command = ["--question", QUESTION, "--context", CONTEXT]
    out, err = predict(capsys, "--model", reader, *command)  # fine-tuned on SQuAD v1.1 data: its answer stands
    assert out.startswith("Anna Schmidt\t") and "no-answer" not in err
    _, err = predict(capsys, "--model", without_record(reader, tmp_path), *command)  # may be a SQuAD 2.0 model
    assert "note: the no-answer score" in err


def one_line_error(capsys, argv) -> str:
    assert main(["predict", *map(str, argv)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("minibert predict: error: "), err
    return err


@pytest.mark.parametrize("context, message", [("", "--context: the context is empty"),
                                              ("\u200b\u200b", "--context: the context has no token")])
def test_a_context_without_text_is_refused(reader, capsys, context, message):
    assert message in one_line_error(capsys, ["--model", reader, "--question", QUESTION, "--context", context])


def test_options_that_do_not_apply_to_the_model_are_one_line(classifier, reader, capsys):
    _, out, _ = classifier
    for option in (["--top-k", 3], ["--doc-stride", 4], ["--max-answer-length", 5]):
        err = one_line_error(capsys, ["--model", out, "a good cat", *option])
        assert f"{option[0]}: for question answering models" in err
    assert "--text-column names the column of --input" in one_line_error(
        capsys, ["--model", out, "a good cat", "--text-column", "review"])
    assert "a question answering model reads no --input file" in one_line_error(
        capsys, ["--model", reader, "--question", QUESTION, "--context", CONTEXT, "--label-column", "label"])


def test_texts_read_otherwise_than_in_training_get_a_note(classifier, tmp_path, capsys):
    root, single, _ = classifier
    rows = [{"premise": r["text"], "hypothesis": "the tree", "label": r["label"]} for r in make_examples(30)]
    pairs = write_rows(tmp_path / "pairs.jsonl", rows)
    finetune(["--model", root / "model", "--train", pairs, "--text-column", "premise", "--text-pair-column",
              "hypothesis", "--epochs", 1, "--batch-size", 8, "--out", tmp_path / "pair_model"])
    _, err = predict(capsys, "--model", tmp_path / "pair_model", "a good cat")
    assert "was fine-tuned on text pairs" in err and "--text-pair-column" in err
    _, err = predict(capsys, "--model", tmp_path / "pair_model", "--input", pairs, "--text-column", "premise",
                     "--text-pair-column", "hypothesis", "--no-progress")
    assert "note:" not in err
    _, err = predict(capsys, "--model", single, "--input", pairs, "--text-column", "premise", "--text-pair-column",
                     "hypothesis", "--no-progress")
    assert "was fine-tuned on single texts" in err


@pytest.mark.parametrize("record, task_type, expected", [
    ({"task_type": "sequence", "max_length": 64, "text_pairs": False}, "sequence", 64),
    ({"task_type": "sequence", "max_length": 64, "text_pairs": False}, "qa", 384),  # a classifier's: no QA window
    ({"task_type": "qa", "max_length": 200, "doc_stride": 64}, "tokens", 128),
    ({"max_length": 200, "doc_stride": 64, "max_answer_length": 30}, "qa", 200),  # written before task_type was kept
    ({"max_length": 48, "text_pairs": True}, "sequence", 48),
    ({"max_length": 48}, "tokens", 48),
])
def test_the_recorded_length_counts_only_for_the_task_type_it_was_fine_tuned_for(tmp_path, record, task_type,
                                                                                   expected):
    from minibert.commands.finetune_setup import default_max_length
    from minibert.config import BertConfig
    config = BertConfig.preset("tiny", max_position_embeddings=512)
    config.extra["finetuning"] = record
    assert default_max_length(config, tmp_path, task_type)[0] == expected


@pytest.mark.parametrize("record, task_type, expected", [
    ({"task_type": "sequence", "max_length": 64, "text_pairs": False}, "sequence", 64),
    ({"task_type": "sequence", "max_length": 64, "text_pairs": False}, "qa", 384),  # a classifier's: no QA window
    ({"task_type": "sequence", "max_length": 64, "text_pairs": False}, "tokens", 512),
    ({"max_length": 200, "doc_stride": 64, "max_answer_length": 30}, "qa", 200),  # written before task_type was kept
    ({"max_length": 48}, "tokens", 48),
    ({"task_type": "sequence", "max_length": "64", "text_pairs": False}, "sequence", 128),  # (hand-edited: no length)
    ({"task_type": "sequence", "max_length": -3, "text_pairs": False}, "sequence", 128),
])
def test_predict_takes_the_recorded_length_by_finetunes_rule(record, task_type, expected):
    """predict's default --max-length is the fine-tuning's by the rule a further `minibert finetune` follows (the
    test above): the record of the same task type, a positive integer; else the predictor's own default."""
    from argparse import Namespace

    from minibert.commands.predict import checked_max_length
    from minibert.config import BertConfig
    config = BertConfig.preset("tiny", max_position_embeddings=512)
    config.extra["finetuning"] = record
    default = {"sequence": 128, "tokens": 512, "qa": 384}[task_type]
    assert checked_max_length(Namespace(max_length=None), config, default, minimum=3, task_type=task_type) == expected


def test_a_hand_edited_record_is_no_crash(classifier, capsys, tmp_path):
    """A record whose max_length is no length (edited by hand, or by another tool) leaves predict's default."""
    _, out, _ = classifier
    edited = without_record(out, tmp_path)
    config = json.loads((edited / "config.json").read_text())
    config["finetuning"] = {"task_type": "sequence", "max_length": "8", "text_pairs": False}
    (edited / "config.json").write_text(json.dumps(config))
    command = ["--model", edited, "a good cat sat on the big green tree", "--json"]
    assert records(predict(capsys, *command)[0]) == records(predict(capsys, *command, "--max-length", 32)[0])
