"""The suite collects the same tests, with the same ids, in every process.

pytest-xdist refuses a run whose workers collected different tests ("Different tests were collected between gw0
and gw1"), so a parameter or id that depends on the clock, an unseeded random draw, a set's order (which follows
PYTHONHASHSEED) or the file system's order fails the README's test command by chance. This test collects the
whole suite in two processes, one after the other (so at least a second apart) and with different hash seeds,
and names every id that differs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def collected_ids(hash_seed):
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "no:randomly", "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"collection failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_two_processes_collect_the_same_test_ids():
    first = collected_ids(hash_seed=1)
    second = collected_ids(hash_seed=2)  # starts after the first ends: its imports are seconds later
    assert len(first) > 1000, f"only {len(first)} tests collected"
    only_first = sorted(set(first) - set(second))
    only_second = sorted(set(second) - set(first))
    assert not only_first and not only_second, (
        "test ids differ between two collections:\n"
        + "\n".join(f"- {test_id}" for test_id in only_first)
        + "\n" + "\n".join(f"+ {test_id}" for test_id in only_second))
    assert first == second, "the same tests were collected in a different order"
