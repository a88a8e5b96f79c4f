"""`minibert finetune`: what is wrong with a run's options is one line before any model loads (and, with --procs,
before the second process starts), options that do not apply to the run are refused rather than ignored, the
log says which dropout the run uses, CoNLL-2003's own file names are read, and QA scores keep one unit."""

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from finetune_helpers import make_examples, make_model_dir, write_rows
from heads_helpers import FIXTURES, make_tiny_model_dir
from minibert.cli import main
from minibert.finetune import synthetic


def one_line_error(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("minibert finetune: error: "), err
    return err


@pytest.fixture
def no_model_loads(monkeypatch):
    """Loading a model for fine-tuning fails the test: the checks must come first."""
    import minibert.finetune.loading as loading

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the checks")
    monkeypatch.setattr(loading, "load_for_finetuning", refuse)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Tiny models and data of each kind: a classifier's CSV, NER and SQuAD files."""
    root = tmp_path_factory.mktemp("options")
    make_model_dir(root / "model")  # positions 32
    make_tiny_model_dir(root / "tagger_model")  # positions 64, a vocabulary of the generated data
    write_rows(root / "train.csv", make_examples(40))
    synthetic.write_conll(root / "ner.conll", *synthetic.ner_sentences(40, seed=0, part="train"))
    synthetic.write_squad(root / "qa.json", synthetic.qa_paragraphs(10, seed=0, part="train"), "1.1")
    return root


# ---------------------------------------------------------------------------------------------------- --out
def deny_writing_in(monkeypatch, folder: Path):
    """os.access says no write permission in `folder` (the tests run as root, where a mode of 0o500 would not
    stop anything): as on a read-only file system."""
    real = os.access

    def access(path, mode, *args, **kwargs):
        if Path(path) == folder and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)
    monkeypatch.setattr(os, "access", access)


@pytest.mark.parametrize("extra", [["--procs", "1"], ["--procs", "1", "--task-type", "tokens"], ["--baseline-only"]])
def test_an_unwritable_out_is_one_line_before_any_model_loads(data, tmp_path, capsys, monkeypatch, no_model_loads,
                                                              extra):
    locked = tmp_path / "locked"
    locked.mkdir()
    deny_writing_in(monkeypatch, locked)
    train = data / ("ner.conll" if "tokens" in extra else "train.csv")
    err = one_line_error(capsys, ["finetune", "--model", str(data / "model"), "--train", str(train), "--out",
                                  str(locked / "run"), "--no-progress", *extra])
    assert f"--out {locked / 'run'}" in err and f"no permission to write in {locked}" in err
    assert not (locked / "run").exists()


def test_an_unwritable_out_is_one_line_before_the_second_process_starts(data, tmp_path, capsys, monkeypatch,
                                                                        launches):
    locked = tmp_path / "locked"
    locked.mkdir()
    deny_writing_in(monkeypatch, locked)
    err = one_line_error(capsys, ["finetune", "--model", str(data / "model"), "--train", str(data / "train.csv"),
                                  "--out", str(locked / "run")])
    assert f"no permission to write in {locked}" in err and launches == []


def test_baseline_only_refuses_a_folder_with_another_runs_model(data, tmp_path, capsys):
    pytest.importorskip("sklearn")
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"another run's model")
    argv = ["finetune", "--train", str(data / "train.csv"), "--baseline-only", "--out", str(out)]
    err = one_line_error(capsys, argv)
    assert f"--out {out}: already holds a model" in err and "--overwrite" in err
    assert not (out / "baseline_metrics.json").exists()
    assert main(argv + ["--overwrite"]) == 0  # asked for: beside the model
    assert (out / "baseline_metrics.json").exists() and (out / "model.safetensors").exists()


