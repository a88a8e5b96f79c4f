"""minibert's own launcher and communicator for data-parallel ranks on one machine (minibert/training/procs.py).

Whole training runs on ranks it starts are in test_distributed.py (beside the same runs under mpiexec); here:
how many processes `--procs` picks, the collectives on 3 ranks, and how the launcher ends a job.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import minibert.training.procs as procs
from minibert.cli import main
from minibert.training.procs import resolve_procs

pytestmark = pytest.mark.usefixtures("leaves_no_shared_memory")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120  # a job here takes ~2 s; the limit only has to catch a hang


@pytest.fixture
def unpinned(monkeypatch):
    """No BLAS thread count in the environment (as on a user's machine) and 4 usable cores."""
    for name in procs.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(procs, "usable_cores", lambda: 4)


def test_auto_takes_two_processes_on_a_multicore_machine(unpinned):
    assert resolve_procs("auto", 16, None) == 2
    assert resolve_procs(None, 16, None) == 2


def test_auto_stays_in_one_process_when_it_should(unpinned, monkeypatch):
    assert resolve_procs("auto", 15, None) == 1  # an odd batch cannot be shared evenly
    assert resolve_procs("auto", 16, "--baseline-only trains no BERT") == 1
    monkeypatch.setattr(procs, "usable_cores", lambda: 1)
    assert resolve_procs("auto", 16, None) == 1
    monkeypatch.setattr(procs, "usable_cores", lambda: 4)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")  # the user chose the threads: leave the run to them
    assert resolve_procs("auto", 16, None) == 1


def test_a_count_that_cannot_work_is_refused_with_the_reason(unpinned):
    assert resolve_procs("1", 15, "one process only") == 1 and resolve_procs("3", 15, None) == 3
    with pytest.raises(ValueError, match=r"--batch-size 16 .* divisible by --procs 3"):
        resolve_procs("3", 16, None)
    with pytest.raises(ValueError, match=r"--procs 2: --baseline-only trains no BERT"):
        resolve_procs("2", 16, "--baseline-only trains no BERT")
    with pytest.raises(ValueError, match=r"--procs 'two': expected a number of processes or 'auto'"):
        resolve_procs("two", 16, None)
    with pytest.raises(ValueError, match=r"--procs 0: expected at least 1"):
        resolve_procs("0", 16, None)


def test_the_command_becomes_the_launcher_of_its_ranks(unpinned, monkeypatch, tmp_path, capsys):
    calls = []
    # (the real one replaces the process by rank 0 and never returns)
    monkeypatch.setattr(procs, "become_rank0", lambda command, n: calls.append((command, n)) or sys.exit(0))
    args = ["pretrain", "--corpus", "ptb", "--runs-dir", str(tmp_path), "--quiet"]
    with pytest.raises(SystemExit):
        main(args)
    assert calls == [([sys.executable, "-m", "minibert", *args], 2)]  # the same command, run by each rank
    assert main([*args, "--batch-size", "15", "--procs", "2"]) == 2
    assert "--batch-size 15 (the global batch) must be divisible by --procs 2" in capsys.readouterr().err
    assert len(calls) == 1 and not any(tmp_path.iterdir())  # refused before any work


RANK0 = """
import json, os, sys
from minibert.training.distributed import communicator
comm = communicator()
out, mode = sys.argv[1], sys.argv[2]
with open(f"{out}/rank{comm.rank}.json", "w") as f:
    json.dump({"pid": os.getpid(), "parent": os.getppid(), "threads": os.environ["OPENBLAS_NUM_THREADS"],
               "workdir": comm.workdir}, f)
code = 0
try:
    with comm.abort_on_error("job"):
        comm.barrier()
        if mode == "raise" and comm.rank == 1:
            raise ValueError("rank 1 cannot read its file")
        comm.barrier()  # rank 0 waits here for a rank that may be gone
        code = int(mode) if comm.rank == 1 else 0
except SystemExit as e:
    code = e.code
sys.exit(comm.finish(code))
"""


@pytest.mark.parametrize("rank1, status", [("0", 0), ("3", 3), ("raise", 2)])
def test_the_starting_process_becomes_rank_0_and_reports_the_job(tmp_path, rank1, status):
    script = tmp_path / "ranks.py"
    script.write_text(RANK0)
    job = start_as_rank0(script, tmp_path, rank1)
    code, _, err = finish(job)
    # Rank 0 waited for rank 1 and passed on its status, also when it stopped because rank 1 had (ValueError: 2).
    assert code == status, err
    if rank1 == "raise":  # one line, from the rank that failed
        assert err.strip().splitlines() == ["job (rank 1 of 2): error: rank 1 cannot read its file; ending all ranks"]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert ranks[0]["pid"] == job.pid  # no process left only waiting: the starting one is rank 0
    assert ranks[1]["parent"] == job.pid
    assert [r["threads"] for r in ranks] == ["1", "1"]  # rank 0 too got its share of the BLAS threads
    assert not Path(ranks[0]["workdir"]).exists()  # rank 0 removed the shared folder


def start_as_rank0(script: Path, *args, new_session=False):
    """`python SCRIPT ARGS` as 2 ranks started the way `minibert pretrain --procs 2` starts them: this child
    process starts rank 1, then becomes rank 0 (become_rank0)."""
    command = [sys.executable, str(script), *map(str, args)]
    start = f"from minibert.training.procs import become_rank0; become_rank0({command!r}, 2, threads=1)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", start], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=new_session)


