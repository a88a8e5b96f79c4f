"""`pretrain(settings)` from Python: the caller's settings are left as they were (a notebook can call it again,
or in a loop), paths may be Path objects, `config` may be a BertConfig, `resume=` resumes, and messages name
the setting as well as its command-line option."""

import dataclasses
import json
from pathlib import Path

import pytest

from minibert.config import BertConfig
from minibert.training.pretrain import pretrain
from minibert.training.settings import PretrainSettings
from pretrain_helpers import interrupt_in_step, synthetic_documents, tiny_settings, write_corpus

QUIET = dict(log=lambda *a: None)


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "c.txt", synthetic_documents(60))


def fast(corpus, runs, **overrides):
    return tiny_settings(corpus, runs, **{"steps": 2, "name": None, "eval_examples": 16, **overrides})


def test_the_callers_settings_are_not_changed_and_can_be_used_again(tmp_path, corpus):
    s = fast(corpus, tmp_path / "runs")
    before = dataclasses.replace(s)
    first = pretrain(s, **QUIET)
    assert s == before and s.name is None  # nothing written back
    second = pretrain(s, **QUIET)  # a second run, in its own folder (no "already holds a run")
    assert first["run"] != second["run"] and Path(second["run"]).is_dir()
    # The run's own record holds the resolved values: its name.
    assert json.loads((Path(second["run"]) / "settings.json").read_text())["name"] == Path(second["run"]).name

    runs = set()
    for seed in (0, 1):  # the notebook loop
        s.seed = seed
        runs.add(pretrain(s, **QUIET)["run"])
    assert len(runs) == 2 and s.name is None
    saved = [json.loads((Path(r) / "settings.json").read_text())["seed"] for r in sorted(runs)]
    assert sorted(saved) == [0, 1]


def test_paths_may_be_path_objects(tmp_path, corpus):
    s = dataclasses.replace(fast(corpus, tmp_path / "runs", name="p"), corpus=[Path(corpus)],
                            runs_dir=tmp_path / "runs")
    assert s.corpus == [str(corpus)] and s.runs_dir == str(tmp_path / "runs")  # normalised to str
    summary = pretrain(s, **QUIET)
    assert summary["steps"] == 2
    assert json.loads((tmp_path / "runs" / "p" / "settings.json").read_text())["corpus"] == [str(corpus)]
    # A tokenizer folder given as a Path, and a lone path for the corpus.
    s2 = dataclasses.replace(fast(corpus, tmp_path / "runs", name="p2"), corpus=Path(corpus),
                             tokenizer=Path(summary["checkpoint"]))
    assert s2.corpus == [str(corpus)] and s2.tokenizer == summary["checkpoint"]
    assert pretrain(s2, **QUIET)["steps"] == 2