# ---------------------------------------------------------------------------------------------------- data files
def test_conll_2003s_own_file_names_are_read_as_conll(data, tmp_path, capsys):
    # The command of `minibert finetune --help` and docs/finetuning.md, with CoNLL-2003's file names.
    text = (data / "ner.conll").read_text(encoding="utf-8")
    for name in ("eng.train", "eng.testa", "eng.testb"):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "dev.data").write_text(text, encoding="utf-8")  # an unusual name is CoNLL too
    out = tmp_path / "ner"
    assert main(["finetune", "--task-type", "tokens", "--model", str(data / "tagger_model"), "--train",
                 str(tmp_path / "eng.train"), "--eval", str(tmp_path / "eng.testa"), "--test",
                 str(tmp_path / "eng.testb"), "--epochs", "1", "--out", str(out), "--json", "--no-progress",
                 "--procs", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["num_train"] == summary["num_eval"] == summary["num_test"] == 40
    from minibert.finetune.ner_data import read_tagged
    assert read_tagged(tmp_path / "dev.data").words == read_tagged(tmp_path / "eng.testb").words


# ---------------------------------------------------------------------------------------------------- dropout
def test_the_log_says_which_dropout_the_run_uses_and_where_it_came_from(data, tmp_path, capsys):
    def pretrained(folder, hidden_size):  # dropout 0, as `minibert pretrain` writes
        make_model_dir(folder, hidden_size=hidden_size)
        config = json.loads((folder / "config.json").read_text())
        config["hidden_dropout_prob"] = config["attention_probs_dropout_prob"] = 0.0
        (folder / "config.json").write_text(json.dumps(config))
        return ["finetune", "--model", str(folder), "--train", str(data / "train.csv"), "--epochs", "1",
                "--no-progress", "--procs", "1"]

    def dropout_lines():
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("dropout ")]

    # a published-size model (hidden size above 256) keeps the checkpoint's dropout, and the log says so
    argv = pretrained(tmp_path / "published", hidden_size=288)
    assert main([*argv, "--out", str(tmp_path / "kept")]) == 0
    lines = dropout_lines()
    assert len(lines) == 1 and lines[0].startswith("dropout 0.0 ") and "checkpoint's config.json" in lines[0]
    assert "--dropout 0.1" in lines[0]  # what BERT fine-tunes with, since 0 is rarely what is meant
    saved = json.loads((tmp_path / "kept" / "config.json").read_text())
    assert saved["hidden_dropout_prob"] == 0.0

    # a small model gets the recipe's 0.1, saved with the model as it was trained
    argv = pretrained(tmp_path / "small", hidden_size=32)
    assert main([*argv, "--out", str(tmp_path / "recipe")]) == 0
    assert dropout_lines() == ["dropout 0.1 (the recipe)"]
    saved = json.loads((tmp_path / "recipe" / "config.json").read_text())
    assert saved["hidden_dropout_prob"] == saved["attention_probs_dropout_prob"] == 0.1

    assert main([*argv, "--dropout", "0.2", "--out", str(tmp_path / "given")]) == 0
    assert dropout_lines() == ["dropout 0.2 (--dropout)"]


# ---------------------------------------------------------------------------------------------------- windows
def write_squad_with_question(path, question):
    context = "anna was born in oslo ."
    data = {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "long", "question": question, "answers": [{"text": "oslo", "answer_start": context.index("oslo")}]}]}]}]}
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize("extra, message", [
    (["--doc-stride", "100"], r"--doc-stride 100 leaves the windows no room to advance: .* at most 60 context "
                              r"tokens, .* give --doc-stride 59 or less"),
    (["--eval", "{tmp}/long.json"], r"{tmp}/long.json: question long: the question has \d+ tokens, which leaves 0 of "
                                    r"the 64-token window"),
    (["--test", "{tmp}/long.json"], r"{tmp}/long.json: question long: the question has \d+ tokens"),
    (["--max-length", "1"], r"--max-length 1 leaves no room for \[CLS\] question \[SEP\] context \[SEP\]"),
])
def test_qa_window_problems_are_one_line_before_the_second_process_starts(data, tmp_path, capsys, launches, extra,
                                                                          message):
    write_squad_with_question(tmp_path / "long.json", "where was anna born ? " * 40)
    err = one_line_error(capsys, ["finetune", "--task-type", "qa", "--model", str(data / "tagger_model"), "--train",
                                  str(data / "qa.json"), "--out", str(tmp_path / "out"),
                                  *[e.format(tmp=tmp_path) for e in extra]])
    assert re.search(message.format(tmp=re.escape(str(tmp_path))), err), err
    assert launches == []


