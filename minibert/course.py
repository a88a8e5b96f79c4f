"""Small helpers every chapter of the course (course/NN_name.py) imports: the quick switch, the checks and their
printed table, the exercises.

They live in the package, not beside the chapters, so that `from minibert.course import check` works wherever a
chapter runs: as a notebook in course/notebooks/ (built by `python course/build.py`, opened in JupyterLab), or as a
plain script in course/. The solutions of the exercises are read from the repository's course/solutions/, which
an editable install (`pip install -e`, what scripts/install.sh does) keeps beside the package.
"""

import datetime
import os
import platform
from pathlib import Path

import numpy as np

# The repository this package was installed from (editable) or imported from: where course/ lives.
REPOSITORY = Path(__file__).resolve().parents[1]
SOLUTIONS = REPOSITORY / "course" / "solutions"

# Quick mode (MINIBERT_COURSE_QUICK=1, what CI runs): fewer steps and smaller slices through the same code.
QUICK = os.environ.get("MINIBERT_COURSE_QUICK", "") == "1"


def quick(full, fast):
    """`fast` in quick mode, `full` otherwise: one place where a chapter says how much it shrinks."""
    return fast if QUICK else full


def check(name, mine, reference, rtol=1e-5, atol=1e-6):
    """Assert that `mine` equals `reference` within tolerance and print the largest difference.

    Returns the largest absolute difference, so a chapter can collect them into a table."""
    mine, reference = np.asarray(mine), np.asarray(reference)
    assert mine.shape == reference.shape, f"{name}: shape {mine.shape} against {reference.shape}"
    largest = float(np.max(np.abs(mine.astype(np.float64) - reference.astype(np.float64)))) if mine.size else 0.0
    print(f"{name:<48} largest difference {largest:.2e}")
    np.testing.assert_allclose(mine, reference, rtol=rtol, atol=atol, err_msg=name)
    return largest


def expect(name, got, expected, rtol=0.0, atol=0.0):
    """An exercise's assertion: `got` must equal `expected` (numbers and arrays within rtol and atol, anything
    else exactly). When it does not, the AssertionError names the check and shows expected against got, with the
    largest difference, so a wrong answer says where it went wrong."""
    g, e = _numeric(got), _numeric(expected)
    if g is None or e is None:
        if got == expected:
            return
        raise AssertionError(f"{name}: expected {_show(expected)}, got {_show(got)}")
    if g.shape != e.shape:
        raise AssertionError(f"{name}: expected shape {e.shape}, got shape {g.shape}: expected {_show(expected)}, "
                             f"got {_show(got)}")
    if not g.size or np.allclose(g, e, rtol=rtol, atol=atol):
        return
    if np.asarray(got).dtype == bool or np.asarray(expected).dtype == bool:
        if g.size == 1:
            raise AssertionError(f"{name}: expected {_show(expected)}, got {_show(got)}")
        how = f"{int(np.sum(g != e))} of {g.size} differ"
    else:
        how = f"largest difference {float(np.max(np.abs(g - e))):.3g} (rtol {rtol:g}, atol {atol:g})"
    raise AssertionError(f"{name}: expected {_show(expected)}, got {_show(got)}; {how}")


def _numeric(x):
    """x as a float64 array when it is numbers (bools count as 0 and 1), else None."""
    try:
        a = np.asarray(x)
    except ValueError:  # ragged lists
        return None
    if a.dtype.kind in "biuf":
        return a.astype(np.float64)
    return None


def _show(x, limit=300):
    """A value as one short line: arrays and lists abbreviated by NumPy, anything longer cut at `limit`."""
    if isinstance(x, np.generic):
        x = x.item()  # 0.25, not np.float64(0.25)
    if isinstance(x, np.ndarray) or (isinstance(x, (list, tuple)) and len(x) > 8):
        text = np.array2string(np.asarray(x), threshold=24, edgeitems=3, precision=6, max_line_width=10**6)
    else:
        text = repr(x)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."


def numerical_gradient(f, x, eps=1e-6):
    """d f / d x by central differences, one entry at a time (float64 x; f returns a scalar)."""
    grad = np.zeros_like(x)
    flat, out = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        plus = f()
        flat[i] = old - eps
        minus = f()
        flat[i] = old
        out[i] = (plus - minus) / (2 * eps)
    return grad


def torch_or_none():
    """torch, where it is installed (the reference checks use it), else None with a note."""
    try:
        import torch
    except ImportError:
        print("torch is not installed: the check against transformers is skipped "
              "(pip install -e '.[dev]' installs it)")
        return None
    return torch


def solution(chapter, name):
    """The solution of one exercise: the function `name` of course/solutions/<chapter>.py."""
    import importlib.util
    path = SOLUTIONS / f"{chapter}.py"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no solutions file; the course's exercises need minibert installed from its "
                                "repository with `pip install -e .` (bash scripts/install.sh course)")
    spec = importlib.util.spec_from_file_location(f"solutions_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def exercise(number, answer, chapter, test):
    """Check an exercise: `test(answer)` asserts what a right answer does.

    While the learner has not written it yet (the answer raises NotImplementedError), the same test runs on the
    solution in course/solutions/, so the notebook still runs through and the test itself is shown to pass."""
    try:
        test(answer)
        print(f"exercise {number}: your answer passes")
    except NotImplementedError:
        test(solution(chapter, answer.__name__))
        print(f"exercise {number}: not answered yet; the solution (course/solutions/{chapter}.py) passes the test")


def cpu_name():
    """The processor's model name (Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def stamp(chapter):
    """Date, machine, load and chapter (e.g. "08_cost"), for a figure of timings: they mean nothing without."""
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu_name()}, "
            f"{os.cpu_count()} cores{load}; course/{chapter}.py{' (quick mode)' if QUICK else ''}")
