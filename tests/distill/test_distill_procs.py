"""`minibert distill` on two processes (`--procs 2`, the default on 2+ cores) and under mpiexec: each rank
distils its share of every batch, and scales each loss by its share of what that loss is a mean over (masked
tokens for the soft targets and the MLM loss, real tokens for the token cosine and MSE, sequences for the pooled
cosine). With dropout off, two ranks must then train as one process does, up to float32 rounding: every logged
number, training and held-out, and the student's weights. (Weighting every loss by sequences instead moves the
logged losses past the tolerance at the first steps: checked by hand when this test was written.)"""

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from minibert import BertForMaskedLM, BertModel
from minibert.io.safetensors_io import load_safetensors
from minibert.training.metrics import read_metrics
from mpi_helpers import ranks, requires_mpi, run_job
from pretrain_helpers import ANIMALS, COLORS, FOODS, PLACES, synthetic_documents, write_corpus
from tiny_checkpoint import make_tiny_checkpoint

pytestmark = pytest.mark.usefixtures("leaves_no_shared_memory")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "the", "eats", "lives", "in", "every", "is", "a", "likes",
         "and"] + ANIMALS + COLORS + FOODS + PLACES
LOSS_RTOL, WEIGHT_ATOL = 1e-5, 2e-5  # as tests/training/test_distributed.py


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("distill-procs")
    corpus = write_corpus(tmp / "animals.txt", synthetic_documents(60))
    make_tiny_checkpoint(tmp / "mlm-teacher", VOCAB, cls=BertForMaskedLM, num_hidden_layers=3)
    make_tiny_checkpoint(tmp / "bare-teacher", VOCAB, cls=BertModel, num_hidden_layers=3)
    return tmp, corpus


def distil(tmp, corpus, teacher, name, launcher, *extra):
    """`minibert distill` in fresh processes: one, `--procs 2`, or `mpiexec -n 2`."""
    args = ["-m", "minibert", "distill", "--teacher", tmp / teacher, "--corpus", corpus, "--runs-dir", tmp / "runs",
            "--name", name, "--seq-len", 16, "--batch-size", 8, "--eval-examples", 16, "--eval-fraction", 0.1,
            "--quiet", "--no-plot", "--log-every", 1, "--steps", 6, "--lr", 3e-3, "--student-layers", 2,
            "--dropout", 0, "--eval-every", 3, "--save-every", 3, *extra]
    env = {**os.environ, "MINIBERT_CACHE": str(tmp / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if launcher == "mpiexec":
        result = ranks(2, "mpiexec", *args, env=env)
    else:
        result = run_job([sys.executable, *map(str, args), "--procs", "2" if launcher == "procs" else "1"], env=env)
    assert result.returncode == 0, result.stderr
    return tmp / "runs" / name


def assert_same_run(one, two):
    assert json.loads((two / "summary.json").read_text())["ranks"] == 2
    a, b = read_metrics(one / "metrics.jsonl"), read_metrics(two / "metrics.jsonl")
    assert [(r["step"], r["split"]) for r in a] == [(r["step"], r["split"]) for r in b]
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for key, value in ra.items():
            if key in ("tokens_per_s", "elapsed"):
                continue
            if isinstance(value, float):
                assert rb[key] == pytest.approx(value, rel=LOSS_RTOL, abs=1e-12), (ra["step"], ra["split"], key)
            else:
                assert rb[key] == value, (ra["step"], ra["split"], key)
    end = lambda run, step: load_safetensors(run / "checkpoints" / f"step-{step:06d}" / "model.safetensors")  # noqa: E731
    wa, wb, w3 = end(one, 6), end(two, 6), end(one, 3)
    assert max(float(np.abs(wa[k] - wb[k]).max()) for k in wa) < WEIGHT_ATOL
    assert max(float(np.abs(wa[k] - w3[k]).max()) for k in wa) > 100 * WEIGHT_ATOL  # the weights do move


@pytest.mark.parametrize("teacher, extra", [
    # soft targets, MLM, token cosine and MSE; one held-out batch, so the second process evaluates none
    ("mlm-teacher", ["--alpha-mse", "1", "--eval-examples", "8"]),
    ("bare-teacher", ["--alpha-mse", "1"]),  # token cosine, MSE and pooled cosine
])
def test_two_processes_distil_like_one(setup, teacher, extra):
    tmp, corpus = setup
    one = distil(tmp, corpus, teacher, f"one-{teacher}", "one", *extra)
    two = distil(tmp, corpus, teacher, f"two-{teacher}", "procs", *extra)
    assert_same_run(one, two)


@requires_mpi
def test_under_mpiexec_too(setup):
    tmp, corpus = setup
    one = distil(tmp, corpus, "mlm-teacher", "one-mpi", "one")
    assert_same_run(one, distil(tmp, corpus, "mlm-teacher", "two-mpi", "mpiexec"))


COUNTING_DRIVER = """
import json, sys
from minibert.distill.distiller import Distiller
from minibert.distill.run import distill
from minibert.distill.settings import DistillSettings
from minibert.training.distributed import communicator

calls = []
weighted_losses = Distiller.weighted_losses
Distiller.weighted_losses = lambda self, out, shares: calls.append(1) or weighted_losses(self, out, shares)
comm = communicator()
distill(DistillSettings(**json.loads(sys.argv[1])), log=lambda *a: None, comm=comm)
print(f"rank {comm.rank}: {len(calls)} calls")
"""


def test_each_rank_weighs_a_micro_batchs_losses_once(setup):
    """The distillation's losses, weighted by the rank's shares, are computed once per micro-batch and serve
    both the step's loss and its separate losses."""
    tmp, corpus = setup
    driver = tmp / "count_weighted_losses.py"
    driver.write_text(COUNTING_DRIVER)
    settings = dict(teacher=str(tmp / "mlm-teacher"), corpus=[str(corpus)], runs_dir=str(tmp / "runs"),
                    name="counted", seq_len=16, batch_size=8, grad_accum=2, eval_examples=16, eval_fraction=0.1,
                    quiet=True, plot=False, steps=3, student_layers=2, dropout=0.0)
    env = {**os.environ, "MINIBERT_CACHE": str(tmp / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = ranks(2, "procs", driver, json.dumps(settings), env=env)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:2]) == ["rank 0: 6 calls", "rank 1: 6 calls"], result.stdout  # 3 x 2