@pytest.mark.parametrize("task_type, train, minimum", [("sequence", "train.csv", 3), ("tokens", "ner.conll", 3),
                                                       ("qa", "qa.json", 5)])
def test_a_max_length_without_room_for_the_data_is_refused_before_the_ranks(data, tmp_path, capsys, launches,
                                                                            task_type, train, minimum):
    for too_short in (1, minimum - 1):
        err = one_line_error(capsys, ["finetune", "--task-type", task_type, "--model", str(data / "tagger_model"),
                                      "--train", str(data / train), "--max-length", str(too_short), "--out",
                                      str(tmp_path / "out")])
        assert f"--max-length {too_short} leaves no room" in err and f"give --max-length {minimum} or more" in err
    assert launches == []


def test_a_tagger_refuses_training_data_where_no_word_gets_a_label(data, tmp_path, capsys):
    # "anna.lee.smith" is five pieces (punctuation splits a word): with --max-length 4 no first word fits, and a
    # word after a cut one never gets a token, so not one token would be labelled, and the loss would read 0.
    (tmp_path / "long.conll").write_text("anna.lee.smith B-PER\nleft O\n\nboris.ivanov.perth B-PER\nstayed O\n",
                                         encoding="utf-8")
    argv = ["finetune", "--task-type", "tokens", "--model", str(data / "tagger_model"), "--max-length", "4",
            "--epochs", "1", "--no-progress", "--procs", "1", "--out", str(tmp_path / "out")]
    long = str(tmp_path / "long.conll")
    err = one_line_error(capsys, [*argv, "--train", long, "--eval", long])
    assert "long.conll: no word fits in --max-length 4 tokens" in err and "nothing to learn from" in err
    err = one_line_error(capsys, [*argv, "--train", str(data / "ner.conll"), "--eval", long])
    assert "long.conll: no word fits in --max-length 4 tokens" in err and "nothing to score" in err
    assert not (tmp_path / "out").exists()


def test_an_empty_mean_loss_is_not_reported_as_zero():
    from minibert.config import BertConfig
    from minibert.finetune.tagging import EncodedSentences, predict_word_tags
    from minibert.models.token_classification import BertForTokenClassification

    model = BertForTokenClassification(BertConfig.preset("tiny", vocab_size=20, max_position_embeddings=16),
                                       num_labels=3)
    model.set_labels(["O", "B-X", "I-X"])
    ids = np.array([2, 7, 3])  # [CLS] word [SEP], the word's label ignored: no labelled word at all
    data = EncodedSentences([(ids, np.zeros(3, dtype=np.int64))], [np.full(3, -100)], [np.array([-1])], 1)
    _, _, loss = predict_word_tags(model, data, pad_id=0)
    assert np.isnan(loss)


def test_the_tagger_notes_say_what_a_cut_word_means_for_each_split(data, tmp_path, capsys):
    # Sentences of 20 words in 16 tokens: words are cut in training and in eval alike.
    words = "anna went from oslo to perth and boris went from lima to oslo with anna and boris to perth now".split()
    (tmp_path / "long.conll").write_text("".join(f"{w} {'B-PER' if w in ('anna', 'boris') else 'O'}\n" for w in words)
                                         + "\n", encoding="utf-8")
    assert main(["finetune", "--task-type", "tokens", "--model", str(data / "tagger_model"), "--train",
                 str(tmp_path / "long.conll"), "--eval", str(tmp_path / "long.conll"), "--max-length", "16",
                 "--epochs", "1", "--no-progress", "--procs", "1", "--out", str(tmp_path / "out")]) == 0
    notes = {line.split()[2]: line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")
             and "words lie beyond --max-length" in line}
    assert set(notes) == {"train", "eval"}
    assert "no label" in notes["train"]
    # eval words are never trained on; what a cut costs there is a prediction of 'O' in the scores
    assert "training" not in notes["eval"] and "predicted 'O'" in notes["eval"]


