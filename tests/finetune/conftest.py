"""Fixtures shared by the fine-tuning tests."""

import sys

import pytest

from minibert.training import procs


@pytest.fixture
def launches(monkeypatch):
    """Two processes by default (no BLAS thread count in the environment, 4 usable cores); becoming rank 0 is only
    recorded, so a check that ran in the ranks, not before them, shows as a recorded start."""
    for name in procs.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(procs, "usable_cores", lambda: 4)
    calls = []
    monkeypatch.setattr(procs, "become_rank0", lambda command, n: calls.append((command, n)) or sys.exit(0))
    return calls
