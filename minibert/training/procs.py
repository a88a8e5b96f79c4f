"""Data-parallel training on the cores of one machine, without MPI: `minibert pretrain --procs N`.

    minibert pretrain                      # 2 processes x 1 BLAS thread on a 2-core machine (--procs auto)
    python -m minibert.training.procs -n 2 python my_script.py   # any script that calls communicator()

Why processes: NumPy runs elementwise work (GELU, LayerNorm, softmax, AdamW) on one thread and holds the GIL
between calls, so a second BLAS thread speeds up only the matmuls, about half of a mini step. Two processes of
one BLAS thread each run everything in parallel. Measured on the 2-core machine (benchmarks/mpi_throughput.py,
docs/scaling.md): 1.19x the tokens/s of one process with two threads.

How: the command's own process starts N - 1 copies of the same command (ranks 1..N-1), then becomes rank 0
itself: it replaces its program by a fresh run of the command (exec), with cores / N BLAS threads like the
others (`become_rank0`). No process is left only waiting (a Python process with NumPy loaded is ~40 MB). At
the end rank 0 waits for the other ranks and returns its exit status, or the first failing rank's
(`ProcsCommunicator.finish`). (`python -m minibert.training.procs -n N CMD` instead stays a separate launcher
and runs N copies of CMD.) The ranks run the code path of MPI ranks (training/distributed.py: same global
batch, each rank its rows, one gradient sum per step) through `ProcsCommunicator`:
- Rank 0 holds a Unix socket pair with every other rank. A barrier is one message from each rank to rank 0 and
  one back; broadcasts and the weight checks ride on the same messages.
- A sum over ranks goes through a shared-memory file, one row per rank: each rank writes its row, then adds up
  its 1/N of the columns over all rows (in rank order, so every rank gets the same bits) and writes the sums
  into every row, then copies its row back. The gradients (12 MB for mini) take half of that: each rank keeps
  the sums of its own columns (`reduce_scatter_sum_`), updates its part of the weights with them
  (training/sharded.py) and writes that part into the other ranks' rows, whence they copy it (`allgather_`).
- A rank that dies closes its sockets: the others notice at the next message and stop with one line, and the
  launcher ends what is left. Nothing waits forever for a dead rank. A rank that hangs alive is noticed by
  rank 0 after RANK_TIMEOUT seconds without a message (MINIBERT_RANK_TIMEOUT; 30 minutes by default, far above
  any wait of a training step, an evaluation or a checkpoint; data preparation has no limit), and a hung rank 0
  by the others after twice that (they wait for rank 0, which waits for every rank): the rank that gives up
  says so in one line naming the silent one, and the job ends. A job suspended (Ctrl-Z) for longer than the
  limit counts as hung when it resumes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

from minibert.training.rank_checks import checksum, ranks_differ, report_rank_error

ENV_RANK, ENV_SIZE, ENV_FDS, ENV_DIR = "MINIBERT_PROCS_RANK", "MINIBERT_PROCS_SIZE", "MINIBERT_PROCS_FDS", \
    "MINIBERT_PROCS_DIR"
ENV_CHILDREN = "MINIBERT_PROCS_CHILDREN"  # rank 0 made by become_rank0: the process ids of the other ranks
ENV_SIGINT = "MINIBERT_PROCS_SIGINT"  # rank 0 made by become_rank0: "on" when Ctrl-C is to be turned back on
ENV_RANK0_PID = "MINIBERT_PROCS_RANK0_PID"  # ranks started by become_rank0: rank 0's process id (their parent's)
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
AUTO_PROCS = 2  # measured to win on 2 cores; more processes mean smaller matmuls per process (not measured)
GRACE_SECONDS = 5.0  # after one rank fails, how long the others get to notice and stop by themselves
ENV_TIMEOUT = "MINIBERT_RANK_TIMEOUT"
RANK_TIMEOUT = 1800.0  # seconds without a word from a rank before it counts as hung (MINIBERT_RANK_TIMEOUT)


class PeerLost(RuntimeError):
    """Another rank stopped (it printed why): this rank cannot go on alone."""


class RankTimeout(RuntimeError):
    """Another rank sent nothing for the time limit while this one waited for it: hung, or stopped by hand."""


def usable_cores() -> int:
    """The CPUs this process may run on (taskset, a container's cpuset): one rank per core by default."""
    from minibert.blas import usable_cpu_count
    return usable_cpu_count()


def threads_pinned() -> bool:
    """Whether the user chose the BLAS thread count (then --procs auto leaves the run to them, in one process)."""
    return any(os.environ.get(v, "").strip() for v in THREAD_VARIABLES[:2])


def in_rank() -> bool:
    return ENV_RANK in os.environ


def add_procs_argument(parser, shares: str, one_process_when: str = "") -> None:
    """The --procs option of a training command (pretrain, finetune): `shares` says what each process takes,
    `one_process_when` adds the command's own reasons for auto to stay in one process."""
    group = parser.add_argument_group("processes")
    group.add_argument("--procs", metavar="N", default=None,
                       help=f"processes to train on, each with {shares} (data parallel on this machine, like "
                            f"mpiexec -n N; docs/scaling.md). auto: 2 on a machine with 2 or more cores (faster "
                            f"than one process with 2 threads: NumPy's elementwise work runs on one thread), 1 "
                            f"when OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is set, the batch is odd"
                            f"{one_process_when} [auto]")


def resolve_procs(requested, batch_size: int, single_process_reason: str | None) -> int:
    """How many processes to train on: `requested` ("auto", None or a count) checked against the run.

    single_process_reason: why this run needs one process (e.g. `minibert finetune --baseline-only`), or None."""
    if requested in (None, "auto"):
        if (os.name != "posix" or threads_pinned() or usable_cores() < 2 or single_process_reason
                or batch_size % AUTO_PROCS):
            return 1
        return AUTO_PROCS
    try:
        n = int(requested)
    except ValueError:
        raise ValueError(f"--procs {requested!r}: expected a number of processes or 'auto'") from None
    if n < 1:
        raise ValueError(f"--procs {n}: expected at least 1")
    if n > 1 and single_process_reason:
        raise ValueError(f"--procs {n}: {single_process_reason}")
    if n > 1 and batch_size % n:
        raise ValueError(f"--batch-size {batch_size} (the global batch) must be divisible by --procs {n}: each "
                         f"process takes an equal share of every batch")
    if n > 1 and os.name != "posix":
        raise ValueError(f"--procs {n}: several processes need a POSIX system (Linux, macOS)")
    return n


# ---------------------------------------------------------------------------------------------------- launcher
def launch(command: list[str], size: int, threads: int | None = None) -> int:
    """Run `command` as `size` ranks (fresh processes) and wait for all of them; returns rank 0's exit status,
    or the first failing rank's. threads: BLAS threads per rank (default: usable cores // size, unless the
    environment already sets them)."""
    threads, workdir, pairs = _prepare_ranks(size, threads)
    procs = []
    try:
        for rank in range(size):
            ends = [a for a, _ in pairs] if rank == 0 else [pairs[rank - 1][1]]
            fds = [s.fileno() for s in ends]
            procs.append(subprocess.Popen(command, env=_rank_environment(rank, size, workdir, fds, threads),
                                          pass_fds=fds))
        for a, b in pairs:  # only the ranks hold the ends now: a rank's exit is then seen as end-of-file
            a.close()
            b.close()
        return _wait(procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for a, b in pairs:
            a.close()
            b.close()
        shutil.rmtree(workdir, ignore_errors=True)


def become_rank0(command: list[str], size: int, threads: int | None = None):
    """Start ranks 1..size-1 of `command` (command[0] is the Python executable), then replace this process by
    rank 0 of it (os.execve, so this does not return): the same process id, a fresh interpreter whose BLAS starts
    with its share of the threads. Rank 0 waits for the others at its end (`ProcsCommunicator.finish`)."""
    threads, workdir, pairs = _prepare_ranks(size, threads)
    children, sigint = [], None
    try:
        for rank in range(1, size):
            fd = pairs[rank - 1][1].fileno()
            env = {**_rank_environment(rank, size, workdir, [fd], threads), ENV_RANK0_PID: str(os.getpid())}
            children.append(subprocess.Popen(command, env=env, pass_fds=[fd]))
        for a, b in pairs:
            b.close()  # only rank r holds its end now: rank r's exit is seen as end-of-file
            os.set_inheritable(a.fileno(), True)
        env = _rank_environment(0, size, workdir, [a.fileno() for a, _ in pairs], threads)
        env[ENV_CHILDREN] = ",".join(str(p.pid) for p in children)
        # Ctrl-C while the new rank 0 starts up would kill it before it can wait for the others and clean up:
        # it starts with SIGINT ignored (that survives exec) and turns it back on in from_environment, unless
        # the command was started with SIGINT ignored already (e.g. in the background).
        sigint = signal.getsignal(signal.SIGINT)
        env[ENV_SIGINT] = "ignored" if sigint == signal.SIG_IGN else "on"
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # ranks that end must stay to be waited for (their status)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(command[0], command, env)
    except BaseException:
        if sigint is not None:
            signal.signal(signal.SIGINT, sigint)
        for p in children:
            p.kill()
            p.wait()
        shutil.rmtree(workdir, ignore_errors=True)
        raise


def _prepare_ranks(size: int, threads: int | None) -> tuple[int | None, str, list]:
    """(BLAS threads per rank: cores // size unless the environment sets them, the shared folder, a socket pair
    rank 0 <-> rank r for every other rank)."""
    if threads is None and not threads_pinned():
        threads = max(1, usable_cores() // size)
    workdir = tempfile.mkdtemp(prefix="minibert-procs-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    return threads, workdir, [socket.socketpair() for _ in range(size - 1)]


def _rank_environment(rank: int, size: int, workdir: str, fds: list[int], threads: int | None) -> dict:
    env = {**os.environ, ENV_RANK: str(rank), ENV_SIZE: str(size), ENV_DIR: workdir, ENV_FDS: ",".join(map(str, fds))}
    if threads is not None:
        env.update({v: str(threads) for v in THREAD_VARIABLES})
    return env


def _wait(procs: list[subprocess.Popen]) -> int:
    """Wait for every rank. When one fails, the others get GRACE_SECONDS to stop by themselves (they see its
    sockets close), then are terminated (and killed after GRACE_SECONDS more: a rank that hangs may not heed
    SIGTERM). Ctrl-C reaches every rank directly (same process group): wait for them. The status: the first rank
    seen failing (in rank order among those seen at once), not one this launcher ended; a rank ended by a signal
    counts as 128 + its number."""
    failed_at, interrupted, stopped, failed = None, False, set(), []  # stopped: the ranks this launcher ended
    while True:
        try:
            codes = [p.poll() for p in procs]
            failed += [i for i, c in enumerate(codes) if c not in (None, 0) and i not in failed and i not in stopped]
            if all(c is not None for c in codes):
                break
            if failed_at is None and failed:
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > GRACE_SECONDS * (1 + bool(stopped)):
                for i, p in enumerate(procs):
                    if p.poll() is None:
                        p.kill() if i in stopped else p.terminate()
                        stopped.add(i)
                failed_at = time.monotonic() - GRACE_SECONDS  # the next step, if needed, GRACE_SECONDS later
            time.sleep(0.05)
        except KeyboardInterrupt:
            if interrupted:  # a second Ctrl-C: do not wait any longer
                for p in procs:
                    p.kill()
            interrupted = True
    codes = [128 - c if c < 0 else c for c in (p.returncode for p in procs)]
    if interrupted and codes[0] == 0:
        return 130
    return codes[failed[0]] if failed else next((c for c in codes if c != 0), 0)


def rank_timeout() -> float | None:
    """Seconds a rank waits for another before it counts as hung (MINIBERT_RANK_TIMEOUT, default RANK_TIMEOUT);
    None for no limit ("inf", or more than a week). A bad value raises ValueError (checked before any rank
    starts)."""
    value = os.environ.get(ENV_TIMEOUT, "")
    try:
        seconds = float(value) if value else RANK_TIMEOUT
    except ValueError:
        raise ValueError(f"{ENV_TIMEOUT}={value!r}: expected a number of seconds") from None
    if not seconds > 0:
        raise ValueError(f"{ENV_TIMEOUT}={value!r}: expected a number of seconds above 0 (or inf: no limit)")
    return None if seconds > 7 * 24 * 3600 else seconds


# ---------------------------------------------------------------------------------------------------- ranks
class ProcsCommunicator:
    """One rank of a `launch`: the interface of MPICommunicator (training/distributed.py) over sockets and a
    shared-memory file."""

    launch_hint = ""  # how to start the same job again: `minibert pretrain --resume ...` re-launches by itself
    ranks_are = "processes"  # what the log calls them: the user started one command, not N ranks
    waits_idle = True  # a rank waiting for the others sleeps in a socket read: its core is free meanwhile

    def __init__(self, rank: int, size: int, sockets: list[socket.socket], workdir: str,
                 children: list[int] | None = None, rank0_pid: int | None = None):
        self.rank, self.size, self.is_root = rank, size, rank == 0
        self.children = children or []  # rank 0 made by become_rank0: the other ranks' process ids (to wait for)
        self.rank0_pid = rank0_pid  # the other ranks of become_rank0: rank 0's (to end it if it hangs)
        self.peer_lost = False  # this rank stopped because another one had
        self.sockets = sockets  # rank 0: one per other rank (rank r at index r - 1); others: one, to rank 0
        self.workdir = workdir
        self.areas = {}  # (dtype, n) -> (size, n) shared array: a row per rank (each ends holding the sum)
        self.last_use = {}  # (dtype, n) -> the operation that last used that area (see _enter)
        self.shared_weights = None  # share_weights: the one copy of the weights every rank maps
        limit = rank_timeout()
        # Ranks above 0 wait for rank 0, which waits for every rank: they get twice the limit, so that rank 0 names
        # a hung rank 1.. (and ends the job) before they would blame rank 0.
        self.timeout = None if limit is None else limit * (1 if rank == 0 else 2)
        for sock in sockets:
            sock.settimeout(self.timeout)
        self.allreduce_seconds = 0.0
        self.allreduce_calls = 0

    @classmethod
    def from_environment(cls) -> "ProcsCommunicator":
        """This process's rank, from what `launch` put in its environment (removed, so that commands this rank
        starts are not ranks themselves)."""
        env = os.environ
        rank, size, workdir = int(env.pop(ENV_RANK)), int(env.pop(ENV_SIZE)), env.pop(ENV_DIR)
        fds = [int(f) for f in env.pop(ENV_FDS).split(",") if f]
        children = [int(p) for p in env.pop(ENV_CHILDREN, "").split(",") if p]
        rank0_pid = int(env.pop(ENV_RANK0_PID, "0")) or None
        if env.pop(ENV_SIGINT, None) == "on":  # ignored across become_rank0's exec: Ctrl-C works again from here
            signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in fds:
            os.set_inheritable(fd, False)  # a command this rank starts must not hold its sockets open
        return cls(rank, size, [socket.socket(fileno=fd) for fd in fds], workdir, children, rank0_pid)

    # ---- messages: 8-byte length, then the bytes
    def _send(self, sock: socket.socket, data: bytes, peer: int) -> None:
        try:
            sock.sendall(struct.pack("<Q", len(data)) + data)
        except TimeoutError:  # (a subclass of OSError)
            raise RankTimeout(f"rank {peer} of {self.size} took nothing for {sock.gettimeout():g} s: it seems to "
                              f"hang (set {ENV_TIMEOUT} to wait longer)") from None
        except OSError:  # broken pipe, reset: the peer is gone
            raise PeerLost(f"rank {peer} of {self.size} stopped") from None

    def _recv(self, sock: socket.socket, peer: int) -> bytes:
        def exactly(n):
            buf = bytearray(n)
            view, got = memoryview(buf), 0
            while got < n:
                try:
                    k = sock.recv_into(view[got:])
                except TimeoutError:  # (a subclass of OSError)
                    waits = "" if self.is_root else " (it waits for every rank)"
                    raise RankTimeout(f"rank {peer} of {self.size}{waits} sent nothing for {sock.gettimeout():g} s: "
                                      f"it seems to hang (set {ENV_TIMEOUT} to wait longer)") from None
                except OSError:
                    k = 0
                if k == 0:
                    raise PeerLost(f"rank {peer} of {self.size} stopped")
                got += k
            return bytes(buf)
        return exactly(struct.unpack("<Q", exactly(8))[0])

    def _exchange(self, payload: bytes, combine) -> bytes:
        """Every rank sends `payload` to rank 0, which returns combine([payload of rank 0, 1, ...]) to all."""
        if not self.is_root:
            self._send(self.sockets[0], payload, 0)
            return self._recv(self.sockets[0], 0)
        parts = [payload] + [self._recv(s, r) for r, s in enumerate(self.sockets, start=1)]
        result = combine(parts)
        for r, s in enumerate(self.sockets, start=1):
            self._send(s, result, r)
        return result

    # ---- the communicator interface
    @contextlib.contextmanager
    def patient(self):
        """No time limit on the waits inside the block: for the one wait that may legitimately take hours (the
        other ranks waiting while rank 0 trains a tokenizer on a large corpus)."""
        for sock in self.sockets:
            sock.settimeout(None)
        try:
            yield
        finally:
            for sock in self.sockets:
                sock.settimeout(self.timeout)

    def barrier(self) -> None:
        self._exchange(b"", lambda parts: b"")

    def broadcast(self, value, root: int = 0):
        """`value` as rank `root` has it (JSON-serialisable), on every rank."""
        import json
        mine = json.dumps(value).encode() if self.rank == root else b""
        return json.loads(self._exchange(mine, lambda parts: parts[root]).decode())

    def allreduce_sum_(self, buffer: np.ndarray) -> np.ndarray:
        """Sum `buffer` (contiguous) over all ranks, in place; every rank gets the same bits."""
        t = time.perf_counter()
        flat = buffer.reshape(-1)  # a view: the buffer is contiguous
        area = self._enter(flat.dtype, flat.size, "allreduce")  # (size, n): one row per rank
        area[self.rank] = flat
        self.barrier()  # every row written
        lo, hi = self.rank * flat.size // self.size, (self.rank + 1) * flat.size // self.size
        total = area[0, lo:hi]  # this rank's columns, summed into row 0 ...
        for r in range(1, self.size):  # ... in rank order: the same additions whichever rank does them
            total += area[r, lo:hi]
        for r in range(1, self.size):  # ... and copied into every row: no extra row to map
            area[r, lo:hi] = total
        self.barrier()  # every column summed
        flat[...] = area[self.rank]
        self.allreduce_seconds += time.perf_counter() - t
        self.allreduce_calls += 1
        return buffer

    def keep_in_shared_row(self, arrays) -> None:
        """Move `arrays` (FlatArrays: a model's gradients) into this rank's row of the shared area that sums
        buffers of their size. The backward then writes where `reduce_scatter_sum_` reads: no copy of the whole
        buffer into the area every step, and no private buffer beside the row (12 MB less per rank for mini).
        The row is this rank's to write at any time; other ranks read it only inside the collectives. Other
        collectives on buffers of the same size and dtype use the same area, so they write over these arrays.
        Views of the old buffer taken before (e.g. a sub-model's own copy of the dict entries) are left behind:
        a model with sub-models points them at the moved buffers again (ELECTRA's attach_sub_models)."""
        buf = arrays.buffer
        arrays.move_to(np.asarray(self._area(buf.dtype, buf.size)[self.rank]))  # a plain view of the mapping

    def share_weights(self, arrays) -> None:
        """Put `arrays` (FlatArrays: the model's weights, the same on every rank) in one shared-memory buffer that
        every rank maps and reads, instead of a copy per rank: 12 MB less for mini in all at 2 ranks. Each rank
        then updates its columns in place (training/sharded.py) and `allgather_` of that buffer only waits for
        every rank to be done: nothing to copy. Raises (on every rank) if the ranks' weights differ."""
        self.shared_weights = self._one_copy(arrays, "weights", writable=True)

    def share_frozen(self, arrays) -> None:
        """As share_weights, for arrays no rank ever changes (a distillation's teacher: 91 MB for MiniLM), mapped
        read-only: a rank that wrote to them would fail at once instead of changing every rank's copy. Arrays
        with an entry replaced (not intact, flat.py) stay as they are."""
        if arrays.intact():
            self._one_copy(arrays, "frozen", writable=False)

    def _one_copy(self, arrays, kind: str, writable: bool) -> np.ndarray:
        """Rank 0's values of `arrays` in a file of the shared folder that every rank maps; `arrays` then use it."""
        buf = arrays.buffer
        self.check_identical(buf, "the weights to be shared" if writable else "the frozen arrays to be shared")
        path = os.path.join(self.workdir, f"{kind}-{buf.dtype.name}-{buf.size}")
        if self.is_root:
            with open(path, "wb") as f:
                f.truncate(buf.nbytes)
            np.memmap(path, dtype=buf.dtype, mode="r+", shape=buf.shape)[...] = buf
        self.barrier()  # rank 0's values written
        shared = np.asarray(np.memmap(path, dtype=buf.dtype, mode="r+" if writable else "r", shape=buf.shape))
        self.barrier()  # every rank has mapped it
        if self.is_root:
            os.unlink(path)  # the mappings stay; nothing is left behind if a rank is killed later
        arrays.use_buffer(shared)
        return shared

    def reduce_scatter_sum_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        """Sum `buffer` (1-D) over all ranks, but only this rank's columns bounds[rank]:bounds[rank + 1], which
        end up in `buffer` holding the same bits as `allreduce_sum_` gives there; the rest of `buffer` is left."""
        if self.size == 1:
            return buffer
        t = time.perf_counter()
        area = self._enter(buffer.dtype, buffer.size, "scatter")
        kept = np.may_share_memory(buffer, area[self.rank])  # kept in the row (keep_in_shared_row): no copy
        if not kept:
            area[self.rank] = buffer
        self.barrier()  # every row written
        lo, hi = bounds[self.rank], bounds[self.rank + 1]
        mine = buffer[lo:hi]
        # In rank order, as allreduce_sum_ adds. A buffer kept in row 2 or later would lose its own addend to
        # the first addition: that rank sums into scratch memory first.
        kept = kept and self.rank >= 2
        total = np.empty_like(mine) if kept else mine
        np.add(area[0, lo:hi], area[1, lo:hi], out=total)
        for r in range(2, self.size):
            total += area[r, lo:hi]
        if kept:
            mine[...] = total
        self.allreduce_seconds += time.perf_counter() - t
        self.allreduce_calls += 1
        return buffer

    def allgather_(self, buffer: np.ndarray, bounds: list[int]) -> np.ndarray:
        """Every rank's columns bounds[r]:bounds[r + 1] of `buffer` (1-D), as rank r has them, into every rank's
        `buffer`. Each rank writes its columns into the other ranks' rows and copies the others' from its own
        row, so it reads nothing another rank may be writing."""
        if self.size == 1:
            return buffer
        t = time.perf_counter()
        area = self._enter(buffer.dtype, buffer.size, "gather")  # (also for the shared weights: the next sum's rule)
        if self.shared_weights is not None and np.may_share_memory(buffer, self.shared_weights):
            self.barrier()  # one buffer for all ranks (share_weights): every rank's columns are written there
            self.allreduce_seconds += time.perf_counter() - t
            return buffer
        lo, hi = bounds[self.rank], bounds[self.rank + 1]
        for r in range(self.size):
            if r != self.rank:
                area[r, lo:hi] = buffer[lo:hi]
        self.barrier()  # every rank's columns written
        for r in range(self.size):
            if r != self.rank:
                buffer[bounds[r]:bounds[r + 1]] = area[self.rank, bounds[r]:bounds[r + 1]]
        self.allreduce_seconds += time.perf_counter() - t
        return buffer

    def gather_to_root(self, part: np.ndarray, bounds: list[int], row: int = 0) -> np.ndarray | None:
        """Rank 0: the whole array whose columns bounds[r]:bounds[r + 1] rank r holds as `part`; others: None.
        For checkpoints, which only rank 0 writes. The whole array is row `row` of the shared area itself, not
        a copy, and that row may be rank `row`'s gradient buffer (keep_in_shared_row): every rank must wait at
        a barrier until rank 0 is done with it."""
        if self.size == 1:
            return part
        area = self._enter(part.dtype, bounds[-1], "root")
        area[row, bounds[self.rank]:bounds[self.rank + 1]] = part
        self.barrier()  # every part written
        return area[row] if self.is_root else None

    def _enter(self, dtype: np.dtype, n: int, operation: str) -> np.ndarray:
        """The shared area for `n` entries of `dtype`, once it is safe for `operation` to write into it. A rank may
        leave an operation while another still reads what it needs of the area; the next operation on it waits for
        every rank first (a barrier), except in the two orders the training step uses, which write only where
        the previous operation has finished reading: the sum of the columns, then the update's exchange
        (`reduce_scatter_sum_` writes a rank's own row, read by others only at their columns, which the exchange
        does not write), and the exchange, then the next sum (the exchange reads a rank's own row, which only
        that rank writes next). Each allreduce_sum_ ends reading only a rank's own row, so it may follow itself."""
        key = (np.dtype(dtype).str, n)
        area = self._area(np.dtype(dtype), n)
        if (self.last_use.get(key), operation) not in {(None, "allreduce"), (None, "scatter"), (None, "gather"),
                                                       ("allreduce", "allreduce"), ("scatter", "gather"),
                                                       ("gather", "scatter")}:
            self.barrier()
        self.last_use[key] = operation
        return area

    def _area(self, dtype: np.dtype, n: int) -> np.ndarray:
        key = (dtype.str, n)
        if key not in self.areas:
            path = os.path.join(self.workdir, f"sum-{dtype.name}-{n}")
            if self.is_root:
                with open(path, "wb") as f:
                    f.truncate(self.size * n * dtype.itemsize)
            self.barrier()
            self.areas[key] = np.memmap(path, dtype=dtype, mode="r+", shape=(self.size, n))
            self.barrier()
            if self.is_root:
                os.unlink(path)  # the mappings stay; nothing is left behind if a rank is killed later
        return self.areas[key]

    def check_identical(self, array: np.ndarray, what: str) -> None:
        """Raise on every rank if `array` (e.g. the weights) is not bit-for-bit the same on all ranks."""

        def verdict(parts):
            crcs = [struct.unpack("<Q", p)[0] for p in parts]
            return b"" if len(set(crcs)) == 1 else struct.pack("<QQ", min(crcs), max(crcs))
        result = self._exchange(struct.pack("<Q", checksum(array)), verdict)
        if result:
            raise ranks_differ(what, self.size, *struct.unpack("<QQ", result))

    def finish(self, code: int) -> int:
        """The job's exit status, given this rank's `code`. Rank 0 made by become_rank0 waits for the other ranks
        first (those still running after it failed get GRACE_SECONDS to notice and stop, then are terminated)
        and removes the shared folder. The status: the first failing rank's (in rank order) when rank 0 stopped
        because another rank had, else rank 0's own if not 0, else the first failing rank's. A rank ended by a
        signal counts as 128 + the signal's number, as shells report it."""
        if not self.children:
            return code
        for s in self.sockets:
            s.close()  # a rank still waiting for rank 0 sees it gone and stops
        codes, deadline, terminated = {}, time.monotonic() + GRACE_SECONDS, False
        try:
            while len(codes) < len(self.children):
                for pid in self.children:
                    if pid not in codes:
                        try:
                            done, status = os.waitpid(pid, os.WNOHANG)
                        except ChildProcessError:  # reaped elsewhere: its status is unknown
                            done, status = pid, 0
                        if done:
                            exit_code = os.waitstatus_to_exitcode(status)
                            codes[pid] = 128 - exit_code if exit_code < 0 else exit_code
                if code and terminated != "killed" and time.monotonic() > deadline:
                    for pid in set(self.children) - set(codes):  # SIGTERM, then SIGKILL for a rank that hangs
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL if terminated else signal.SIGTERM)
                    terminated = "killed" if terminated else True
                    deadline = time.monotonic() + GRACE_SECONDS
                time.sleep(0.02)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
        failed = next((codes[p] for p in self.children if codes[p]), 0)  # in rank order
        return (failed or code) if self.peer_lost else (code or failed)

    def abort(self, code: int = 1) -> None:
        """Stop this rank now. Its sockets close with it, so every other rank stops at its next message."""
        sys.stdout.flush()
        sys.stderr.flush()
        for s in self.sockets:
            s.close()
        raise SystemExit(code)

    @contextlib.contextmanager
    def abort_on_error(self, prefix: str):
        """As MPICommunicator's: one line naming the rank, then stop. A rank that stops because another one did
        says nothing (the first one said why), and Ctrl-C, which reaches every rank, is reported by rank 0 only."""
        try:
            yield
        except PeerLost:
            self.peer_lost = True  # finish() then reports the status of the rank that stopped first
            if not self.is_root:
                # Rank 0 has closed its sockets (it is done with the shared folder) or died, maybe killed outright,
                # with no chance to remove the folder: the other ranks remove it (rank 0 alive does it again).
                shutil.rmtree(self.workdir, ignore_errors=True)
            self.abort(1)
        except KeyboardInterrupt:
            if self.is_root:
                print(f"{prefix}: interrupted", file=sys.stderr)
            self.abort(130)
        except BaseException as e:  # noqa: BLE001 - every error must stop the job
            if isinstance(e, SystemExit) and not e.code:
                raise
            code = report_rank_error(e, prefix, self.rank, self.size)
            if isinstance(e, RankTimeout) and self.rank0_pid:  # rank 0 hangs: nobody else would end it
                self._end_rank0()
            self.abort(code)

    def _end_rank0(self) -> None:
        """End a hung rank 0 (made by become_rank0: this rank's parent) with SIGTERM, and remove the shared folder
        in its place. This rank ignores SIGTERM and Ctrl-C meanwhile (rank 0's finish() may send it SIGTERM), and
        then stops at once, so that a rank 0 that heeds SIGTERM (the CLI turns it into Ctrl-C) can wait for it and
        end cleanly. A rank 0 stuck where SIGTERM cannot reach it (inside C code) is left for the user to kill:
        the line above says which rank it is."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if os.getppid() == self.rank0_pid:  # still our parent (not a reused process id)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.rank0_pid, signal.SIGTERM)
        shutil.rmtree(self.workdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m minibert.training.procs",
                                description="Run a command as N ranks of minibert's local data-parallel "
                                            "communicator (like mpiexec -n N on one machine).")
    p.add_argument("-n", type=int, required=True, help="number of ranks")
    p.add_argument("--threads", type=int, default=None, help="BLAS threads per rank [cores // n]")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if not args.command or args.n < 1:
        p.error("needs -n N >= 1 and a command")
    return launch(args.command, args.n, args.threads)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