# ---------------------------------------------------------------------------------------------------- options
@pytest.mark.parametrize("extra, message", [
    ([], "give either --train FILE or --task NAME (and not both)"),
    (["--task", "wiki-topics", "--train", "{tmp}/train.csv"], "give either --train FILE or --task NAME (and not both)"),
    (["--task-type", "tokens", "--task", "wiki-topics"],
     "--task wiki-topics is a text classification task; it does not go with --task-type tokens (drop --task-type, "
     "or give --train FILE)"),
    (["--task-type", "qa", "--task", "wiki-topics", "--text-column", "x"],  # (the --task, before its options)
     "--task wiki-topics is a text classification task; it does not go with --task-type qa"),
    (["--task-type", "qa"], "--task-type qa needs --train FILE"),
    (["--task", "drug-reviews", "--eval-split", "0.3"], "--task drug-reviews brings its own eval split"),
    (["--task", "wiki-topics", "--text-column", "foo"], "--task wiki-topics brings its own eval and test splits and "
                                                        "columns; drop --text-column"),
    (["--task", "wiki-topics", "--label-column", "y"], "drop --label-column"),
    (["--train", "{tmp}/train.csv", "--eval", "{tmp}/train.csv", "--eval-split", "0.3"],
     "--eval-split 0.3 holds out part of --train, but --eval"),
    (["--train", "{tmp}/train.csv", "--doc-stride", "10"], "--doc-stride applies to question answering"),
    (["--train", "{tmp}/train.csv", "--max-answer-length", "10"], "--max-answer-length applies to question answering"),
    (["--task-type", "tokens", "--train", "{tmp}/ner.conll", "--text-column", "x"],
     "--text-column applies to text classification only, not to --task-type tokens"),
    (["--task-type", "tokens", "--train", "{tmp}/ner.conll", "--label-column", "x"],
     "--label-column applies to text classification only"),
    (["--task-type", "tokens", "--train", "{tmp}/ner.conll", "--doc-stride", "10"],
     "--doc-stride applies to question answering"),
    (["--task-type", "qa", "--train", "{tmp}/qa.json", "--text-column", "x"],
     "--text-column applies to text classification only, not to --task-type qa"),
    (["--task-type", "qa", "--train", "{tmp}/qa.json", "--eval", "{tmp}/qa.json", "--eval-split", "0.2"],
     "--eval-split 0.2 holds out part of --train, but --eval"),
    (["--train", "{tmp}/train.csv", "--eval-split", "1.5"], "--eval-split must be between 0 and 1"),
    (["--task-type", "tokens", "--train", "{tmp}/ner.conll", "--eval-split", "0"], "--eval-split must be between 0"),
    (["--train", "{tmp}/train.csv", "--max-train-examples", "-5"], "--max-train-examples must be at least 1, got -5"),
    (["--task-type", "tokens", "--train", "{tmp}/ner.conll", "--max-train-examples", "-5"],
     "--max-train-examples must be at least 1, got -5"),
    (["--task-type", "qa", "--train", "{tmp}/qa.json", "--max-train-examples", "0"],
     "--max-train-examples must be at least 1, got 0"),
])
def test_options_that_do_not_apply_are_refused_not_ignored(data, capsys, no_model_loads, extra, message):
    err = one_line_error(capsys, ["finetune", "--model", str(data / "model"), "--out", str(data / "never"),
                                  "--procs", "1", *[e.format(tmp=data) for e in extra]])
    assert message in err
    assert not (data / "never").exists()


