"""How many threads the BLAS under NumPy uses, read and changed at run time.

`minibert.training.replicas` runs several forward/backward passes at once, one per thread, each with a
single-threaded BLAS: two BLAS threads per matmul on top of two model threads would fight over two cores.
OPENBLAS_NUM_THREADS only acts before NumPy is imported, so the count is changed through OpenBLAS's own
`openblas_set_num_threads`, found in the library NumPy loaded (the way threadpoolctl does it, without the
dependency). NumPy wheels bundle OpenBLAS with a prefixed symbol name (`scipy_openblas_set_num_threads64_`).

Where no OpenBLAS is found (a NumPy built on another BLAS, a platform without /proc), `available()` is False:
callers then keep to one model thread rather than oversubscribe.
"""

from __future__ import annotations

import ctypes
import os

_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_")
_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_")
_lib = None
_looked = False


def _openblas():
    """The loaded OpenBLAS library (ctypes), or None."""
    global _lib, _looked
    if _looked:
        return _lib
    _looked = True
    import numpy  # noqa: F401  (loads the BLAS this module talks to)
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        if not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
            _lib = (setter, getter)
            break
    return _lib


def available() -> bool:
    return _openblas() is not None


def get_blas_threads() -> int | None:
    lib = _openblas()
    return None if lib is None else int(lib[1]())


def set_blas_threads(n: int) -> bool:
    """Use n BLAS threads from now on; False (and nothing changed) when no OpenBLAS was found."""
    lib = _openblas()
    if lib is None:
        return False
    lib[0](max(1, int(n)))
    return True


class blas_threads:
    """`with blas_threads(1): ...` runs the block with n BLAS threads and restores the count after it."""

    def __init__(self, n: int):
        self.n, self.before = n, None

    def __enter__(self):
        self.before = get_blas_threads()
        set_blas_threads(self.n)
        return self

    def __exit__(self, *exc):
        if self.before is not None:
            set_blas_threads(self.before)
        return False
