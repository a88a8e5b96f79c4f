"""Run a training command on its ranks: the one launcher of `minibert pretrain`, `distill` and `finetune`.

A command does two things with it:

    if not_yet_a_rank():                                  # the command as the user typed it
        ... check the input (one line on bad input, before any rank starts) ...
        start_ranks(args, batch_size)                     # --procs N > 1: does not return
    return run_on_ranks("minibert pretrain", body)        # body(comm) -> exit status, on every rank

`start_ranks` starts ranks 1..N-1 of the same command and turns this process into rank 0 (training/procs.py);
under mpiexec or srun the launcher has already started the ranks. `run_on_ranks` then gives every command the
same ending: one rank's error stops every rank (said once), SIGTERM (a scheduler's time limit, `kill`) stops the
run as Ctrl-C does, rank 0 waits for the other ranks and removes the shared folder of --procs, and the exit
status is the first failing rank's (docs/scaling.md).
"""

from __future__ import annotations

import signal
import sys

from minibert.training import procs
from minibert.training.distributed import communicator, launcher_size


def not_yet_a_rank() -> bool:
    """True in the command as typed: neither a rank of --procs nor a process started by mpiexec or srun."""
    return not procs.in_rank() and launcher_size()[0] == 1


def start_ranks(args, batch_size: int, check=None, single_process_reason: str | None = None) -> None:
    """With `--procs N` resolving to N > 1 (training/procs.py: auto is 2 on 2+ cores): run `check()` (the
    command's input checks, when the command has not run them already), start ranks 1..N-1 of this same command
    and become rank 0 of it, which does not return. With one process, return at once."""
    n = procs.resolve_procs(getattr(args, "procs", None), batch_size, single_process_reason)
    if n > 1:
        if check is not None:
            check()
        procs.rank_timeout()  # a bad MINIBERT_RANK_TIMEOUT fails here, before any rank starts
        procs.become_rank0([sys.executable, "-m", "minibert", *args.argv], n)


def run_on_ranks(command: str, body) -> int:
    """`body(comm)` on this rank (comm: training/distributed.py's communicator, of size 1 in one process);
    returns the job's exit status: `body`'s own on rank 0, or the first failing rank's."""
    comm = communicator()
    # SIGTERM ends the run as Ctrl-C does: every rank stops, rank 0 says so once (and pre-training says how to
    # resume), the shared folder of --procs is removed (status 130). Put back at the end: a test may run this
    # in its own process.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        try:
            with comm.abort_on_error(command):  # one rank failing ends them all: none waits forever
                code = body(comm)
        except SystemExit as e:  # a rank stopped (abort_on_error said why)
            return comm.finish(e.code if isinstance(e.code, int) else 0 if e.code is None else 1)
        return comm.finish(code)  # --procs: rank 0 waits for the other ranks
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):
    raise KeyboardInterrupt
