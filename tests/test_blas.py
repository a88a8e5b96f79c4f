"""Changing OpenBLAS's thread count while the program runs (minibert/blas.py): read, set to one, restored, also
when blocks from several threads overlap."""

import os
import threading

import numpy as np
import pytest

from minibert import blas

pytestmark = pytest.mark.skipif(blas.blas_threads() is None, reason="NumPy's BLAS here is not an OpenBLAS")


@pytest.fixture
def two_blas_threads():
    """OpenBLAS set to 2 threads for the test (the suite runs with 1), then set back."""
    get, put = blas._openblas_functions()
    before = get()
    put(2)
    yield
    put(before)


def test_reads_the_count_numpy_runs_with(two_blas_threads):
    assert blas.blas_threads() == 2


def test_one_thread_inside_and_restored_after(two_blas_threads):
    with blas.one_blas_thread() as changed:
        assert changed and blas.blas_threads() == 1
        a = np.ones((64, 64), dtype=np.float32)
        assert (a @ a == 64).all()  # BLAS still works with the new count
    assert blas.blas_threads() == 2


def test_restored_after_an_error(two_blas_threads):
    with pytest.raises(RuntimeError):
        with blas.one_blas_thread():
            raise RuntimeError("inside")
    assert blas.blas_threads() == 2


def test_overlapping_blocks_restore_only_when_the_last_ends(two_blas_threads):
    entered, leave_first = threading.Event(), threading.Event()
    seen = {}

    def first():
        with blas.one_blas_thread():
            entered.set()
            leave_first.wait(5)
        seen["after first"] = blas.blas_threads()

    t = threading.Thread(target=first)
    t.start()
    assert entered.wait(5)
    with blas.one_blas_thread():
        leave_first.set()
        t.join(5)
        assert seen["after first"] == 1  # the other block is still running: not restored yet
        assert blas.blas_threads() == 1
    assert blas.blas_threads() == 2


def test_the_library_changed_is_the_one_numpy_uses(two_blas_threads):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy

    def numpys():  # threadpoolctl's view of the OpenBLAS that NumPy itself loaded
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__)))
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["internal_api"] == "openblas" and i["filepath"].startswith(os.path.join(prefix, "numpy"))]

    assert numpys() == [2]
    with blas.one_blas_thread():
        assert numpys() == [1]
    assert numpys() == [2]
