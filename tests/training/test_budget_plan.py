"""--minutes: the number of steps is planned from measured step times, and corrected at the end of warmup."""

import json
import re
import weakref

import numpy as np
import pytest

import minibert.training.pretrain as pretrain_module
from minibert.optim import linear_warmup_decay
from minibert.training.budget import make_plan, measure_step_seconds, replan, steps_that_fit
from minibert.training.pretrain import pretrain
from minibert.training.run_dir import latest_checkpoint
from minibert.training.settings import PretrainSettings
from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus


def test_plan_arithmetic():
    settings = PretrainSettings(warmup=0.05)
    plan = make_plan(1000, settings, timed=True)
    assert (plan.total_steps, plan.warmup_steps, plan.eval_every, plan.save_every, plan.next_replan) == \
        (1000, 50, 100, 250, 50)  # the first correction at the end of warmup
    assert make_plan(1000, settings, timed=False).next_replan is None
    assert make_plan(8, settings, timed=True).next_replan is None  # too short to correct
    assert steps_that_fit(100.0, 0.5, eval_seconds=1.0) == 180  # 100 s minus 10 evaluations, 0.5 s a step
    new = replan(plan, done=50, step_seconds=0.25, seconds_left=100.0, eval_seconds=1.0, settings=settings)
    # 10 evaluations left (1 s each), 90 s of steps at 0.25 s; intervals follow the new total
    assert (new.total_steps, new.warmup_steps, new.eval_every, new.save_every, new.next_replan) == \
        (50 + 360, 50, 41, 103, 50 + 41)


def test_untimed_schedule_is_exactly_linear_warmup_decay():
    settings = PretrainSettings(warmup=0.06, lr=7e-4)
    plan = make_plan(517, settings, timed=False)
    assert [plan.lr(s) for s in range(518)] == [linear_warmup_decay(s, 7e-4, 31, 517) for s in range(518)]


def test_a_correction_keeps_the_learning_rate_continuous():
    settings = PretrainSettings(warmup=0.05, lr=1e-3)
    plan = make_plan(1000, settings, timed=True)
    for done, seconds_left in ((50, 300.0), (200, 30.0), (260, 500.0)):
        new = replan(plan, done, step_seconds=0.2, seconds_left=seconds_left, eval_seconds=0.5, settings=settings)
        assert new.lr(done) == pytest.approx(plan.lr(done), rel=1e-12)  # no jump where the plan changes
        assert new.lr(new.total_steps) == 0.0 and new.lr(new.total_steps - 1) > 0
        lrs = [new.lr(s) for s in range(done, new.total_steps + 1)]
        assert all(a >= b for a, b in zip(lrs, lrs[1:]))  # and it only goes down from there
        plan = new


def test_a_slow_first_measurement_is_corrected_from_the_real_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "c.txt", synthetic_documents(60))
    # The machine looked busy while the first steps were timed: 0.4 s a step, far slower than real (a tiny step
    # takes milliseconds, and well under 0.4 s even on a machine loaded 10 deep). 6 s then plan ~15 steps.
    monkeypatch.setattr(pretrain_module, "measure_step_seconds", lambda *a, **k: 0.4)
    lines = []
    settings = tiny_settings(corpus, tmp_path / "runs", steps=None, minutes=0.1, batch_size=4, eval_examples=8,
                             log_every=5)
    summary = pretrain(settings, log=lines.append)
    first = int(re.search(r"; ([\d,]+) steps \(for now", "\n".join(lines)).group(1))
    corrected = [line for line in lines if "steps fit in" in line]
    assert corrected and summary["total_steps"] > first
    latest = latest_checkpoint(tmp_path / "runs" / "run")
    state = json.loads((latest / "training_state" / "state.json").read_text())
    assert state["plan"]["total_steps"] == summary["total_steps"] == state["step"]


@pytest.mark.parametrize("ranks", [1, 2])
def test_measuring_a_step_changes_nothing_in_the_run(ranks, monkeypatch):
    """The probe behind --minutes trains on copies: weights, gradients and the dropout stream are as before. With
    several ranks its AdamW holds one rank's share of the moments, as the split optimizer does."""
    from minibert import BertConfig, BertForPreTraining
    from minibert.training import budget
    model = BertForPreTraining(BertConfig.preset("tiny", hidden_dropout_prob=0.1), seed=0)
    rng = np.random.default_rng(0)
    ids = rng.integers(5, model.config.vocab_size, (2, 16))
    batch = {"input_ids": ids, "token_type_ids": np.zeros_like(ids), "attention_mask": np.ones_like(ids),
             "labels": np.where(rng.random(ids.shape) < 0.3, ids, -100), "next_sentence_label": np.zeros(2, int)}
    weights, stream = model.params.buffer.copy(), model.rng.bit_generator.state
    sizes, probes, alive_at_release = [], [], []
    real_adamw = budget.AdamW

    def probe_adamw(*args, **kwargs):
        sizes.append(kwargs.get("shard"))
        optimizer = real_adamw(*args, **kwargs)
        probes.append(weakref.ref(optimizer))
        return optimizer
    monkeypatch.setattr(budget, "AdamW", probe_adamw)
    # The probe's copies (weights, moments) are freed and handed back to the system before it returns: malloc
    # would otherwise keep them in the process for the whole run (24 MB for mini).
    monkeypatch.setattr(budget, "release_freed_memory",
                        lambda: alive_at_release.append(sum(ref() is not None for ref in probes)))
    assert measure_step_seconds(model, batch, use_nsp=False, repeats=1, ranks=ranks) > 0
    assert alive_at_release == [0]
    assert np.array_equal(model.params.buffer, weights) and not model.grads.buffer.any()
    assert model.rng.bit_generator.state == stream
    if ranks == 1:
        assert sizes == [None]
    else:  # one rank's share: the first of shard_bounds' ranges
        assert 0 < sizes[0].stop - sizes[0].start < model.params.buffer.size
