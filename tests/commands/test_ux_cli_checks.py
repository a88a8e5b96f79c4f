"""One-line refusals of the inference and picture commands, before any model loads: an output path that is a
folder or the input file, an input file that is a folder or not UTF-8, out-of-range numbers; and fill-mask never
lists special tokens."""

import json

import pytest

from minibert.cli import main
from minibert.io.atomic import atomic_write_text
from minibert.models import BertForPreTraining
from minibert.models.classification import BertForSequenceClassification
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "the cat sat on mat a dog ran fast ##s".split()


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("ux")
    return (make_tiny_checkpoint(root / "mlm", VOCAB, cls=BertForPreTraining),
            make_tiny_checkpoint(root / "classifier", VOCAB, cls=BertForSequenceClassification))


def one_line_error(capsys, argv, command):
    """Run argv: exit 2 with one line `minibert COMMAND: error: ...`; that line."""
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"minibert {command}: error: "), captured.err
    return captured.err


def never_loaded(monkeypatch):
    """Make loading any model weights fail the test: the refusals must come before."""
    from minibert.io import checkpoint

    def fail(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad input was refused")
    monkeypatch.setattr(checkpoint.TensorSource, "__init__", fail)


@pytest.mark.parametrize("argv, option", [
    (["predict", "--model", "{classifier}", "--output", "{folder}", "a cat"], "--output"),
    (["embed", "--model", "{mlm}", "--out", "{folder}", "a cat"], "--out"),
    (["attention", "--model", "{mlm}", "--out", "{folder}", "a cat"], "--out"),
    (["attention", "--model", "{mlm}", "--html", "{folder}", "a cat"], "--html"),
    (["plot", "{run}", "--out", "{folder}"], "--out"),
    (["embed-plot", "--model", "{mlm}", "--out", "{folder}", "--words", "cat", "dog", "mat"], "--out"),
])
def test_an_output_path_that_is_a_folder_is_refused_before_the_work(models, tmp_path, capsys, monkeypatch, argv,
                                                                     option):
    suffix = {"predict": ".csv", "embed": ".npy", "plot": ".png", "embed-plot": ".png"}.get(argv[0], "")
    folder = tmp_path / f"out{'.html' if option == '--html' else '.png' if argv[0] == 'attention' else suffix}"
    folder.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text('{"step": 1, "split": "train", "loss": 2.0}\n')
    values = {"{classifier}": str(models[1]), "{mlm}": str(models[0]), "{folder}": str(folder),
              "{run}": str(tmp_path / "run")}
    never_loaded(monkeypatch)
    err = one_line_error(capsys, [values.get(a, a) for a in argv], argv[0])
    assert f"{option} {folder}: is a folder; expected a file name" in err


def test_predict_refuses_to_overwrite_its_input(models, tmp_path, capsys, monkeypatch):
    data = tmp_path / "in.csv"
    data.write_text("text,label\na cat,LABEL_0\n", encoding="utf-8")
    never_loaded(monkeypatch)
    err = one_line_error(capsys, ["predict", "--model", str(models[1]), "--input", str(data), "--output",
                                  str(tmp_path / "." / "in.csv")], "predict")
    assert "is the --input file" in err
    assert data.read_text(encoding="utf-8") == "text,label\na cat,LABEL_0\n"


def test_output_checks_and_the_safety_net(tmp_path, capsys, monkeypatch):
    from minibert.io.atomic import check_output_file
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file; expected a folder"):
        check_output_file(tmp_path / "file" / "out.csv", "--output")
    check_output_file(tmp_path / "new" / "deeper" / "out.csv", "--output")  # missing folders are created later
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(IsADirectoryError, match="is a folder"):  # before the writer's work, not at the rename
        atomic_write_text(tmp_path / "d.txt", "text")
    # A command that forgot to check its path: still one line, not a traceback.
    from minibert.commands import plot
    monkeypatch.setattr(plot, "run", lambda args: atomic_write_text(tmp_path / "d.txt", "text"))
    assert "d.txt: is a folder" in one_line_error(capsys, ["plot", "x"], "plot")


@pytest.mark.parametrize("content, message", [
    (None, "--words-file {path}: no such file"),
    ("folder", "--words-file {path}: is a folder; expected a file"),
    (b"\xff\xfecat", "--words-file {path}: not UTF-8 text (invalid start byte at byte 0)"),
])
def test_embed_plot_words_file_errors_name_the_option(models, tmp_path, capsys, content, message):
    path = tmp_path / "words.txt"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    err = one_line_error(capsys, ["embed-plot", "--model", str(models[0]), "--words-file", str(path), "--out",
                                  str(tmp_path / "e.png")], "embed-plot")
    assert message.format(path=path) in err


@pytest.mark.parametrize("argv, message", [
    (["embed", "--decimals", "-1", "a cat"], "--decimals must be at least 0, got -1"),
    (["embed", "--max-length", "100000", "a cat"],
     "--max-length 100000 must be between 2 and the model's max_position_embeddings (16)"),
    (["similarity", "--max-length", "17", "a cat", "a dog"],
     "--max-length 17 must be between 2 and the model's max_position_embeddings (16)"),
    (["predict", "--max-length", "17", "a cat"],
     "--max-length 17 must be between 3 and the model's max_position_embeddings (16)"),
])
def test_bad_numbers_are_refused_before_the_model_loads(models, capsys, monkeypatch, argv, message):
    never_loaded(monkeypatch)
    model = models[1] if argv[0] == "predict" else models[0]
    err = one_line_error(capsys, [argv[0], "--model", str(model)] + argv[1:], argv[0])
    assert message in err


def test_fill_mask_never_lists_special_tokens(models, capsys):
    assert main(["fill-mask", "--model", str(models[0]), "--top-k", "100000", "--json", "the [MASK] sat"]) == 0
    guesses = json.loads(capsys.readouterr().out)[0]
    assert len(guesses) == len(VOCAB) - 5  # every token but [PAD], [UNK], [CLS], [SEP], [MASK]
    assert all(g["score"] >= 0 and not g["token_str"].startswith("[") for g in guesses)
    assert main(["fill-mask", "--model", str(models[0]), "--top-k", "100000", "the [MASK] sat"]) == 0
    assert "-100.00%" not in capsys.readouterr().out


def test_a_missing_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2 and "usage: minibert" in capsys.readouterr().err