@pytest.mark.parametrize("corpus_value, message", [
    ([3], "corpus (--corpus) must be a list of file or folder paths (str or Path), or a built-in corpus name "
          "('wiki', 'imdb', ...); got 3 (int)"),
    ([None], "got None"),
    (None, "got None"),
])
def test_a_corpus_that_is_not_paths_is_refused_in_one_line(tmp_path, corpus_value, message):
    s = PretrainSettings(corpus=corpus_value, runs_dir=str(tmp_path / "runs"))
    with pytest.raises(TypeError) as e:
        pretrain(s, **QUIET)
    assert message in str(e.value) and len(str(e.value).splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_values_of_the_wrong_type_are_refused_before_any_work(tmp_path):
    for overrides, message in ((dict(text_field=object()), "text_field (--text-field) must be a str, got an object"),
                               (dict(lr="1e-3"), "lr (--lr) must be a number, got '1e-3' (str)"),
                               (dict(seed=1.5), "seed (--seed) must be an integer, got 1.5 (float)")):
        s = PretrainSettings(corpus=["c.txt"], runs_dir=str(tmp_path / "runs"), **overrides)
        with pytest.raises(TypeError) as e:
            pretrain(s, **QUIET)
        assert message in str(e.value)
    assert not (tmp_path / "runs").exists()
    import numpy as np
    assert PretrainSettings(seed=np.int64(3)).seed.__class__ is int  # a NumPy number is stored as a Python one


def test_a_failure_before_training_starts_leaves_no_run_folder(tmp_path, corpus, monkeypatch):
    import minibert.training.pretrain as pretrain_module

    def broken(*args, **kwargs):
        raise RuntimeError("evaluation broke")
    monkeypatch.setattr(pretrain_module, "evaluate", broken)
    with pytest.raises(RuntimeError, match="evaluation broke"):
        pretrain(fast(corpus, tmp_path / "runs", name="half"), **QUIET)
    assert not (tmp_path / "runs" / "half").exists()



def test_a_run_folder_another_process_takes_first_is_never_removed(tmp_path, corpus, monkeypatch):
    # Two starts of one name at once: this one makes the folder, the other takes its lock first and starts
    # writing. This one fails, and must leave the other's run alone.
    import minibert.training.run_dir as run_dir

    def taken(run):
        (run / "theirs.txt").write_text("the other process's run")
        raise RuntimeError(f"run folder {run} is being trained by another process")
    monkeypatch.setattr(run_dir, "hold_run_dir", taken)
    with pytest.raises(RuntimeError, match="another process"):
        pretrain(fast(corpus, tmp_path / "runs", name="taken"), **QUIET)
    assert (tmp_path / "runs" / "taken" / "theirs.txt").exists()


def test_config_may_be_a_bert_config(tmp_path, corpus):
    config = BertConfig.preset("tiny", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    s = fast(corpus, tmp_path / "runs", config=config, name="cfg")
    summary = pretrain(s, **QUIET)
    assert s.config is config and config.vocab_size == BertConfig.preset("tiny").vocab_size  # not changed
    saved = json.loads((tmp_path / "runs" / "cfg" / "settings.json").read_text())
    assert saved["config"]["hidden_size"] == config.hidden_size  # the run records the config itself
    model_config = json.loads((Path(summary["checkpoint"]) / "config.json").read_text())
    assert model_config["hidden_size"] == config.hidden_size and model_config["num_hidden_layers"] == 2
    # read back (as --resume does): the same settings
    expected = BertConfig.from_dict({**config.to_dict(), "vocab_size": saved["config"]["vocab_size"]})
    assert PretrainSettings.from_dict(saved).config == expected


def test_config_of_another_type_is_a_one_line_type_error():
    with pytest.raises(TypeError, match=r"config \(--config\) takes a preset name .*, a config.json path or a "
                                        r"BertConfig; got 3 \(int\)"):
        PretrainSettings(config=3).validate()


def interrupted_run(tmp_path, corpus, monkeypatch) -> PretrainSettings:
    """The settings of a 4-step run "r" interrupted in step 3, after its checkpoint at step 2: one to resume."""
    restore_clip = interrupt_in_step(monkeypatch, 3)
    s = fast(corpus, tmp_path / "runs", steps=4, save_every=2, keep_checkpoints=0, name="r")
    with pytest.raises(KeyboardInterrupt):
        pretrain(s, **QUIET)
    restore_clip()
    return s


def test_resume_from_python(tmp_path, corpus, monkeypatch):
    s = interrupted_run(tmp_path, corpus, monkeypatch)
    with pytest.raises(FileExistsError) as e:  # the advice names both ways to resume
        pretrain(s, **QUIET)
    assert "--resume" in str(e.value) and "resume=" in str(e.value)
    s.resume = str(tmp_path / "runs" / "r")
    summary = pretrain(s, **QUIET)
    assert summary["steps"] == 4 and summary["session"]["resumed_at_step"] == 2
    assert pretrain(s, **QUIET)["steps"] == 4  # finished: nothing to resume, its summary again
    with pytest.raises(ValueError, match="lr"):
        pretrain(dataclasses.replace(s, lr=0.5), **QUIET)


def test_resume_of_a_run_another_process_is_training_is_refused_before_the_data(tmp_path, corpus, monkeypatch):
    import minibert.training.pretrain as pretrain_module
    import minibert.training.run_dir as run_dir
    s = interrupted_run(tmp_path, corpus, monkeypatch)

    def taken(run):
        raise RuntimeError(f"run folder {run} is being trained by another process")
    prepared = []
    monkeypatch.setattr(run_dir, "hold_run_dir", taken)
    monkeypatch.setattr(pretrain_module, "prepare_data", lambda *a, **k: prepared.append(1))
    with pytest.raises(RuntimeError, match="another process"):
        pretrain(dataclasses.replace(s, resume=str(tmp_path / "runs" / "r")), **QUIET)
    assert prepared == []


@pytest.mark.parametrize("overrides, message", [
    (dict(steps=0), "steps (--steps) must be a positive integer, got 0"),
    (dict(batch_size=0), "batch_size (--batch-size) must be a positive integer, got 0"),
    (dict(betas=(0.9, 1.5)), "betas (--beta2) must be in [0, 1)"),
    (dict(seq_len=500), "seq_len (--seq-len) 500 is longer than the 64 tokens"),
])
def test_messages_name_the_setting_and_its_option(tmp_path, overrides, message):
    s = PretrainSettings(corpus=[str(tmp_path / "missing.txt")], config="tiny", runs_dir=str(tmp_path / "runs"),
                         **overrides)
    with pytest.raises(ValueError) as e:
        pretrain(s, **QUIET)
    assert message in str(e.value)
