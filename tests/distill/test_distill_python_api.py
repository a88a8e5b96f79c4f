"""`distill(settings)` from Python leaves the caller's settings as they were (the run's settings.json holds what
was resolved: tokenizer, layers, mode, loss weights), so the same settings can run again; paths may be Path
objects; messages name the setting as well as its option."""

import dataclasses
import json
from pathlib import Path

import pytest

from minibert import BertForMaskedLM
from minibert.distill.run import distill
from minibert.distill.settings import DistillSettings
from pretrain_helpers import ANIMALS, COLORS, FOODS, PLACES, synthetic_documents, write_corpus
from tiny_checkpoint import make_tiny_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "eats", "lives", "in", "every", "is", "a", "likes",
         "and"] + ANIMALS + COLORS + FOODS + PLACES


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "animals.txt", synthetic_documents(40))
    teacher = make_tiny_checkpoint(tmp_path / "teacher", VOCAB, cls=BertForMaskedLM, num_hidden_layers=2)
    return tmp_path, corpus, teacher


def settings(tmp_path, corpus, teacher, **overrides):
    values = dict(teacher=Path(teacher), corpus=[Path(corpus)], runs_dir=tmp_path / "runs", seq_len=16,
                  batch_size=8, eval_examples=16, eval_fraction=0.1, steps=2, quiet=True, plot=False)
    return DistillSettings(**{**values, **overrides})


def test_distill_leaves_the_callers_settings_alone(setup):
    tmp_path, corpus, teacher = setup
    s = settings(tmp_path, corpus, teacher)
    assert s.teacher == str(teacher) and s.corpus == [str(corpus)]  # Paths normalised to str
    before = dataclasses.replace(s)
    first = distill(s, log=lambda *a: None)
    assert s == before  # tokenizer, teacher_layers, mode, alpha_*, name: all still unset
    assert s.tokenizer is None and s.mode is None and s.alpha_ce is None and s.name is None
    saved = json.loads((Path(first["run"]) / "settings.json").read_text())
    assert saved["mode"] == "mlm" and saved["teacher_layers"] == [1] and saved["alpha_ce"] is not None
    assert saved["tokenizer"] == str(teacher) and saved["name"] == Path(first["run"]).name
    second = distill(s, log=lambda *a: None)  # again: a second run, not "already holds a run"
    assert second["run"] != first["run"]


def test_distill_messages_name_the_setting_and_its_option(setup):
    tmp_path, corpus, teacher = setup
    with pytest.raises(ValueError, match=r"temperature \(--temperature\) must be positive, got 0"):
        distill(settings(tmp_path, corpus, teacher, temperature=0), log=lambda *a: None)
    with pytest.raises(ValueError, match=r"objective \(--objective\)"):
        distill(settings(tmp_path, corpus, teacher, objective="mlm+nsp"), log=lambda *a: None)


def test_settings_that_cannot_be_saved_are_refused_before_any_work(setup):
    tmp_path, corpus, teacher = setup
    with pytest.raises(TypeError, match=r"teacher_layers \(--teacher-layers\) must be a plain value .*settings.json"):
        distill(settings(tmp_path, corpus, teacher, teacher_layers=[object()]), log=lambda *a: None)
    assert not (tmp_path / "runs").exists()
