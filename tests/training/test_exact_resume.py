"""A run stopped at step k and resumed reproduces the uninterrupted run's numbers to the last bit."""

import numpy as np
import pytest

from minibert.cli import main
from minibert.io.safetensors_io import load_safetensors
from minibert.training.metrics import read_metrics
from minibert.training.pretrain import pretrain
from pretrain_helpers import interrupt_in_step, synthetic_documents, tiny_settings, write_corpus
from recompute_helpers import record_recomputed_layers

TIMING = ("tokens_per_s", "elapsed")


def comparable(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


@pytest.mark.parametrize("objective", ["mlm+nsp", "mlm", "electra"])
def test_stop_and_resume_gives_identical_losses_and_weights(tmp_path, monkeypatch, objective):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "c.txt", synthetic_documents(80))
    # dropout, gradient accumulation, a log window cut by the checkpoint, whole-word masking: everything that
    # carries state from step to step is exercised.
    options = dict(steps=12, batch_size=6, grad_accum=2, dropout=0.1, log_every=3, eval_every=4, save_every=5,
                   keep_checkpoints=0, objective=objective, whole_word_mask=True, eval_examples=16)
    pretrain(tiny_settings(corpus, tmp_path / "runs", name="straight", **options), log=lambda *a: None)

    # The same run, crashing in step 8 (after the checkpoint of step 5 and metrics of steps 6 and 7).
    restore_clip = interrupt_in_step(monkeypatch, 8)
    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_settings(corpus, tmp_path / "runs", name="crashed", **options), log=lambda *a: None)
    restore_clip()
    crashed = tmp_path / "runs" / "crashed"
    assert (crashed / "checkpoints" / "latest").read_text().strip() == "step-000005"
    assert max(r["step"] for r in read_metrics(crashed / "metrics.jsonl")) == 6  # lines after the checkpoint

    assert main(["pretrain", "--resume", str(crashed), "--quiet", "--no-examples"]) == 0

    straight = tmp_path / "runs" / "straight"
    a, b = read_metrics(straight / "metrics.jsonl"), read_metrics(crashed / "metrics.jsonl")
    assert len(a) == len(b) and comparable(a) == comparable(b)  # every loss, accuracy, lr: bit for bit
    names = ["model.safetensors", "training_state/optimizer.safetensors"]
    if objective == "electra":  # the generator's own folder; the dropout and sampling generator is one stream
        names.append("generator/model.safetensors")
    for name in names:
        wa = load_safetensors(straight / "checkpoints" / "step-000012" / name)
        wb = load_safetensors(crashed / "checkpoints" / "step-000012" / name)
        assert wa.keys() == wb.keys()
        for key in wa:
            assert np.array_equal(wa[key], wb[key]), key


def test_recompute_changes_no_number_and_may_be_switched_on_at_resume(tmp_path, monkeypatch):
    """--recompute (activation recompute) gives the run's numbers bit for bit; as it changes nothing it computes,
    a resumed run may turn it on (or off)."""
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    corpus = write_corpus(tmp_path / "c.txt", synthetic_documents(60))
    options = dict(steps=8, batch_size=6, dropout=0.1, log_every=2, eval_every=4, save_every=4, keep_checkpoints=0,
                   eval_examples=16)
    pretrain(tiny_settings(corpus, tmp_path / "runs", name="plain", **options), log=lambda *a: None)

    restore_clip = interrupt_in_step(monkeypatch, 6)
    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_settings(corpus, tmp_path / "runs", name="switched", **options), log=lambda *a: None)
    restore_clip()
    recomputed = record_recomputed_layers(monkeypatch)
    switched = tmp_path / "runs" / "switched"
    assert main(["pretrain", "--resume", str(switched), "--recompute", "--quiet", "--no-examples"]) == 0
    assert [i for _, i in recomputed[:2]] == [1, 0]  # tiny's 2 layers, recomputed in reverse order in every backward

    plain = tmp_path / "runs" / "plain"
    assert comparable(read_metrics(plain / "metrics.jsonl")) == comparable(read_metrics(switched / "metrics.jsonl"))
    wa = load_safetensors(plain / "checkpoints" / "step-000008" / "model.safetensors")
    wb = load_safetensors(switched / "checkpoints" / "step-000008" / "model.safetensors")
    assert all(np.array_equal(wa[key], wb[key]) for key in wa)