def test_the_squad_version_of_a_test_file_must_be_the_runs(data, tmp_path, capsys, no_model_loads):
    v1, v2 = str(FIXTURES / "squad_v1_small.json"), str(FIXTURES / "squad_v2_small.json")
    err = one_line_error(capsys, ["finetune", "--task-type", "qa", "--model", str(data / "tagger_model"), "--train", v1,
                                  "--eval", v1, "--test", v2, "--out", str(tmp_path / "out"), "--procs", "1"])
    assert "--test " in err and "squad_v2_small.json is SQuAD v2.0" in err and "but --train/--eval are v1.1" in err
    err = one_line_error(capsys, ["finetune", "--task-type", "qa", "--model", str(data / "tagger_model"), "--train", v1,
                                  "--test", v2, "--out", str(tmp_path / "out"), "--procs", "1"])
    assert "but --train is v1.1" in err


# ---------------------------------------------------------------------------------------------------- QA units
def test_qa_scores_are_printed_in_one_unit(data, tmp_path, capsys):
    out = tmp_path / "qa"
    assert main(["finetune", "--task-type", "qa", "--model", str(data / "tagger_model"), "--train",
                 str(data / "qa.json"), "--eval", str(FIXTURES / "squad_v1_small.json"), "--epochs", "2",
                 "--lr", "3e-3", "--no-progress", "--procs", "1", "--out", str(out)]) == 0
    log = capsys.readouterr().out
    scores = r"exact match (\S+), F1 (\S+?)(?: |$|\()"
    epochs = {int(m.group(1)): (m.group(2), m.group(3)) for m in
              re.finditer(r"^epoch (\d+): .*?" + scores, log, re.MULTILINE)}
    best = re.search(r"^best epoch (\d+), eval split .*?: " + scores, log, re.MULTILINE)
    assert len(epochs) == 2 and best, log
    # Without --test the final line reports the best epoch's eval scores: the same numbers, written alike.
    assert epochs[int(best.group(1))] == (best.group(2), best.group(3))
    metrics = json.loads((out / "metrics.json").read_text())["eval"]  # fractions, as for every task type
    assert float(best.group(2)) == pytest.approx(100 * metrics["exact_match"], abs=0.05)
    assert float(best.group(3)) == pytest.approx(100 * metrics["f1"], abs=0.05)


def test_an_option_of_another_kind_of_run_given_as_0_is_refused_too(data, capsys, no_model_loads):
    err = one_line_error(capsys, ["finetune", "--model", str(data / "model"), "--train", str(data / "train.csv"),
                                  "--doc-stride", "0", "--procs", "1"])
    assert "--doc-stride applies to question answering" in err


# ---------------------------------------------------------------------------------------------------- counts
def test_the_log_counts_one_step_and_one_example_in_the_singular(data, tmp_path, capsys):
    write_rows(tmp_path / "one.csv", make_examples(1, seed=3))
    assert main(["finetune", "--model", str(data / "model"), "--train", str(data / "train.csv"), "--test",
                 str(tmp_path / "one.csv"), "--epochs", "1", "--batch-size", "64", "--no-progress", "--procs", "1",
                 "--out", str(tmp_path / "sequence")]) == 0
    log = capsys.readouterr().out
    assert "note: only 1 optimizer step (" in log and "best epoch 1, test split (1 example):" in log, log
    synthetic.write_conll(tmp_path / "one.conll", *synthetic.ner_sentences(1, seed=1, part="test"))
    assert main(["finetune", "--task-type", "tokens", "--model", str(data / "tagger_model"), "--train",
                 str(data / "ner.conll"), "--eval", str(tmp_path / "one.conll"), "--epochs", "1", "--batch-size",
                 "64", "--no-progress", "--procs", "1", "--out", str(tmp_path / "tokens")]) == 0
    log = capsys.readouterr().out
    assert "training: 1 optimizer step\n" in log and "best epoch 1, eval split (1 sentence)," in log, log
