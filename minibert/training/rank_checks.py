"""What both multi-process communicators share (distributed.py's MPI one, procs.py's one for --procs N): the
check that every rank holds the same arrays, and the one line a failing rank reports."""

from __future__ import annotations

import os
import sys
import traceback
import zlib

import numpy as np


def checksum(array: np.ndarray) -> int:
    """CRC32 of an array's bytes: equal on two ranks when the arrays are bit-for-bit equal (as far as it can tell)."""
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B"))


def ranks_differ(what: str, size: int, low: int, high: int) -> RuntimeError:
    return RuntimeError(f"{what} differ between the {size} ranks (CRC32 from {low:08x} to {high:08x}): the ranks no "
                        f"longer train the same model; the last checkpoint was written before this check and stays "
                        f"valid")


def closed_pipe_status() -> int:
    """The reader of our output went away (`minibert pretrain | head`): not an error to report. Whatever is still
    to be written goes nowhere (so that nothing fails again at exit), and the status is a shell's for a process
    ended by SIGPIPE."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


# Errors a command reports in one line without a traceback (MINIBERT_DEBUG=1 shows it): bad input, a path that
# cannot be written, a missing optional package. cli.main catches these; report_rank_error treats them alike.
EXPECTED_ERRORS = (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
                   PermissionError, ImportError)


def report_rank_error(e: BaseException, prefix: str, rank: int, size: int) -> int:
    """Print one line naming the rank (and a traceback for unexpected errors); return the exit status."""
    if isinstance(e, BrokenPipeError):  # (quietly, as cli.main does; the other ranks are ended all the same)
        return closed_pipe_status()
    # Expected (one line, no traceback): what cli.main reports as one line, Ctrl-C, and RuntimeError (ranks that
    # differ).
    expected = isinstance(e, EXPECTED_ERRORS + (KeyboardInterrupt, RuntimeError))
    if not expected or os.environ.get("MINIBERT_DEBUG"):
        traceback.print_exception(type(e), e, e.__traceback__)
    problem = "interrupted" if isinstance(e, KeyboardInterrupt) else f"error: {e}"
    print(f"{prefix} (rank {rank} of {size}): {problem}; ending all ranks", file=sys.stderr)
    return 130 if isinstance(e, KeyboardInterrupt) else 2 if expected else 1
