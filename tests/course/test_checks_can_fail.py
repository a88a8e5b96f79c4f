"""The course's checks can fail: with a wrong gradient in minibert's softmax backward, the attention chapter stops
with an error that names the check; without it, the same harness runs the chapter to its end.

The chapter runs as a plain script in a fresh interpreter (quick mode, in course/), after the harness has
replaced `softmax_backward` in every minibert module that holds it with one that flips the gradient's sign."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "course"

HARNESS = """
import runpy, sys
import minibert.layers.attention as attention
original = attention.softmax_backward
if sys.argv[1] == "perturbed":
    def wrong_sign(dprobs, probs):
        return -original(dprobs, probs)
    for module in list(sys.modules.values()):
        if getattr(module, "softmax_backward", None) is original:
            module.softmax_backward = wrong_sign
    assert attention.softmax_backward is wrong_sign
runpy.run_path("04_attention.py", run_name="__main__")
"""


def run_chapter(mode):
    env = dict(os.environ, MINIBERT_COURSE_QUICK="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(COURSE), str(ROOT)]))
    return subprocess.run([sys.executable, "-c", HARNESS, mode], check=False, cwd=COURSE, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_wrong_softmax_gradient_fails_the_attention_chapter():
    pytest.importorskip("matplotlib")
    done = run_chapter("perturbed")
    assert done.returncode != 0, done.stdout[-2000:]
    assert "AssertionError" in done.stderr
    # the first check that reads the softmax backward names itself in the error
    assert "dx: ours vs minibert" in done.stderr, done.stderr[-2000:]
    assert "exercise 1:" not in done.stdout  # stopped at the check, not later


def test_the_same_harness_runs_the_unperturbed_chapter_to_its_end():
    pytest.importorskip("matplotlib")
    done = run_chapter("unperturbed")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dx: ours vs minibert" in done.stdout
    assert "exercise 3:" in done.stdout  # the last cell ran