# Run from a shell's background (`cmd &`, as under nohup or some CI runners) the tests start with Ctrl-C
# (SIGINT) ignored, and every process they start inherits that, as it should: a background job ignores the
# terminal's Ctrl-C. A test of Ctrl-C starts its job through this, which puts SIGINT's default back first.
WITH_CTRL_C = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
               "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")


def run_ranks(n, script: Path, *args, new_session=False, ctrl_c=False):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    start = [sys.executable, "-c", WITH_CTRL_C] if ctrl_c else [sys.executable]
    return subprocess.Popen([*start, "-m", "minibert.training.procs", "-n", str(n), sys.executable,
                             str(script), *map(str, args)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=new_session)


def finish(job):
    try:
        out, err = job.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        raise
    return job.returncode, out, err


COLLECTIVES = """
import json, sys
import numpy as np
from minibert.training.distributed import communicator
comm = communicator()
out = sys.argv[1]
a = np.linspace(-1, 1, 1001, dtype=np.float32) * (comm.rank + 1) / 3  # not a multiple of 3: ragged shares
b = np.array([comm.rank, 0.5])
comm.allreduce_sum_(a)
comm.allreduce_sum_(b)
comm.allreduce_sum_(a)  # again, through the same shared area
told = comm.broadcast({"from": comm.rank, "plan": [1, 2]} if comm.is_root else None)
np.save(f"{out}/a{comm.rank}.npy", a)
with open(f"{out}/r{comm.rank}.json", "w") as f:
    json.dump({"b": b.tolist(), "told": told, "size": comm.size, "calls": comm.allreduce_calls}, f)
"""


def test_three_ranks_sum_to_the_same_bits_and_hear_rank_0(tmp_path):
    script = tmp_path / "collectives.py"
    script.write_text(COLLECTIVES)
    code, _, err = finish(run_ranks(3, script, tmp_path))
    assert code == 0, err
    parts = [np.linspace(-1, 1, 1001, dtype=np.float32) * (r + 1) / 3 for r in range(3)]
    once = (parts[0] + parts[1]) + parts[2]  # the sum in rank order
    twice = (once + once) + once  # the second sum: every rank then holds `once`
    results = [np.load(tmp_path / f"a{r}.npy") for r in range(3)]
    assert all(np.array_equal(x, twice) for x in results)
    for r in range(3):
        record = json.loads((tmp_path / f"r{r}.json").read_text())
        assert record == {"b": [3.0, 1.5], "told": {"from": 0, "plan": [1, 2]}, "size": 3, "calls": 3}


FROZEN = """
import json, sys
import numpy as np
from minibert.flat import FlatArrays
from minibert.training.distributed import communicator
comm = communicator()
arrays = FlatArrays({"w": (3, 4), "b": (5,)}, np.float32)
arrays.buffer[:] = np.arange(17)
comm.share_frozen(arrays)  # (a distillation's teacher)
try:
    arrays["w"][0, 0] = -1
    writable = True
except ValueError:
    writable = False
mapped = [line for line in open("/proc/self/maps") if "frozen-float32-17" in line]
with open(f"{sys.argv[1]}/r{comm.rank}.json", "w") as f:
    json.dump({"b": arrays["b"].tolist(), "writable": writable, "mapped": len(mapped), "intact": arrays.intact()}, f)
"""


def test_frozen_arrays_are_one_read_only_copy_for_every_rank(tmp_path):
    script = tmp_path / "frozen.py"
    script.write_text(FROZEN)
    code, _, err = finish(run_ranks(2, script, tmp_path))
    assert code == 0, err
    for r in range(2):
        record = json.loads((tmp_path / f"r{r}.json").read_text())
        # rank 0's values, read from the shared file each rank maps (deleted once mapped), which none may change
        assert record == {"b": [12.0, 13.0, 14.0, 15.0, 16.0], "writable": False, "mapped": 1, "intact": True}


FAILING = """
import sys, time
from minibert.training.distributed import communicator
comm = communicator()
with comm.abort_on_error("job"):
    comm.barrier()
    if comm.rank == 2:
        raise ValueError("rank 2 cannot read its file")
    comm.barrier()  # ranks 0 and 1 wait here for a rank that is gone
"""


def test_an_error_on_one_rank_stops_every_rank_with_one_line(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    t = time.monotonic()
    code, _, err = finish(run_ranks(3, script))
    assert code != 0 and time.monotonic() - t < procs.GRACE_SECONDS + 30  # not the launcher's time-out: at once
    assert err.strip().splitlines() == ["job (rank 2 of 3): error: rank 2 cannot read its file; ending all ranks"]


INTERRUPTIBLE = """
import sys, time
from pathlib import Path
from minibert.training.distributed import communicator
comm = communicator()
with comm.abort_on_error("job"):
    comm.barrier()
    Path(sys.argv[1], f"ready{comm.rank}").touch()
    while True:
        time.sleep(0.05)
        comm.barrier()
"""


def test_ctrl_c_ends_the_job_with_one_line_and_status_130(tmp_path):
    script = tmp_path / "interruptible.py"
    script.write_text(INTERRUPTIBLE)
    job = run_ranks(2, script, tmp_path, new_session=True, ctrl_c=True)
    deadline = time.monotonic() + TIMEOUT
    while not all((tmp_path / f"ready{r}").exists() for r in range(2)):
        assert time.monotonic() < deadline and job.poll() is None, job.stderr.read() if job.poll() else "no start"
        time.sleep(0.05)
    os.killpg(job.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: every process of the group
    try:
        _, err = job.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:  # say what the processes were at (SigIgn showed the background case above)
        state = group_signal_state(job.pid)
        os.killpg(job.pid, signal.SIGKILL)
        pytest.fail(f"the job did not end after Ctrl-C; its processes:\n{state}")
    assert job.returncode == 130
    assert err.strip().splitlines() == ["job: interrupted"]


def group_signal_state(pgid):
    """Each process of the group: its state, and which signals it blocks, ignores and catches (/proc)."""
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[-80:]
        except (OSError, ValueError):
            continue
        lines.append(f"{pid} {' '.join(f'{k}={fields[k].strip()}' for k in ('State', 'SigBlk', 'SigIgn', 'SigCgt'))} "
                     f"{command}")
    return "\n".join(lines)


HANGING = """
import signal, sys, time
from minibert.training.distributed import communicator
def interrupt(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, interrupt)  # as minibert pretrain does
comm = communicator()
try:
    with comm.abort_on_error("job"):
        comm.barrier()
        if comm.rank == int(sys.argv[1]):
            time.sleep(600)  # alive, but never answers again
        comm.barrier()
except SystemExit as e:  # as minibert pretrain does: rank 0 waits for the others, removes the shared folder
    sys.exit(comm.finish(e.code))
sys.exit(comm.finish(0))
"""


@pytest.mark.parametrize("hung", [1, 0])
def test_a_rank_that_hangs_alive_ends_the_job_with_one_line(tmp_path, monkeypatch, hung):
    # Rank 0 waits 1.5 s, the others twice that: rank 0 names a hung rank 1, and rank 1 names a hung rank 0.
    monkeypatch.setenv(procs.ENV_TIMEOUT, "1.5")
    script = tmp_path / "hanging.py"
    script.write_text(HANGING)
    t = time.monotonic()
    code, _, err = finish(run_ranks(2, script, hung, new_session=True))
    assert code == 2 and time.monotonic() - t < 2 * procs.GRACE_SECONDS + 30  # not the test's time-out
    silent = ("rank 1 of 2 sent nothing for 1.5 s" if hung
              else "rank 0 of 2 (it waits for every rank) sent nothing for 3 s")
    waiter = 1 - hung
    assert err.strip().splitlines()[0] == (f"job (rank {waiter} of 2): error: {silent}: it seems to hang (set "
                                           f"MINIBERT_RANK_TIMEOUT to wait longer); ending all ranks")


def test_a_hung_rank_0_is_ended_by_the_rank_that_waits_for_it(tmp_path, monkeypatch):
    # Under become_rank0 (what `minibert pretrain --procs N` does) rank 0 is the other ranks' parent, and no
    # launcher is left to end it: the rank that times out on it sends it SIGTERM (which the CLI turns into Ctrl-C)
    # and stops; rank 0 then waits for it and removes the shared folder.
    monkeypatch.setenv(procs.ENV_TIMEOUT, "1.5")
    script = tmp_path / "hanging.py"
    script.write_text(HANGING)
    job = start_as_rank0(script, 0, new_session=True)
    shared, deadline = None, time.monotonic() + TIMEOUT
    while shared is None and job.poll() is None and time.monotonic() < deadline:  # rank 0's, once it is exec'd
        with contextlib.suppress(OSError):
            values = Path(f"/proc/{job.pid}/environ").read_bytes().split(b"\0")
            shared = next((v.split(b"=", 1)[1].decode() for v in values if v.startswith(b"MINIBERT_PROCS_DIR=")),
                          None)
        time.sleep(0.02)
    t = time.monotonic()
    code, _, err = finish(job)
    assert code == 130 and time.monotonic() - t < 2 * procs.GRACE_SECONDS + 30
    assert err.strip().splitlines() == ["job (rank 1 of 2): error: rank 0 of 2 (it waits for every rank) sent "
                                        "nothing for 3 s: it seems to hang (set MINIBERT_RANK_TIMEOUT to wait "
                                        "longer); ending all ranks", "job: interrupted"]
    assert shared is not None and not Path(shared).exists()


RANK0_KILLED = """
import json, os, sys, time
from pathlib import Path
from minibert.training.distributed import communicator
comm = communicator()
with comm.abort_on_error("job"):
    Path(sys.argv[1], f"rank{comm.rank}.json").write_text(json.dumps({"pid": os.getpid(), "workdir": comm.workdir}))
    comm.allreduce_sum_(__import__("numpy").ones(8))  # the shared folder holds a file now
    if comm.is_root:
        time.sleep(600)  # killed outright here
    comm.barrier()  # rank 1 waits for rank 0 here
sys.exit(comm.finish(0))
"""


def gone(pid):
    """The process has ended (a zombie whose parent died may wait a while to be reaped: it has ended too)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_rank_0_killed_outright_leaves_no_shared_folder(tmp_path):
    # `minibert pretrain --procs 2` killed with kill -9: rank 0 (the process the user started) cannot clean up,
    # so rank 1, which sees it gone, ends and removes the shared folder in /dev/shm.
    script = tmp_path / "killed.py"
    script.write_text(RANK0_KILLED)
    job = start_as_rank0(script, tmp_path, new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not all((tmp_path / f"rank{r}.json").exists() for r in (0, 1)) and time.monotonic() < deadline:
            assert job.poll() is None, job.communicate()
            time.sleep(0.02)
        time.sleep(0.5)  # both past the sum: rank 0 asleep, rank 1 waiting for it
        ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
        assert Path(ranks[0]["workdir"]).is_dir()
        job.kill()  # rank 0 only: rank 1 is left to notice
        job.communicate()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)  # rank 1 too, if the test failed before it ended
    while not gone(ranks[1]["pid"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone(ranks[1]["pid"])
    assert not Path(ranks[0]["workdir"]).exists()


@pytest.mark.parametrize("value, limit", [("", procs.RANK_TIMEOUT), ("90", 90.0), ("inf", None), ("1e12", None)])
def test_the_time_limit_is_read_from_the_environment(monkeypatch, value, limit):
    monkeypatch.setenv(procs.ENV_TIMEOUT, value)
    assert procs.rank_timeout() == limit


@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan"])
def test_a_bad_time_limit_is_refused(monkeypatch, value):
    monkeypatch.setenv(procs.ENV_TIMEOUT, value)
    with pytest.raises(ValueError, match="MINIBERT_RANK_TIMEOUT=.*: expected a number of seconds"):
        procs.rank_timeout()
