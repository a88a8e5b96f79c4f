"""How many threads NumPy's BLAS (OpenBLAS) uses, read and changed while the program runs.

OPENBLAS_NUM_THREADS is read once, when NumPy loads OpenBLAS. To run several forwards side by side on
Python threads (minibert/parallel.py), each matmul must instead stay on the thread that calls it, so the
count is lowered for that while and restored after. OpenBLAS exports set/get functions for this; the library
is the one NumPy loaded, found among the process's mapped files (Linux), and its symbols carry a prefix and a
suffix that depend on the build (NumPy's wheels: scipy_openblas_..._64_).

Elsewhere (macOS's Accelerate, a NumPy built on MKL, no /proc), `blas_threads()` returns None and nothing is
changed; callers then keep to one forward at a time.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading

_NAMES = [(f"{prefix}openblas_get_num_threads{suffix}", f"{prefix}openblas_set_num_threads{suffix}")
          for prefix in ("scipy_", "") for suffix in ("64_", "")]
_lock = threading.Lock()  # one change of the count at a time (the count is the whole process's)
_functions = None  # (get, set) once looked up; () when there is no OpenBLAS to control
_active, _before = 0, None  # blocks of one_blas_thread() now running; the count before the first of them


def _openblas_functions():
    global _functions
    if _functions is None:
        import numpy  # (OpenBLAS is mapped once NumPy is imported)
        _functions = ()
        # NumPy's own first (numpy/ or numpy.libs/ beside it): SciPy, torch... may map other BLAS libraries.
        numpy_prefix = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__))), "numpy")
        try:
            with open("/proc/self/maps") as f:
                paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
        except OSError:
            paths = set()
        for path in sorted(paths, key=lambda p: (not p.startswith(numpy_prefix), p)):
            try:
                lib = ctypes.CDLL(path)  # already loaded: this only returns a handle to it
            except OSError:
                continue
            for get_name, set_name in _NAMES:
                if hasattr(lib, get_name) and hasattr(lib, set_name):
                    get, put = getattr(lib, get_name), getattr(lib, set_name)
                    get.restype, get.argtypes = ctypes.c_int, []
                    put.restype, put.argtypes = None, [ctypes.c_int]
                    _functions = (get, put)
                    return _functions
    return _functions


def usable_cpu_count() -> int:
    """The CPUs this process may run on: its affinity set (taskset, a container's cpuset) where the platform has
    one (Linux), else every core of the machine."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity call
        return os.cpu_count() or 1


def threads_from_environment() -> int:
    """The thread count the program asked for: OPENBLAS_NUM_THREADS, else OMP_NUM_THREADS, else every core this
    process may run on."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(var, "").split(",")[0].strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return usable_cpu_count()


def blas_threads() -> int | None:
    """The number of threads OpenBLAS uses for one call; None if it cannot be read (no OpenBLAS found)."""
    functions = _openblas_functions()
    return functions[0]() if functions else None


@contextlib.contextmanager
def one_blas_thread():
    """Within the block every BLAS call runs on the thread that makes it (the whole process's setting, not the
    calling thread's: OpenBLAS has one). Blocks may overlap (from several threads); the count in force before
    the first is restored when the last ends. Yields True when the count could be set, False when it could not
    (no OpenBLAS found: nothing changed)."""
    global _active, _before
    functions = _openblas_functions()
    if not functions:
        yield False
        return
    get, put = functions
    with _lock:
        if _active == 0:
            _before = get()
            put(1)
        _active += 1
    try:
        yield True
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                put(_before)
