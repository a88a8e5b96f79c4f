"""`minibert finetune --procs N`: the same fine-tuning on N processes, each with every N-th example of a batch.

With dropout off, 2 processes must compute what one does, up to float32 rounding of the summed gradients: the
same training and eval losses epoch by epoch and the same saved weights. Each rank scales its loss by its share
of the batch's loss terms; a tagger's loss is a mean over labelled tokens, which the ranks' shares hold in
unequal numbers, so weighting a tagger's ranks by examples instead changes the eval loss beyond the tolerance
(checked by hand when this test was written). Bad input is one line from the starting process, before any rank
starts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from finetune_helpers import make_examples, make_model_dir, write_rows
from heads_helpers import make_tiny_model_dir
from mpi_helpers import assert_ended_cleanly, ranks, requires_mpi, terminate_when
from minibert.cli import main
from minibert.finetune import synthetic

pytestmark = pytest.mark.usefixtures("leaves_no_shared_memory")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]


def finetune(argv, n, launcher="procs"):
    """`minibert finetune ARGV --json` in fresh processes: n of them by --procs n, or by mpiexec -n n.
    Returns (summary, stderr)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = ["-m", "minibert", "finetune", *map(str, argv), "--json", "--no-progress"]
    if launcher == "mpiexec":
        result = ranks(n, "mpiexec", *command, env=env)
    else:
        result = subprocess.run([sys.executable, *command, "--procs", str(n)], capture_output=True, text=True,
                                env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def assert_same_run(tmp_path, argv, launcher="procs"):
    """One process and two: the same losses, epoch by epoch, and the same saved weights (float32 rounding)."""
    one, _ = finetune([*argv, "--out", tmp_path / "one"], 1)
    two, log = finetune([*argv, "--out", tmp_path / "two"], 2, launcher)
    assert one["processes"] == 1 and two["processes"] == 2
    for a, b in zip(one["history"], two["history"], strict=True):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)
        assert b["eval_loss"] == pytest.approx(a["eval_loss"], rel=1e-5)
    assert two["best_epoch"] == one["best_epoch"]
    w1, w2 = load_file(tmp_path / "one" / "model.safetensors"), load_file(tmp_path / "two" / "model.safetensors")
    assert w1.keys() == w2.keys()
    for name in w1:
        np.testing.assert_allclose(w2[name], w1[name], rtol=0, atol=2e-5, err_msg=name)
    # Rank 0 alone logs: every epoch's line once, not once per process.
    assert sum(line.startswith("epoch 1:") for line in log.splitlines()) == 1
    return one, two


COMMON = ["--epochs", "2", "--batch-size", "16", "--lr", "3e-3", "--warmup-ratio", "0", "--dropout", "0"]


def test_a_classifier_on_two_processes_learns_what_one_process_learns(tmp_path):
    model = make_model_dir(tmp_path / "model")
    # 97 examples in batches of 16: an epoch's last batch has one example, and the second process none of it.
    train = write_rows(tmp_path / "train.csv", make_examples(97, seed=1))
    eval_ = write_rows(tmp_path / "eval.csv", make_examples(30, seed=2))
    one, two = assert_same_run(tmp_path, ["--model", model, "--train", train, "--eval", eval_, *COMMON])
    assert two["history"][-1]["train_accuracy"] == one["history"][-1]["train_accuracy"]  # summed over ranks
    assert (tmp_path / "two" / "metrics.json").exists() and (tmp_path / "two" / "config.json").exists()


def test_a_tagger_weights_each_rank_by_its_labelled_tokens(tmp_path):
    model = make_tiny_model_dir(tmp_path / "model")
    synthetic.write_conll(tmp_path / "train.conll", *synthetic.ner_sentences(64, seed=0, part="train"))
    synthetic.write_tagged_jsonl(tmp_path / "eval.jsonl", *synthetic.ner_sentences(20, seed=1, part="train"))
    assert_same_run(tmp_path, ["--task-type", "tokens", "--model", model, "--train", tmp_path / "train.conll",
                               "--eval", tmp_path / "eval.jsonl", *COMMON])


