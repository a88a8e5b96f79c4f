"""Which float32 exact GELU the layers run: NumPy's (activations.py, the reference) or the same formula compiled
by numba into one pass (gelu_numba.py), when numba is installed (`pip install 'minibert[fast]'`).

Kept because it pays where a user feels it: all-MiniLM-L6-v2 embeds 18% more sentences per second with it on
1 thread and 20% more on 2 (2-core AMD EPYC, November 28, 2026; `python benchmarks/plain_layers.py` with
MINIBERT_NUMBA=0 in one tree, docs/experiments-code.md). `minibert pretrain` keeps NumPy's unless MINIBERT_NUMBA=1:
for the mini model numba buys a few % for ~130 MB more per process (training/pretrain.py).
"""

import contextlib
import os
import threading
import warnings

import numpy as np

# MINIBERT_NUMBA: auto (the default: numba's loop if numba is installed), 0 (always NumPy), 1 (numba or an error).
# Pre-training turns auto into NumPy for its run (training/pretrain.py: numpy_gelu_unless_asked).
NUMBA_VARIABLE = "MINIBERT_NUMBA"
_numba_loop = None  # gelu_numba.gelu_forward_loop; False: the NumPy path; None: not decided yet


def numba_setting():
    value = os.environ.get(NUMBA_VARIABLE, "auto").strip().lower()
    for setting, words in (("auto", ("auto", "")), ("off", ("0", "off", "no", "false")),
                           ("on", ("1", "on", "yes", "true"))):
        if value in words:
            return setting
    raise ValueError(f"{NUMBA_VARIABLE}={os.environ[NUMBA_VARIABLE]!r}: expected 0 (NumPy GELU), 1 (numba's GELU; an "
                     f"error if numba is missing) or auto (numba's if installed)")


def _load_numba_loop():
    from minibert.layers.gelu_numba import gelu_forward_loop  # ImportError without numba
    x = np.linspace(-3, 3, 8, dtype=np.float32)
    gelu_forward_loop(x, np.empty_like(x), np.empty_like(x))  # compiled here, once per process,
    gelu_forward_loop(x, np.empty_like(x), None)  # and its version without the derivative
    return gelu_forward_loop


_decide_once = threading.Lock()  # batches on several threads (parallel.py) must not each decide, or differ


def numba_gelu_loop():
    """gelu_numba's compiled loop, or None where the float32 GELU runs in NumPy. Decided on the first call:
    auto falls back to NumPy, with a warning unless numba is simply not installed; MINIBERT_NUMBA=1 raises."""
    global _numba_loop
    if _numba_loop is None:
        with _decide_once:
            if _numba_loop is None:
                _numba_loop = _decide()
    return _numba_loop or None


def _decide():
    setting = numba_setting()
    if setting == "off":
        return False
    try:
        return _load_numba_loop()
    except Exception as e:  # not installed, or installed but failing (a numba/NumPy mismatch, a compile error)
        missing = isinstance(e, ImportError) and getattr(e, "name", None) in ("numba", "llvmlite")
        if setting == "on":
            raise ImportError(f"{NUMBA_VARIABLE}=1 but numba's GELU cannot be loaded ({type(e).__name__}: {e}): "
                              f"pip install 'minibert[fast]', or set {NUMBA_VARIABLE}=0") from None
        if not missing:
            warnings.warn(f"numba is installed but its GELU failed to load ({type(e).__name__}: {e}); using NumPy's "
                          f"(set {NUMBA_VARIABLE}=0 to silence this)", RuntimeWarning, stacklevel=3)
        return False


def use_numba_gelu(enabled):
    """Run the float32 GELU through numba (True; ImportError without it) or NumPy (False) from now on, whatever
    MINIBERT_NUMBA says, or None: decide from MINIBERT_NUMBA at the next GELU. Returns the previous choice
    (True, False or None), which this function takes back. For tests and benchmarks that compare the two."""
    global _numba_loop
    previous = None if _numba_loop is None else bool(_numba_loop)
    _numba_loop = None if enabled is None else _load_numba_loop() if enabled else False
    return previous


@contextlib.contextmanager
def numpy_gelu_unless_asked():
    """NumPy's GELU inside the block, unless MINIBERT_NUMBA says 1 (numba's) or 0 (NumPy's anyway); the choice
    before the block is put back after it. For work that numba speeds up too little for its memory."""
    if numba_setting() != "auto":
        yield
        return
    previous = use_numba_gelu(False)
    try:
        yield
    finally:
        use_numba_gelu(previous)


def gelu_kernel_name():
    """'numba' or 'numpy': which exact GELU the float32 layers run (printed by benchmarks and run headers)."""
    return "numba" if numba_gelu_loop() is not None else "numpy"


def compiled_gelu_forward(x, for_backward=True):
    """gelu_forward by numba's loop for a float32 x, or None where NumPy's runs (float64, numba off or missing)."""
    loop = numba_gelu_loop() if x.dtype == np.float32 else None
    if loop is None:
        return None
    x2 = np.ascontiguousarray(x.reshape(-1))  # (N*F,) one flat pass
    out = np.empty_like(x2)
    deriv = np.empty_like(x2) if for_backward else None
    loop(x2, out, deriv)
    return out.reshape(x.shape), None if deriv is None else deriv.reshape(x.shape)
