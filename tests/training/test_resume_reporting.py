"""--resume of a run that already finished says so in one line, starts no rank and leaves the run's files as
they are; a run genuinely resumed reports this session's steps and times apart from the whole run's; summary.json
names the run folder by its absolute path however it was given."""

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from minibert.cli import main
from minibert.training import procs
from minibert.training.pretrain import pretrain
from minibert.training.run_dir import finished_run
from pretrain_helpers import interrupt_in_step, synthetic_documents, tiny_settings, write_corpus

OPTIONS = dict(steps=6, batch_size=8, log_every=2, eval_every=3, save_every=3, keep_checkpoints=0, eval_examples=16)


def _snapshot(folder):
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # relative paths below are relative to the test's folder
    return write_corpus(tmp_path / "c.txt", synthetic_documents(60))


def test_resume_of_a_finished_run_says_so_and_leaves_it_alone(tmp_path, corpus, monkeypatch, capsys):
    pretrain(tiny_settings(corpus, tmp_path / "runs", name="done", **OPTIONS), log=lambda *a: None)
    run = tmp_path / "runs" / "done"
    before = _snapshot(run)
    started = []  # --procs 2 would start a second process: nothing may start for a run with nothing to do
    monkeypatch.setattr(procs, "become_rank0", lambda command, n: started.append(n) or pytest.fail("ranks started"))
    assert main(["pretrain", "--resume", os.path.join("runs", "done"), "--procs", "2", "--quiet",
                 "--no-examples"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "already finished its 6 steps" in out[0] and "nothing to resume" in out[0], out
    assert str(run.resolve()) in out[0]
    assert not started and _snapshot(run) == before  # not a byte, not a modification time

    # the Python API: the saved summary back, nothing written
    checkpoint = run / "checkpoints" / "step-000006"
    said = []
    summary = pretrain(tiny_settings(corpus, tmp_path / "runs", name="done", **OPTIONS), resume_checkpoint=checkpoint,
                       run_dir=run, log=said.append)
    assert summary == json.loads((run / "summary.json").read_text()) and len(said) == 1
    assert _snapshot(run) == before

    # every rank of a job (MPI, --procs) finds the run finished; rank 0 alone says so
    said = {0: [], 1: []}
    for rank in (0, 1):
        got = pretrain(tiny_settings(corpus, tmp_path / "runs", name="done", **OPTIONS), resume_checkpoint=checkpoint,
                       run_dir=run, log=said[rank].append, comm=SimpleNamespace(rank=rank, size=2, is_root=rank == 0))
        assert (got is not None) == (rank == 0)
    assert len(said[0]) == 1 and "nothing to resume" in said[0][0] and said[1] == []


def test_a_run_whose_summary_was_never_written_is_still_resumed_to_write_it(tmp_path, corpus, capsys):
    pretrain(tiny_settings(corpus, tmp_path / "runs", name="nosummary", **OPTIONS), log=lambda *a: None)
    run = tmp_path / "runs" / "nosummary"
    (run / "summary.json").unlink()  # (say the process died while drawing the plot)
    assert finished_run(run, run / "checkpoints" / "step-000006") is None
    assert main(["pretrain", "--resume", str(run), "--quiet", "--no-examples"]) == 0
    assert json.loads((run / "summary.json").read_text())["steps"] == 6


def test_a_resumed_run_reports_this_session_apart_from_the_whole_run(tmp_path, corpus, monkeypatch, capsys):
    restore_clip = interrupt_in_step(monkeypatch, 5)  # stopped in step 5: the checkpoint of step 3 is the latest
    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_settings(corpus, tmp_path / "runs", name="stopped", **OPTIONS), log=lambda *a: None)
    restore_clip()
    capsys.readouterr()
    assert main(["pretrain", "--resume", os.path.join("runs", "stopped"), "--quiet", "--no-examples"]) == 0
    out = capsys.readouterr().out
    run = tmp_path / "runs" / "stopped"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["run"] == str(run.resolve()) and Path(summary["run"]).is_absolute()
    assert Path(summary["checkpoint"]).is_absolute()
    session = summary["session"]
    assert session["resumed_at_step"] == 3 and session["steps"] == 3 and summary["steps"] == 6
    assert 0 < session["tokens_seen"] < summary["tokens_seen"]  # this session's share of the whole run
    assert session["train_seconds"] <= summary["train_seconds"]
    done = next(line for line in out.splitlines() if line.startswith("done:"))
    assert "this session: 3 steps (resumed at step 3)" in done and "the whole run" in done, done


def test_a_new_run_given_a_relative_runs_dir_is_summarised_with_its_absolute_path(tmp_path, corpus, capsys):
    assert main(["pretrain", "--corpus", "c.txt", "--runs-dir", "runs", "--name", "rel", "--config", "tiny",
                 "--vocab-size", "120", "--seq-len", "32", "--batch-size", "8", "--steps", "2", "--eval-examples", "16",
                 "--eval-fraction", "0.05", "--quiet", "--no-plot", "--no-examples"]) == 0
    summary = json.loads((tmp_path / "runs" / "rel" / "summary.json").read_text())
    assert summary["run"] == str((tmp_path / "runs" / "rel").resolve())
    assert "session" not in summary  # a run in one session: its numbers are all this session's
    done = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("done:"))
    assert "this session" not in done


def test_nothing_to_resume_counts_its_steps_in_words(tmp_path):
    from minibert.training.run_dir import nothing_to_resume
    assert "already finished its 1 step; nothing to resume" in nothing_to_resume(tmp_path, {"steps": 1})
    assert "already finished its 1,200 steps; nothing to resume" in nothing_to_resume(tmp_path, {"steps": 1200})