def test_a_qa_reader_on_two_processes(tmp_path):
    model = make_tiny_model_dir(tmp_path / "model")
    synthetic.write_squad(tmp_path / "train.json", synthetic.qa_paragraphs(24, seed=0, part="train"), "1.1")
    synthetic.write_squad(tmp_path / "eval.json", synthetic.qa_paragraphs(6, seed=1, part="train"), "1.1")
    assert_same_run(tmp_path, ["--task-type", "qa", "--model", model, "--train", tmp_path / "train.json",
                               "--eval", tmp_path / "eval.json", *COMMON])


@requires_mpi
def test_under_mpiexec_the_ranks_do_the_same(tmp_path):
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(64, seed=1))
    eval_ = write_rows(tmp_path / "eval.csv", make_examples(30, seed=2))
    assert_same_run(tmp_path, ["--model", model, "--train", train, "--eval", eval_, *COMMON], launcher="mpiexec")


def test_the_default_trains_on_two_processes_after_checking_everything(tmp_path, launches):
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(30, seed=1))
    args = ["finetune", "--model", str(model), "--train", train, "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit):
        main(args)
    assert launches == [([sys.executable, "-m", "minibert", *args], 2)]  # the same command, run by each rank


@pytest.mark.parametrize("extra, message", [
    (["--procs", "3"], r"--batch-size 32 \(the global batch\) must be divisible by --procs 3"),
    (["--procs", "2", "--baseline-only"], r"--procs 2: --baseline-only trains no BERT"),
    (["--procs", "2", "--train", "missing.csv"], r"missing\.csv"),
    (["--procs", "2", "--lr", "-1"], r"--lr must be positive"),
])
def test_bad_input_is_one_line_before_any_rank_starts(tmp_path, launches, capsys, monkeypatch, extra, message):
    import re
    monkeypatch.chdir(tmp_path)
    model = make_model_dir(tmp_path / "model")
    write_rows(tmp_path / "train.csv", make_examples(30, seed=1))
    assert main(["finetune", "--model", str(model), "--train", "train.csv", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("minibert finetune: error:") and re.search(message, err)
    assert launches == []


def test_a_tokenizer_that_does_not_fit_the_model_is_one_line_before_any_rank_starts(tmp_path, launches, capsys):
    model = make_model_dir(tmp_path / "model")
    with open(model / "vocab.txt", "a", encoding="utf-8") as f:
        f.write("extra\n")  # one token more than config.json's vocab_size
    (model / "tokenizer.json").unlink(missing_ok=True)  # (else the two files' differing vocabularies are refused first)
    train = write_rows(tmp_path / "train.csv", make_examples(30, seed=1))
    assert main(["finetune", "--model", str(model), "--train", train, "--procs", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the tokenizer has" in err and launches == []


def test_sigterm_ends_every_rank_as_ctrl_c_does(tmp_path):
    # A scheduler's time limit sends SIGTERM to every process of the job: each rank stops as on Ctrl-C, rank 0
    # says so once and removes the shared folder, the best epoch so far stays saved, and no process is left.
    model = make_model_dir(tmp_path / "model")
    train = write_rows(tmp_path / "train.csv", make_examples(97, seed=1))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "minibert", "finetune", "--model", model, "--train", train, "--out", out,
               "--epochs", "100000", "--batch-size", "16", "--no-progress", "--procs", "2"]
    job, _, err, shared = terminate_when(list(map(str, command)), (out / "model.safetensors").exists, env)
    assert err.strip().splitlines()[-1] == "minibert finetune: interrupted", err
    assert err.count("interrupted") == 1  # rank 0 alone says it
    assert_ended_cleanly(job, shared)
    assert load_file(out / "model.safetensors")  # the best epoch so far, whole
