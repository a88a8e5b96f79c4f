"""Data-parallel pre-training (minibert/training/distributed.py) on ranks started two ways: by minibert's own
launcher (`--procs N`, training/procs.py; always tested) and by mpiexec (MPI).

The runs that need MPI are skipped, with the install hint, where mpi4py or its mpiexec is missing; the tests of
what happens without MPI always run.
"""

import json
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from minibert.cli import main
from minibert.io.safetensors_io import load_safetensors
from minibert.training.distributed import LocalCommunicator, communicator, rank_share
from minibert.training.metrics import read_metrics
from minibert.training.pretrain import pretrain
from minibert.training.run_dir import latest_checkpoint
from minibert.training.settings import PretrainSettings
from mpi_helpers import MPIEXEC, TIMEOUT, assert_ended_cleanly, requires_mpi, run_job, terminate_when
from pretrain_helpers import synthetic_documents, tiny_settings, write_corpus

pytestmark = pytest.mark.usefixtures("leaves_no_shared_memory")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "helpers" / "mpi_pretrain_driver.py"
# The two ways to start ranks: minibert's launcher (no MPI needed) and mpiexec.
LAUNCHERS = ["procs", pytest.param("mpiexec", marks=requires_mpi)]

# Two ranks and one process add the same float32 numbers in a different order (each rank sums its rows' part
# of the gradient, then the Allreduce adds the parts; each rank's MLM loss is weighted by its share of the
# masked tokens), so losses and weights agree to float32 rounding, not bit for bit. Measured on these runs:
# losses within 4e-7 relative, weights within 2e-7 absolute after 6 AdamW steps at lr 1e-3. The bounds below
# leave a 25-100x margin for other BLAS builds, and stay 100x below a real mistake: weighting each rank's MLM
# loss 1/2 instead of by its masked-token share moves the losses by 4e-3 and the weights by 5e-3.
LOSS_RTOL = 1e-5
WEIGHT_ATOL = 2e-5
OPTIONS = dict(config="tiny", seq_len=32, batch_size=8, grad_accum=2, steps=6, objective="mlm+nsp",
               eval_examples=16, log_every=1, eval_every=3, save_every=3)


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "c.txt", synthetic_documents(80))


