"""Data-parallel training across processes and machines with MPI (mpi4py), and the one-process stand-in.

    mpiexec -n 4 minibert pretrain ...        (or srun under Slurm)

Every rank holds the whole model. Each step, every rank draws the same global batch (same data order, same
masks: the single-process random streams), keeps its own rows of it, runs forward and backward on them, and
the gradients are summed over the ranks with ONE Allreduce over the model's flat gradient buffer
(`model.grads.buffer`, see minibert/flat.py). The loss of each rank is weighted so that this sum is exactly the
single-process gradient (see pretrain.py). Every rank then takes the same AdamW step, so the weights stay
identical; `check_identical` verifies that cheaply (a CRC32 of the weights) at every evaluation and checkpoint.

The training loop talks to a communicator: `LocalCommunicator` (one process; every operation a no-op) or
`MPICommunicator`. `communicator()` picks one: MPI only when a launcher (mpiexec, srun) started this process,
so a plain `minibert pretrain` never imports mpi4py. The library never requires MPI.

A rank that fails must not leave the others blocked in a collective forever: `abort_on_error` turns an error
on any rank into MPI_Abort, which ends every rank of the job (and mpiexec) at once. A rank killed outright
(kill -9) is noticed by the process manager (mpiexec's hydra, srun), which then ends the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

import numpy as np

from minibert.training.rank_checks import checksum, ranks_differ, report_rank_error

INSTALL_HINT = "pip install 'minibert[mpi]'  (mpi4py and the mpich wheel: no root needed)"

# How launchers tell a process how many processes they started: MPICH/Intel MPI (hydra), Open MPI, MVAPICH,
# Slurm's srun (per job step: a batch script itself, outside srun, is not a parallel launch).
LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")


def launcher_size() -> tuple[int, str | None]:
    """(number of processes the launcher says it started, the variable that says so); (1, None) if none."""
    for name in LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 1:
            return int(value), name
    return 1, None


def check_divisible(batch_size: int, size: int) -> None:
    if batch_size % size:
        raise ValueError(f"--batch-size {batch_size} (the global batch) must be divisible by the number of ranks "
                         f"({size}): each rank takes an equal share of every batch")


def rank_share(batch: dict, rank: int, size: int) -> dict:
    """Rank `rank`'s rows of a global batch (B rows -> B/size: rows rank, rank + size, ...), without the padding
    columns no row of the share needs (collate pads on the right; padding changes no result, it only costs time)."""
    if size == 1:
        return batch
    # Every size-th row from row `rank`: grouped batches are sorted by length, so contiguous halves would give
    # one rank all the short rows and make the others wait for it at every step.
    part = {k: v[rank::size] for k, v in batch.items()}
    T = max(1, int(part["attention_mask"].sum(axis=1).max()))  # longest sequence of the share
    return {k: v[:, :T] if v.ndim == 2 else v for k, v in part.items()}


class LocalCommunicator:
    """One process: rank 0 of 1. Every collective is a no-op, so the training loop has one code path."""

    rank, size, is_root = 0, 1, True
    launch_hint = ""  # what to type before `minibert ...` to start the same job again
    ranks_are = "ranks"  # what the log calls them
    allreduce_seconds = 0.0
    allreduce_calls = 0

    def allreduce_sum_(self, buffer: np.ndarray) -> np.ndarray:
        return buffer

    def reduce_scatter_sum_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        return buffer

    def allgather_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        return buffer

    def gather_to_root(self, part: np.ndarray, bounds: list[int], row: int = 0) -> np.ndarray | None:
        return part

    def keep_in_shared_row(self, arrays) -> None:
        pass

    def share_weights(self, arrays) -> None:
        pass

    def share_frozen(self, arrays) -> None:
        pass

    def patient(self):
        return contextlib.nullcontext()

    def broadcast(self, value, root: int = 0):
        return value

    def barrier(self) -> None:
        pass

    def check_identical(self, array: np.ndarray, what: str) -> None:
        pass

    def finish(self, code: int) -> int:
        return code

    def abort(self, code: int = 1) -> None:
        raise SystemExit(code)

    @contextlib.contextmanager
    def abort_on_error(self, prefix: str):
        yield


class MPICommunicator:
    """MPI_COMM_WORLD through mpi4py. Large buffers (the gradients) go through the buffer interface (no copy,
    no pickling); small Python values are sent as JSON text."""

    def __init__(self, comm=None):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.is_root = self.rank == 0
        self.launch_hint = f"mpiexec -n {self.size} "
        self.ranks_are = "ranks"
        self.allreduce_seconds = 0.0  # time spent in allreduce_sum_ (waiting for slower ranks included)
        self.allreduce_calls = 0
        self.comm.Barrier()  # every rank of every machine is past MPI_Init, where the ranks of a machine map ...
        forget_shared_memory_names()  # ... its shared-memory file: from here on, nobody opens it by name

    def allreduce_sum_(self, buffer: np.ndarray) -> np.ndarray:
        """Sum `buffer` (contiguous) over all ranks, in place; every rank gets the same result."""
        t = time.perf_counter()
        self.comm.Allreduce(self.MPI.IN_PLACE, buffer, op=self.MPI.SUM)
        self.allreduce_seconds += time.perf_counter() - t
        self.allreduce_calls += 1
        return buffer

    def reduce_scatter_sum_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        """Sum `buffer` (1-D) over all ranks, but only this rank's columns bounds[rank]:bounds[rank + 1] (the
        rest of `buffer` is left as it was)."""
        t = time.perf_counter()
        lo, hi = bounds[self.rank], bounds[self.rank + 1]
        mine = np.empty(hi - lo, dtype=buffer.dtype)
        self.comm.Reduce_scatter(buffer, mine, recvcounts=np.diff(bounds).tolist(), op=self.MPI.SUM)
        buffer[lo:hi] = mine
        self.allreduce_seconds += time.perf_counter() - t
        self.allreduce_calls += 1
        return buffer

    def allgather_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        """Every rank's columns bounds[r]:bounds[r + 1] of `buffer` (1-D), as rank r has them, on every rank."""
        t = time.perf_counter()
        self.comm.Allgatherv(self.MPI.IN_PLACE, [buffer, (np.diff(bounds).tolist(), bounds[:-1])])
        self.allreduce_seconds += time.perf_counter() - t
        return buffer

    def keep_in_shared_row(self, arrays) -> None:
        """(ProcsCommunicator keeps gradients in shared memory; MPI sums from the rank's own buffer.)"""

    def share_weights(self, arrays) -> None:
        """(ProcsCommunicator keeps one copy of the weights for all ranks; MPI ranks may be on other machines:
        each keeps its own, and allgather_ sends the updated parts.)"""

    def share_frozen(self, arrays) -> None:
        """(ProcsCommunicator keeps one copy of a distillation's teacher for all ranks; MPI ranks keep their own.)"""

    def patient(self):
        """(Only ProcsCommunicator limits how long a rank waits for another; MPI waits as long as it takes.)"""
        return contextlib.nullcontext()

    def gather_to_root(self, part: np.ndarray, bounds: list[int], row: int = 0) -> np.ndarray | None:
        """Rank 0: the whole array whose columns bounds[r]:bounds[r + 1] rank r holds as `part`; others: None.
        (`row` matters to ProcsCommunicator only.)"""
        whole = np.empty(bounds[-1], dtype=part.dtype) if self.is_root else None
        self.comm.Gatherv(np.ascontiguousarray(part), [whole, (np.diff(bounds).tolist(), bounds[:-1])]
                          if self.is_root else None, root=0)
        return whole

    def broadcast(self, value, root: int = 0):
        """`value` as rank `root` has it (JSON-serialisable), on every rank."""
        data = np.frombuffer(json.dumps(value).encode(), dtype=np.uint8) if self.rank == root else None
        length = np.array([len(data) if data is not None else 0], dtype=np.int64)
        self.comm.Bcast(length, root=root)
        buffer = data.copy() if data is not None else np.empty(int(length[0]), dtype=np.uint8)
        self.comm.Bcast(buffer, root=root)
        return json.loads(buffer.tobytes().decode())

    def barrier(self) -> None:
        self.comm.Barrier()

    def check_identical(self, array: np.ndarray, what: str) -> None:
        """Raise on every rank if `array` (e.g. the weights) is not bit-for-bit the same on all ranks."""
        crc = checksum(array)
        extremes = np.array([crc, -crc], dtype=np.int64)
        self.comm.Allreduce(self.MPI.IN_PLACE, extremes, op=self.MPI.MAX)
        if extremes[0] != -extremes[1]:
            raise ranks_differ(what, self.size, -int(extremes[1]), int(extremes[0]))

    def finish(self, code: int) -> int:
        """This rank's exit status (mpiexec gathers the job's)."""
        return code

    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (MPI_Abort): the others may be waiting in a collective."""
        sys.stdout.flush()
        sys.stderr.flush()
        time.sleep(0.3)  # let the launcher forward this rank's last lines: MPI_Abort tears its streams down at once
        self.comm.Abort(code)
        os._exit(code)  # (MPI_Abort may return before the process manager ends this rank: it must not go on)

    @contextlib.contextmanager
    def abort_on_error(self, prefix: str):
        """Any exception on this rank: one line naming the rank (a traceback for unexpected errors), then
        MPI_Abort, so no rank waits forever for one that has given up."""
        try:
            yield
        except BaseException as e:  # noqa: BLE001 - every error must end the job, Ctrl-C and SystemExit included
            if isinstance(e, SystemExit) and not e.code:
                raise
            self.abort(report_rank_error(e, prefix, self.rank, self.size))


def forget_shared_memory_names() -> None:
    """Remove the names of the shared-memory files this process has mapped from MPICH (/dev/shm/mpich_shm_*).

    MPICH keeps the memory its ranks on one machine share as a 2 MB file in /dev/shm, and removes it in
    MPI_Finalize. A job that ends otherwise (MPI_Abort after an error, a rank killed) never gets there, and the
    file would hold its memory until the machine restarts. Once every rank has mapped it, its name is no longer
    needed: removed now, as a temporary file is unlinked once open, the memory stays shared while mapped and goes
    back to the system when the last rank ends, however it ends. (Linux only: elsewhere there is no /proc/self/maps
    to read, and nothing is removed.)"""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(maxsplit=5)[-1].strip() for line in maps if "/dev/shm/mpich_shm_" in line}
    except OSError:
        return
    for path in paths:
        with contextlib.suppress(FileNotFoundError):  # another rank of this machine removed it first
            os.unlink(path)


def communicator():
    """The communicator for this process: a rank of `--procs N` (training/procs.py), MPI when a launcher started
    several processes, else local.

    Started by mpiexec/srun without mpi4py: an ImportError with the install hint (the CLI prints it as one line
    and exits with status 2), rather than N independent runs writing over each other.
    """
    from minibert.training.procs import ProcsCommunicator, in_rank
    if in_rank():  # started by `minibert pretrain --procs N` (training/procs.py)
        return ProcsCommunicator.from_environment()
    size, variable = launcher_size()
    if size == 1:
        return LocalCommunicator()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise ImportError(f"started as one of {size} processes ({variable}={size}: mpiexec or srun) but mpi4py is "
                          f"not installed: {INSTALL_HINT}; or run without mpiexec") from None
    comm = MPICommunicator()
    if comm.size != size:
        raise ImportError(f"the launcher started {size} processes ({variable}={size}) but mpi4py sees {comm.size}: "
                          f"mpi4py uses a different MPI library than the mpiexec that started it (use the mpiexec "
                          f"installed with mpi4py, e.g. from the mpich wheel)")
    return comm
