"""ELECTRA end to end: `pretrain --objective electra` on a small corpus written here trains both models through
the one training loop; the discriminator learns to spot replaced tokens better than always guessing "original";
the checkpoint is the Hugging Face layout (discriminator + generator/); fine-tuning and embedding use the
discriminator."""

import json

import numpy as np
import pytest

from minibert.cli import main
from minibert.embeddings import SentenceEncoder
from minibert.models.electra_pretraining import ElectraPretrainer
from minibert.training.metrics import read_metrics
from minibert.training.pretrain import pretrain
from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("electra")
    mp = pytest.MonkeyPatch()
    mp.setenv("MINIBERT_CACHE", str(tmp / "cache"))
    corpus = write_corpus(tmp / "animals.txt", synthetic_documents(300))
    settings = tiny_settings(corpus, tmp / "runs", objective="electra", steps=60, batch_size=16, vocab_size=200,
                             lr=2e-3, mask_prob=0.15, eval_fraction=0.2, eval_examples=128, eval_every=30,
                             save_every=60, log_every=10)
    summary = pretrain(settings, log=lambda *a: None)
    yield summary, tmp / "runs" / "run", tmp
    mp.undo()


def test_both_models_train_through_the_one_loop(trained):
    summary, run, _ = trained
    records = read_metrics(run / "metrics.jsonl")
    evals = [r for r in records if r["split"] == "eval"]
    train = [r for r in records if r["split"] == "train"]
    assert [r["step"] for r in evals] == [0, 30, 60]
    first, last = evals[0], evals[-1]
    assert 0.03 < last["replaced_share"] < 0.2  # ~15% masked, minus the generator's correct guesses
    assert last["mlm_loss"] < first["mlm_loss"] - 0.3, (first, last)  # the generator's masked LM
    # The discriminator starts at log 2 (a coin) and must at least reach the best constant guess's loss, the
    # entropy of the replaced share (beating the all-original guess in accuracy takes longer: docs/descendants.md).
    share = last["replaced_share"]
    entropy = -(share * np.log(share) + (1 - share) * np.log(1 - share))
    assert first["rtd_loss"] > 0.65 and last["rtd_loss"] < entropy + 0.02, (first, last, entropy)
    assert last["loss"] == pytest.approx(last["mlm_loss"] + 50 * last["rtd_loss"])
    assert all("rtd_acc" in r and "rtd_loss" in r and np.isfinite(r["loss"]) for r in train)
    assert summary["eval"]["rtd_acc"] == last["rtd_acc"]


def test_checkpoint_is_discriminator_plus_generator_folder(trained):
    _, run, _ = trained
    ckpt = run / "checkpoints" / "step-000060"
    assert json.loads((ckpt / "config.json").read_text())["architectures"] == ["ElectraForPreTraining"]
    gen = json.loads((ckpt / "generator" / "config.json").read_text())
    assert gen["architectures"] == ["ElectraForMaskedLM"] and gen["hidden_size"] == 64  # 1/4 of 128 -> one head
    model = ElectraPretrainer.from_pretrained(ckpt)
    assert model.gen_config.num_attention_heads == 1


def test_finetune_and_embed_use_the_discriminator(trained, tmp_path, capsys):
    _, run, _ = trained
    data = tmp_path / "task.csv"
    rows = ["text,label"] + [f"the {a} eats well .,{'x' if i % 2 else 'y'}" for i, a in
                             enumerate(["fox", "cat", "dog", "owl"] * 6)]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "clf"
    rc = main(["finetune", "--model", str(run), "--train", str(data), "--epochs", "1", "--lr", "1e-5", "--out",
               str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    warnings = [line for line in printed.splitlines() if line.startswith("warning")]
    assert not any("discriminator_predictions" in line for line in warnings), warnings  # a note, not a warning:
    assert "other heads (discriminator_predictions)" in printed  # (the discriminator has no pooler: that one warns)
    from minibert.models import BertForSequenceClassification
    from minibert.models.electra import ElectraForPreTraining
    clf = BertForSequenceClassification.from_pretrained(out)
    disc = ElectraForPreTraining.from_pretrained(run / "checkpoints" / "step-000060")
    # the fine-tuned body started from the discriminator's weights (one epoch at lr 1e-5 moves them little;
    # a freshly initialised body would be ~0.02 x 2 away)
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.1.output.dense.weight"):
        assert np.abs(clf.params["bert." + name] - disc.params["electra." + name]).max() < 1e-3, name
    enc = SentenceEncoder.from_pretrained(run)  # the run folder: its latest checkpoint, the discriminator
    w = "encoder.layer.0.attention.self.query.weight"
    np.testing.assert_array_equal(enc.model.params[w], disc.params["electra." + w])
    assert enc.encode(["the fox eats berries ."]).shape == (1, 128)


def test_fill_mask_uses_the_generator(trained):
    _, run, _ = trained
    from minibert.fill_mask import FillMask
    filler = FillMask.from_pretrained(run)
    assert type(filler.model).__name__ == "ElectraForMaskedLM" and filler.model.config.hidden_size == 64
    guesses = filler("the fox eats [MASK] .", top_k=3)[0]
    assert len(guesses) == 3 and guesses[0]["score"] >= guesses[1]["score"]