def mpi_env():
    paths = [str(ROOT), str(ROOT / "tests" / "helpers"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1"}


def mpirun(n, *args, timeout=TIMEOUT, launcher="mpiexec"):
    """`python ARGS` as n ranks, started by mpiexec or by minibert's launcher (python -m minibert.training.procs)."""
    start = [MPIEXEC, "-n", str(n)] if launcher == "mpiexec" else \
        [sys.executable, "-m", "minibert.training.procs", "-n", str(n)]
    return run_job([*start, sys.executable, *map(str, args)], timeout, mpi_env())


def driver(n, settings, tmp_path, *extra, launcher="mpiexec"):
    path = tmp_path / f"{settings.name}.json"
    path.write_text(json.dumps(settings.to_dict()))
    return mpirun(n, DRIVER, path, *extra, launcher=launcher)


def cli_args(corpus, runs, name, **options):
    """`minibert pretrain` arguments for the settings tiny_settings(corpus, runs, name=name, **options) makes."""
    args = ["-m", "minibert", "pretrain", "--corpus", corpus, "--vocab-size", 120, "--runs-dir", runs,
            "--name", name, "--eval-fraction", 0.05, "--lr", 2e-3, "--warmup", 0.1, "--no-plot", "--no-examples",
            "--quiet"]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", value]
    return args


def weights(run, step):
    return load_safetensors(Path(run) / "checkpoints" / f"step-{step:06d}" / "model.safetensors")


def comparable(records):
    return [{k: v for k, v in r.items() if k not in ("tokens_per_s", "elapsed")} for r in records]


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_two_ranks_train_like_one_process_with_the_same_global_batch(corpus, tmp_path, launcher):
    runs = tmp_path / "runs"
    pretrain(tiny_settings(corpus, runs, name="one", **OPTIONS), log=lambda *a: None)
    if launcher == "procs":  # the command starts its own ranks
        result = run_job([sys.executable, *map(str, cli_args(corpus, runs, "two", procs=2, **OPTIONS))],
                         env=mpi_env())
    else:
        result = mpirun(2, *cli_args(corpus, runs, "two", **OPTIONS))
    assert result.returncode == 0, result.stderr
    # Rank 0 alone speaks: one summary, and one metrics line per step and split.
    assert result.stdout.count("done: 6 steps") == 1 and "rank 1" not in result.stdout + result.stderr
    settings = [PretrainSettings.from_dict(json.loads((runs / name / "settings.json").read_text()))
                for name in ("one", "two")]
    assert settings[0].differences(settings[1]) == []  # the same run, but for the number of processes
    one, two = read_metrics(runs / "one" / "metrics.jsonl"), read_metrics(runs / "two" / "metrics.jsonl")
    assert [(r["step"], r["split"]) for r in one] == [(r["step"], r["split"]) for r in two]
    for a, b in zip(one, two):
        for key, value in a.items():
            if key in ("tokens_per_s", "elapsed"):
                continue
            if isinstance(value, float):
                assert b[key] == pytest.approx(value, rel=LOSS_RTOL, abs=1e-12), (a["step"], a["split"], key)
            else:  # step, counts, accuracy numerators: exact
                assert b[key] == value, (a["step"], a["split"], key)
    wa, wb = weights(runs / "one", 6), weights(runs / "two", 6)
    assert max(float(np.abs(wa[k] - wb[k]).max()) for k in wa) < WEIGHT_ATOL
    w3 = weights(runs / "one", 3)  # the weights move far more than the tolerance in three steps
    assert max(float(np.abs(wa[k] - w3[k]).max()) for k in wa) > 100 * WEIGHT_ATOL
    summary = json.loads((runs / "two" / "summary.json").read_text())
    assert summary["ranks"] == 2 and summary["allreduce_bytes_per_step"] == 4 * sum(w.size for w in wa.values())
    assert summary["peak_rss_mb_all_ranks"] > summary["peak_rss_mb"] > 0  # rank 1's peak added to rank 0's
    if sys.platform.startswith("linux"):  # the same with the pages both ranks map (libraries, shm) counted once
        assert 10 < summary["peak_pss_mb_all_ranks"] < summary["peak_rss_mb_all_ranks"]
        assert "counting the memory they share once" in result.stdout
    assert f"on 2 {'processes' if launcher == 'procs' else 'ranks'} (4 sequences each)" in result.stdout


@pytest.fixture(scope="module", params=LAUNCHERS)
def straight_two_rank_run(tmp_path_factory, request):
    """A 2-rank run with dropout (each rank its own masks) that dumps each rank's final weights."""
    launcher = request.param
    tmp = tmp_path_factory.mktemp(f"straight-{launcher}")
    corpus = write_corpus(tmp / "c.txt", synthetic_documents(80))
    settings = tiny_settings(corpus, tmp / "runs", name="straight", **RESUME_OPTIONS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MINIBERT_CACHE", str(tmp / "cache"))
        result = driver(2, settings, tmp, "--dump", tmp, launcher=launcher)
    assert result.returncode == 0, result.stderr
    return tmp, corpus, launcher


RESUME_OPTIONS = dict(OPTIONS, steps=10, dropout=0.1, save_every=4, eval_every=5, keep_checkpoints=0,
                      whole_word_mask=True)


def test_ranks_hold_bit_identical_weights(straight_two_rank_run):
    tmp, _, _ = straight_two_rank_run
    w0, w1 = load_safetensors(tmp / "rank0.safetensors"), load_safetensors(tmp / "rank1.safetensors")
    assert w0.keys() == w1.keys()
    assert all(np.array_equal(w0[k], w1[k]) for k in w0)
    final = weights(tmp / "runs" / "straight", 10)
    assert all(np.array_equal(w0[k], final[k]) for k in w0)


def test_a_killed_rank_ends_the_job_and_the_run_resumes_exactly(straight_two_rank_run, tmp_path, monkeypatch):
    tmp, corpus, launcher = straight_two_rank_run
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp / "cache"))
    runs = tmp_path / "runs"
    # Rank 1 dies (SIGKILL) in step 6, after the checkpoint of step 4: the job must end, not hang (timeout).
    crashed = driver(2, tiny_settings(corpus, runs, name="crashed", **RESUME_OPTIONS), tmp_path, "--fail", "6:1:kill",
                     launcher=launcher)
    assert crashed.returncode != 0
    assert latest_checkpoint(runs / "crashed").name == "step-000004"
    result = mpirun(2, "-m", "minibert", "pretrain", "--resume", runs / "crashed", "--quiet", "--no-examples",
                    launcher=launcher)
    assert result.returncode == 0, result.stderr
    straight = tmp / "runs" / "straight"
    a, b = read_metrics(straight / "metrics.jsonl"), read_metrics(runs / "crashed" / "metrics.jsonl")
    assert comparable(a) == comparable(b)  # every loss, accuracy, lr: bit for bit
    wa, wb = weights(straight, 10), weights(runs / "crashed", 10)
    assert all(np.array_equal(wa[k], wb[k]) for k in wa)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_an_exception_on_one_rank_ends_every_rank(corpus, tmp_path, launcher):
    runs = tmp_path / "runs"
    settings = tiny_settings(corpus, runs, name="failing", **dict(OPTIONS, save_every=2))
    # Rank 0 is then waiting in the Allreduce.
    result = driver(2, settings, tmp_path, "--fail", "3:1:raise", launcher=launcher)
    assert result.returncode != 0
    assert "driver (rank 1 of 2): error: injected failure in step 3; ending all ranks" in result.stderr
    assert latest_checkpoint(runs / "failing").name == "step-000002"
    # The checkpoint left behind is complete: it resumes (here in one process: a different rank count is fine).
    assert main(["pretrain", "--resume", str(runs / "failing"), "--quiet", "--no-examples"]) == 0
    assert latest_checkpoint(runs / "failing").name == "step-000006"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_weights_that_differ_between_ranks_are_reported(tmp_path, launcher):
    script = tmp_path / "diverge.py"
    script.write_text(
        "import numpy as np\n"
        "from minibert.training.distributed import communicator\n"
        "comm = communicator()\n"
        "w = np.ones(1000, dtype=np.float32)\n"
        "comm.check_identical(w, 'the weights after step 1')\n"
        "w[17] = np.nextafter(w[17], np.float32(2)) if comm.rank == 1 else w[17]  # one bit on one rank\n"
        "with comm.abort_on_error('check'):\n"
        "    comm.check_identical(w, 'the weights after step 2')\n")
    result = mpirun(2, script, launcher=launcher)
    assert result.returncode != 0
    assert "the weights after step 2 differ between the 2 ranks" in result.stderr
    assert "step 1" not in result.stderr


# ---- without MPI: these always run


def test_mpiexec_without_mpi4py_gives_the_install_hint(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PMI_SIZE", "2")  # what MPICH's mpiexec sets in each process it starts
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py now fails, as if not installed
    with pytest.raises(ImportError, match=r"PMI_SIZE=2.*mpi4py is not installed: pip install 'minibert\[mpi\]'"):
        communicator()
    assert main(["pretrain", "--corpus", str(corpus), "--runs-dir", str(tmp_path / "runs"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "pip install 'minibert[mpi]'" in err
    assert not (tmp_path / "runs").exists()


def test_single_launches_and_batch_scripts_stay_one_process(monkeypatch):
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "8")  # an sbatch script outside srun: not a parallel launch
    monkeypatch.setenv("PMI_SIZE", "1")  # mpiexec -n 1
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    assert isinstance(communicator(), LocalCommunicator)


class ThreeRanks(LocalCommunicator):
    rank, size = 1, 3


def test_a_global_batch_that_the_ranks_cannot_share_is_refused(corpus, tmp_path):
    with pytest.raises(ValueError, match=r"--batch-size 8 .* divisible by the number of ranks \(3\)"):
        pretrain(tiny_settings(corpus, tmp_path / "runs", batch_size=8), comm=ThreeRanks())
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_electra_on_two_ranks_trains_like_one_process(corpus, tmp_path, launcher):
    # The generator's samples are drawn for the whole batch from a stream of the step (each rank takes its rows'
    # numbers), and each loss is weighted by the rank's share of its terms (masked tokens for the generator's
    # MLM, real tokens for the replaced-token detection): the same run as one process, to float32 rounding.
    # (Weighting the detection by masked tokens instead, as BERT's MLM, moves the losses ~1e-3: checked by hand.)
    runs, options = tmp_path / "runs", dict(OPTIONS, objective="electra")  # (two micro-batches a step)
    pretrain(tiny_settings(corpus, runs, name="one", **options), log=lambda *a: None)
    if launcher == "procs":
        result = run_job([sys.executable, *map(str, cli_args(corpus, runs, "two", procs=2, **options))],
                         env=mpi_env())
    else:
        result = mpirun(2, *cli_args(corpus, runs, "two", **options))
    assert result.returncode == 0, result.stderr
    one, two = read_metrics(runs / "one" / "metrics.jsonl"), read_metrics(runs / "two" / "metrics.jsonl")
    assert [(r["step"], r["split"]) for r in one] == [(r["step"], r["split"]) for r in two]
    for a, b in zip(one, two):
        for key, value in a.items():
            if key not in ("tokens_per_s", "elapsed"):
                assert b[key] == (pytest.approx(value, rel=LOSS_RTOL, abs=1e-12) if isinstance(value, float)
                                  else value), (a["step"], a["split"], key)
    assert any(r.get("rtd_loss") for r in one)  # the discriminator's numbers are among those compared
    wa, wb = weights(runs / "one", 6), weights(runs / "two", 6)
    assert max(float(np.abs(wa[k] - wb[k]).max()) for k in wa) < WEIGHT_ATOL
    assert json.loads((runs / "two" / "summary.json").read_text())["ranks"] == 2


def test_rank_share_takes_disjoint_rows_and_drops_unneeded_padding():
    lengths = [3, 5, 2, 4, 6, 1]  # rows of a global batch padded to 6 columns
    mask = np.array([[1] * n + [0] * (6 - n) for n in lengths])
    batch = {"input_ids": np.arange(36).reshape(6, 6), "attention_mask": mask, "next_sentence_label": np.arange(6)}
    parts = [rank_share(batch, r, 3) for r in range(3)]
    # Every third row: a batch sorted by length is shared evenly, not short rows to one rank and long to another.
    assert [p["next_sentence_label"].tolist() for p in parts] == [[0, 3], [1, 4], [2, 5]]
    assert [p["input_ids"].shape for p in parts] == [(2, 4), (2, 6), (2, 2)]
    assert np.array_equal(parts[1]["input_ids"], batch["input_ids"][[1, 4], :6])
    assert rank_share(batch, 0, 1) is batch


def test_sigterm_ends_every_rank_as_ctrl_c_does(corpus, tmp_path):
    # What a scheduler's time limit sends to every process of the job: each rank stops as on Ctrl-C, rank 0 says
    # how to resume and removes the shared folder, and no process is left.
    runs = tmp_path / "runs"
    args = cli_args(str(corpus), str(runs), "term", config="tiny", seq_len=32, batch_size=8, steps=100000,
                    eval_every=100000, save_every=5, procs=2)
    env = {k: v for k, v in mpi_env().items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    job, out, err, shared = terminate_when([sys.executable, *map(str, args)], lambda: latest_checkpoint(
        runs / "term") is not None, env)
    assert job.returncode == 130, err
    assert "the latest checkpoint is" in out + err and f"--resume {runs / 'term'}" in out + err
    assert err.strip().splitlines()[-1] == "minibert pretrain: interrupted"
    assert_ended_cleanly(job, shared)


def test_an_in_process_run_puts_the_sigterm_handler_back(corpus, tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    args = cli_args(str(corpus), str(tmp_path / "runs"), "inproc", config="tiny", seq_len=32, batch_size=8, steps=2,
                    eval_every=2, save_every=2, procs=1)
    assert main([str(a) for a in args[2:]]) == 0  # (without "-m minibert")
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_bad_rank_time_limit_is_refused_before_any_rank_starts(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINIBERT_RANK_TIMEOUT", "soon")
    args = cli_args(str(corpus), str(tmp_path / "runs"), "bad", config="tiny", seq_len=32, batch_size=8, steps=2,
                    procs=2)
    assert main([str(a) for a in args[2:]]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("minibert pretrain: error: MINIBERT_RANK_TIMEOUT='soon': expected a number of seconds")
    assert not (tmp_path / "runs" / "bad").exists()
