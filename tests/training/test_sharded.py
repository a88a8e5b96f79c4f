"""AdamW split over data-parallel ranks (minibert/training/sharded.py): the same weights, bit for bit, as every
rank running the whole step, on ranks started by minibert's launcher and by mpiexec."""

import os
from pathlib import Path

import numpy as np
import pytest

from minibert import AdamW, BertConfig, BertForPreTraining
from minibert.optim import NORM_BLOCK
from minibert.training.sharded import shard_bounds
from mpi_helpers import ranks, requires_mpi

pytestmark = pytest.mark.usefixtures("leaves_no_shared_memory")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "helpers" / "sharded_worker.py"


@pytest.mark.parametrize("n, size", [(3_000_000, 2), (3_000_000, 3), (100, 2), (5 * NORM_BLOCK + 7, 4),
                                     (2 * NORM_BLOCK, 3)])
def test_bounds_cover_the_buffer_in_whole_norm_blocks(n, size):
    bounds = shard_bounds(n, size)
    assert len(bounds) == size + 1 and bounds[0] == 0 and bounds[-1] == n
    assert all(a <= b for a, b in zip(bounds, bounds[1:]))
    assert all(b % NORM_BLOCK == 0 for b in bounds[:-1])  # a norm block never straddles two ranks
    widths = np.diff(bounds)
    if n >= size * NORM_BLOCK:  # as even as whole blocks allow
        assert widths.max() - widths.min() <= NORM_BLOCK


def test_adamw_shards_that_cover_the_buffer_update_it_as_one_optimizer():
    cfg = BertConfig.preset("tiny")
    models = [BertForPreTraining(cfg, seed=0) for _ in range(2)]
    n = models[0].params.buffer.size
    cut = n // 3 + 5  # anywhere, even inside a tensor and the no-decay segment's neighbour
    whole = AdamW(models[0].params, models[0].grads, lr=1e-2)
    shards = [AdamW(models[1].params, models[1].grads, lr=1e-2, shard=s) for s in (slice(0, cut), slice(cut, n))]
    rng = np.random.default_rng(0)
    for _ in range(3):
        g = rng.standard_normal(n).astype(np.float32)
        models[0].grads.buffer[...] = g
        models[1].grads.buffer[...] = g
        whole.step()
        for opt in shards:
            opt.step()
    assert np.array_equal(models[0].params.buffer, models[1].params.buffer)
    assert shards[0].m.size == cut and shards[1].v.size == n - cut  # each keeps its own part of the moments
    # A shard resumes from a whole state: it takes its part of every moment.
    resumed = AdamW(models[1].params, models[1].grads, shard=slice(cut, n))
    resumed.load_state_dict(whole.state_dict())
    assert np.array_equal(resumed.m, whole.m.buffer[cut:]) and np.array_equal(resumed.v, whole.v.buffer[cut:])
    assert resumed.t == 3
    with pytest.raises(RuntimeError, match="one shard"):
        shards[0].state_dict()
    with pytest.raises(ValueError, match="flat buffers"):
        AdamW(dict(models[1].params), dict(models[1].grads), shard=slice(0, 10))


@pytest.mark.parametrize("launcher, n", [("procs", 3), pytest.param("mpiexec", 2, marks=requires_mpi)])
def test_split_step_gives_the_weights_of_the_whole_step_bit_for_bit(tmp_path, launcher, n):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OPENBLAS_NUM_THREADS": "1"}
    result = ranks(n, launcher, WORKER, tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    outs = [np.load(tmp_path / f"rank{r}.npz") for r in range(n)]
    start = BertForPreTraining(BertConfig.preset("tiny"), seed=0).params.buffer
    assert not np.array_equal(outs[0]["whole"], start)  # the steps moved the weights
    for r, o in enumerate(outs):
        # Five steps and one resume: every weight as the whole-buffer step gives it, and the same on every rank.
        assert np.array_equal(o["split"], o["whole"]), f"rank {r}"
        assert np.array_equal(o["split"], outs[0]["split"])
        # The global norm is the whole buffer's, bit for bit; steps 2 and 4 were clipped, the others not.
        assert o["norm_split"].tolist() == o["norm_whole"].tolist()
        assert [x > 1.0 for x in o["norm_split"]] == [False, True, False, True, False]
        assert o["sums"].tolist() == [[n * (n + 1) / 2, 0.5 * n]] * 5  # the loss sums rode along, summed
        assert bool(o["kept_in_shared_row"]) == (launcher == "procs")  # --procs: gradients in shared memory
        lo, hi = o["bounds"][r], o["bounds"][r + 1]
        assert o["moments"].size == 2 * (hi - lo) and hi - lo < o["whole"].size  # its part of the moments only
    # --procs: one copy of the weights for all ranks (rank 0 saw what the last rank wrote into its own weights)
    assert bool(outs[0]["weights_shared"]) == (launcher == "procs")
    # The state gathered on rank 0 (a checkpoint) is the whole-buffer optimizer's, name for name.
    gathered, reference = np.load(tmp_path / "state.npz"), np.load(tmp_path / "whole_state.npz")
    assert sorted(gathered.files) == sorted(reference.files)
    assert all(np.array_equal(gathered[k], reference[k]) for k in reference.files)
