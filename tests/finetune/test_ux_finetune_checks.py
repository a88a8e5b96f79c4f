"""`minibert finetune`: bad input is one line naming the option or file, before training; --overwrite leaves no
report of the previous run; the baseline says what it fits; an interrupted run says where its best model is."""

import json

import pytest

from finetune_helpers import make_examples, make_model_dir, write_rows
from minibert.cli import main


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(60))
    (tmp_path / "file.txt").write_text("a file\n")
    return tmp_path, ["finetune", "--model", str(model), "--train", train, "--epochs", "1", "--no-progress",
                      "--procs", "1"]


def one_error(capsys, code, message):
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def write_inputs(tmp):
    (tmp / "binary.conll").write_bytes(b"word B-X\n\xff\xfe\x00 O\n")
    (tmp / "list.json").write_text('[{"title": "x"}]')
    (tmp / "half.jsonl").write_text("".join(json.dumps({"text": "a good cat", "label": label}) + "\n"
                                            for label in (0, 1, 0.5, 1)))


@pytest.mark.parametrize("extra,message", [
    (["--out", "{tmp}/file.txt/sub"], "--out {tmp}/file.txt/sub: {tmp}/file.txt is a file"),
    (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    (["--max-train-examples", "2"], "--max-train-examples 2 is fewer than the 3 classes"),
    (["--train", "{tmp}/binary.conll", "--task-type", "tokens"], "{tmp}/binary.conll: not UTF-8 text"),
    (["--train", "{tmp}/list.json", "--task-type", "qa"],
     "{tmp}/list.json: the top level is a list; expected a SQuAD file: an object whose 'data' is the list"),
    (["--train", "{tmp}/half.jsonl"], "{tmp}/half.jsonl: example 3: label 0.5 (column 'label'); expected a string or "
                                      "an integer"),
])
def test_bad_input_names_the_option_or_file(files, capsys, extra, message):
    tmp, command = files
    write_inputs(tmp)
    code = main([*command, "--out", str(tmp / "o"), *[e.format(tmp=tmp) for e in extra]])
    one_error(capsys, code, message.format(tmp=tmp))
    assert not (tmp / "o").exists()


def test_overwrite_leaves_no_report_of_the_previous_run(files, capsys, monkeypatch):
    tmp, command = files
    out = tmp / "out"
    assert main([*command, "--out", str(out)]) == 0
    (out / "baseline_metrics.json").write_text("{}")  # an earlier --baseline-only run's
    import minibert.finetune.plots as plots
    monkeypatch.setattr(plots, "save_confusion_matrix", lambda *a, **k: None)  # as without matplotlib
    assert main([*command, "--out", str(out), "--overwrite"]) == 0
    assert not (out / "confusion_matrix.png").exists() and not (out / "baseline_metrics.json").exists()
    assert (out / "metrics.json").exists()


def test_baseline_says_what_it_fits_before_each_fit(files, capsys):
    pytest.importorskip("sklearn")
    tmp, command = files
    assert main([*command, "--out", str(tmp / "b"), "--baseline-only"]) == 0
    out = capsys.readouterr().out
    assert "TF-IDF baseline: word and bigram features of 54 training texts" in out
    assert out.index("logistic regression with C=1 (1 of 5)") < out.index("C=10000 (5 of 5)") < out.index("chosen")


def test_an_interrupted_run_says_where_its_best_model_is(files, capsys, monkeypatch):
    import minibert.finetune.train as train
    tmp, command = files
    real_step, calls = train.train_step, []

    def interrupted_in_epoch_2(*args, **kwargs):  # 54 examples / batch 32: 2 steps an epoch
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_step(*args, **kwargs)

    monkeypatch.setattr(train, "train_step", interrupted_in_epoch_2)
    out = tmp / "out"
    assert main([*command, "--epochs", "3", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"the best model so far (epoch 1) is saved in {out}/; no metrics.json, as the run did not finish" in err
    assert (out / "model.safetensors").exists() and not (out / "metrics.json").exists()
