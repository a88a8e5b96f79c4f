"""`minibert pretrain` and `distill` check what they can before the data is prepared, in the command's own
process (one line, said once, under --procs 2 too), and a run stopped before its first checkpoint can be started
again under the same --name."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from minibert import BertForMaskedLM
from minibert.cli import main
from minibert.config import BertConfig
from minibert.distill.settings import DistillSettings
from minibert.tokenizer import WordPieceTokenizer
from minibert.training.settings import PretrainSettings
from pretrain_helpers import synthetic_documents, write_corpus

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--config", "tiny", "--vocab-size", "120", "--seq-len", "32", "--batch-size", "8", "--steps", "2", "--quiet",
        "--no-plot", "--no-examples", "--procs", "1"]


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "file.txt").write_text("not a folder\n")
    (tmp_path / "bad.json").write_text("{bad")
    factorised = BertConfig.preset("tiny", vocab_size=120, embedding_size=8).to_dict()  # model_type bert
    (tmp_path / "factorised.json").write_text(json.dumps(factorised))
    return tmp_path


def one_error(capsys, code, message):
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize("extra,message", [
    (["--runs-dir", "{tmp}/file.txt"], "runs_dir (--runs-dir) {tmp}/file.txt: {tmp}/file.txt is a file"),
    (["--runs-dir", "{tmp}/file.txt/sub"], "runs_dir (--runs-dir) {tmp}/file.txt/sub: {tmp}/file.txt is a file"),
    (["--config", "{tmp}/bad.json"], "bad.json: not valid JSON"),
    (["--config", "{tmp}/factorised.json"], "model_type 'bert' has no projection E -> H: only ALBERT's"),
    (["--tokenizer", "{tmp}/nowhere"], "tokenizer (--tokenizer) {tmp}/nowhere"),
    (["--weight-decay", "-1"], "weight_decay (--weight-decay) must be >= 0"),
    (["--clip", "-1"], "clip (--clip) must be >= 0"),
])
def test_bad_input_is_refused_before_the_data_is_read(tmp, capsys, extra, message):
    # The corpus does not exist: an error about it would mean the data preparation started first.
    extra = [e.format(tmp=tmp) for e in extra]
    code = main(["pretrain", "--corpus", str(tmp / "missing.txt"), *FAST, *extra])
    one_error(capsys, code, message.format(tmp=tmp))


def test_a_checkpointless_run_is_replaced_and_a_run_with_a_checkpoint_is_kept(tmp, capsys):
    corpus = write_corpus(tmp / "c.txt", synthetic_documents(40))
    run = tmp / "runs" / "s1"
    (run / "checkpoints").mkdir(parents=True)  # what Ctrl-C before the first checkpoint leaves
    (run / "settings.json").write_text(json.dumps({"name": "s1"}))
    (run / "metrics.jsonl").write_text('{"step": 0, "split": "eval"}\n')
    err = one_error(capsys, main(["pretrain", "--resume", str(run), "--quiet"]), "nothing to resume")
    assert f"start it again with --runs-dir {tmp / 'runs'} --name s1" in err
    assert main(["pretrain", "--corpus", str(corpus), *FAST, "--runs-dir", str(tmp / "runs"), "--name", "s1"]) == 0
    assert "held a run stopped before its first checkpoint; this run replaces it" in capsys.readouterr().out
    assert (run / "checkpoints" / "latest").exists()
    # Now it has a checkpoint: refused before the corpus is read, pointing at --resume.
    code = main(["pretrain", "--corpus", str(tmp / "missing.txt"), *FAST, "--runs-dir", str(tmp / "runs"),
                 "--name", "s1"])
    one_error(capsys, code, f"resume it with --resume {run} (in Python: resume=\"{run}\" in the settings)")


def test_a_checkpointless_run_that_is_still_going_is_not_replaced(tmp):
    # A run started a moment ago has no checkpoint yet either: a second process starting the same --name must not
    # empty its folder. The live run holds run/.lock (here another process stands in for it).
    from minibert.training.run_dir import create_run_dir
    run = tmp / "runs" / "live"
    (run / "checkpoints").mkdir(parents=True)
    (run / "settings.json").write_text(json.dumps({"name": "live"}))
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(run / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FileExistsError, match="is being trained by another process"):
            create_run_dir(tmp / "runs", "live")
        assert (run / "settings.json").exists()  # untouched
    finally:
        holder.kill()
        holder.wait()
    assert create_run_dir(tmp / "runs", "live") == run  # the lock went with its process
    assert not (run / "settings.json").exists()


def test_resuming_a_run_another_process_trains_is_refused_before_the_data(tmp, capsys):
    corpus = write_corpus(tmp / "c.txt", synthetic_documents(40))
    assert main(["pretrain", "--corpus", str(corpus), *FAST, "--runs-dir", str(tmp / "runs"), "--name", "r"]) == 0
    run = tmp / "runs" / "r"
    corpus.unlink()  # preparing the data would now fail: the lock must be found before that
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(run / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        capsys.readouterr()
        one_error(capsys, main(["pretrain", "--resume", str(run), "--procs", "1"]),
                  "is being trained by another process")
    finally:
        holder.kill()
        holder.wait()
    from minibert.training.run_dir import _held
    assert _held == {}  # the check holds nothing afterwards


def test_a_lock_let_go_within_moments_is_waited_for(tmp):
    # A job just killed (mpiexec after MPI_Abort) may hold its run's lock a moment after its launcher returned:
    # resuming it at once must not be refused as "being trained by another process".
    from minibert.training import run_dir
    run = tmp / "runs" / "r"
    run.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(1.0)",
                               str(run / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        run_dir.hold_run_dir(run)  # waits for the holder to end (1 s), well inside the grace period
        assert str(run.resolve()) in run_dir._held
    finally:
        run_dir.release_run_dirs()
        holder.kill()
        holder.wait()


LOCK_HOLDER = ("import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); "
               "print('free')")


def test_a_run_lets_go_of_its_folder_when_it_ends(tmp):
    # A notebook that ran pretrain() must not keep the run from being resumed from a terminal.
    corpus = write_corpus(tmp / "c.txt", synthetic_documents(40))
    assert main(["pretrain", "--corpus", str(corpus), *FAST, "--runs-dir", str(tmp / "runs"), "--name", "n"]) == 0
    other = subprocess.run([sys.executable, "-c", LOCK_HOLDER, str(tmp / "runs" / "n" / ".lock")],
                           capture_output=True, text=True)
    assert other.stdout.strip() == "free", other.stderr


def test_the_lock_knows_a_folder_by_any_spelling_and_gives_way_where_locks_fail(tmp, monkeypatch):
    import errno
    import fcntl
    from minibert.training import run_dir
    run = run_dir.create_run_dir(tmp / "runs", "x")
    monkeypatch.chdir(tmp)
    try:
        run_dir.hold_run_dir(Path("runs") / "x")  # this process holds it already: no conflict with itself
    finally:
        run_dir.release_run_dirs()
    assert run_dir._held == {}

    def no_locks(f, operation):  # e.g. Lustre mounted without flock
        raise OSError(errno.ENOSYS, "Function not implemented")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    run_dir.hold_run_dir(run)  # runs unguarded instead of failing
    assert run_dir._held == {}


def test_resume_says_which_command_wrote_the_run(tmp, capsys):
    distilled, pretrained = tmp / "runs" / "d", tmp / "runs" / "p"
    for run, settings in ((distilled, DistillSettings()), (pretrained, PretrainSettings())):
        run.mkdir(parents=True)
        (run / "settings.json").write_text(json.dumps(settings.to_dict()))
    one_error(capsys, main(["pretrain", "--resume", str(distilled)]),
              f"a minibert distill run, not a pretrain run; continue it with minibert distill --resume {distilled}")
    one_error(capsys, main(["distill", "--resume", str(pretrained)]),
              f"a minibert pretrain run, not a distill run; continue it with minibert pretrain --resume {pretrained}")


def test_distill_checks_seq_len_against_the_teacher_and_names_its_options(tmp, capsys):
    from minibert.training.pretrain import check_before_data
    teacher = tmp / "teacher"  # with an MLM head, and more positions than the 'mini' preset
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]
    config = BertConfig.preset("tiny", vocab_size=len(vocab), max_position_embeddings=128)
    BertForMaskedLM(config).save_pretrained(teacher)
    WordPieceTokenizer(vocab).save_pretrained(teacher)
    settings = DistillSettings(teacher=str(teacher), seq_len=100, runs_dir=str(tmp / "runs"))
    check_before_data(settings)  # 100 > the 64 positions of 'mini', which a distillation does not use
    assert settings.to_dict()["config"] is None  # settings.json claims no --config
    with pytest.raises(ValueError, match=r"seq_len \(--seq-len\) 200 is longer than the 128 tokens the teacher's"):
        check_before_data(DistillSettings(teacher=str(teacher), seq_len=200))
    common = ["--corpus", str(tmp / "missing.txt"), "--steps", "2", "--quiet", "--procs", "1"]
    one_error(capsys, main(["distill", "--teacher", str(tmp / "gone"), *common]), f"--teacher {tmp / 'gone'}: no such")
    one_error(capsys, main(["distill", "--teacher", str(teacher), "--mode", "hidden", "--alpha-ce", "3", *common]),
              "alpha_ce (--alpha-ce) weighs a loss on the teacher's MLM predictions, which mode (--mode) hidden "
              "does not use")


@pytest.mark.parametrize("extra,message", [
    (["pretrain", "--config", "{tmp}/bad.json"], "bad.json: not valid JSON"),
    (["pretrain", "--weight-decay", "-1"], "weight_decay (--weight-decay) must be >= 0"),
    (["distill", "--resume", "{tmp}/runs/p"], "a minibert pretrain run, not a distill run"),
    # the corpus last (every setting is checked first), and by this process, not by "rank 0 of 2"
    (["pretrain"], "minibert pretrain: error: corpus '{tmp}/missing.txt' does not exist"),
])
def test_two_processes_say_an_error_once(tmp, extra, message):
    (tmp / "runs" / "p").mkdir(parents=True)
    (tmp / "runs" / "p" / "settings.json").write_text(json.dumps({"corpus": ["wiki"]}))
    command, *extra = [e.format(tmp=tmp) for e in extra]
    args = [sys.executable, "-m", "minibert", command, "--corpus", str(tmp / "missing.txt"), "--batch-size", "8",
            "--steps", "2", "--quiet", "--runs-dir", str(tmp / "runs"), *extra, "--procs", "2"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2 and message.format(tmp=tmp) in result.stderr, result.stderr
    assert result.stderr.count("error") == 1 and len(result.stderr.strip().splitlines()) == 1, result.stderr
