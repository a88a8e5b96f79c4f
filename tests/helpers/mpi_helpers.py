"""Starting test jobs as ranks: by mpiexec (skipped with the install hint where MPI is missing) or by minibert's
own launcher (python -m minibert.training.procs, always available)."""

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from minibert.training.distributed import INSTALL_HINT

# Seconds for one mpiexec job. A job takes 1-5 s, but niced on a 2-core machine under load 15 it got ~5% of a
# core and took 30 s: the limits only have to catch a hang (a job that would never end).
TIMEOUT = 300
PROBE_TIMEOUT = 120


def find_mpiexec():
    """The mpiexec installed with the mpich wheel next to this Python (it matches mpi4py), else one on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def run_job(command, timeout=TIMEOUT, env=None):
    """Run an mpiexec job in its own process group; past `timeout` the whole group (mpiexec, its proxies and
    every rank) is killed and the test fails: a hang must not outlive the test."""
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        stdout, stderr = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        job.communicate()
        raise
    return subprocess.CompletedProcess(command, job.returncode, stdout, stderr)


def why_no_mpi():
    """None when mpiexec starts 2 ranks that mpi4py sees as one job; else why not (the reason to skip)."""
    if MPIEXEC is None or importlib.util.find_spec("mpi4py") is None:
        return f"MPI is not installed: {INSTALL_HINT}"
    try:
        probe = run_job([MPIEXEC, "-n", "2", sys.executable, "-c", "from mpi4py import MPI; c = MPI.COMM_WORLD; "
                         "n = c.allreduce(1); print(n) if c.rank == 0 else None"], timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{MPIEXEC} -n 2 did not start 2 ranks in {PROBE_TIMEOUT} s; {INSTALL_HINT}"
    if probe.stdout.split() != ["2"]:  # e.g. an mpiexec of another MPI than mpi4py's: 2 jobs of 1 rank
        return f"{MPIEXEC} does not start 2 mpi4py ranks ({probe.stderr.strip()[-200:]!r}); {INSTALL_HINT}"
    return None


MPIEXEC = find_mpiexec()
NO_MPI = why_no_mpi()
requires_mpi = pytest.mark.skipif(NO_MPI is not None, reason=str(NO_MPI))


def ranks(n, launcher, *args, timeout=TIMEOUT, env=None):
    """`python ARGS` as n ranks, started by mpiexec or by minibert's launcher."""
    start = [MPIEXEC, "-n", str(n)] if launcher == "mpiexec" else \
        [sys.executable, "-m", "minibert.training.procs", "-n", str(n)]
    return run_job([*start, sys.executable, *map(str, args)], timeout, env)


def terminate_when(command, ready, env=None):
    """Start `command` (a `--procs 2` training command) in its own process group, wait until `ready()`, then
    send SIGTERM to every process of it, as a scheduler's time limit does. Returns (the finished job, its stdout,
    its stderr, the shared folder of --procs it had or None where /proc cannot say)."""
    import time
    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not ready():  # training is under way on both ranks
            assert time.monotonic() < deadline and job.poll() is None, job.stderr.read() if job.poll() else "slow"
            time.sleep(0.1)
        # Rank 0 is the starting process, exec'd with the shared folder in its environment.
        environ = Path(f"/proc/{job.pid}/environ")
        shared = dict(v.split("=", 1) for v in environ.read_text().split("\0") if "=" in v).get(
            "MINIBERT_PROCS_DIR") if environ.exists() else None
        assert Path(shared).is_dir() if shared else not sys.platform.startswith("linux")
        os.killpg(job.pid, signal.SIGTERM)
        out, err = job.communicate(timeout=TIMEOUT)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
        raise
    return job, out, err, shared


def assert_ended_cleanly(job, shared):
    """The job stopped as on Ctrl-C (status 130), removed its shared folder and left no process behind."""
    assert job.returncode == 130
    if shared is not None:
        assert not Path(shared).exists()  # the shared folder is gone
    # No process of the job is left: rank 0 waits for the other ranks before it ends. (One CI run saw a process
    # of the group at the instant rank 0 had ended; 32 runs by hand, with and without load, did not: allow a
    # moment, and name what is left if it stays.)
    import time
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(job.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    left = subprocess.run(["ps", "-o", "pid,stat,etime,args", "-g", str(job.pid)], capture_output=True, text=True)
    raise AssertionError(f"processes of the job are left 5 s after it ended:\n{left.stdout}")
