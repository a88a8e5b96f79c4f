"""Shared test set-up: one BLAS thread per test process (tests run in parallel processes; two BLAS threads
per process on two cores make every step ten times slower), and the helpers in tests/helpers/ importable."""

import glob
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may download at test time
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "helpers"))


import pytest  # noqa: E402


@pytest.fixture(params=["numpy", "numba"])
def gelu_kernel(request):
    """Run the test once with the NumPy GELU and once with numba's compiled one (skipped without numba), so
    both float32 paths are checked against transformers (minibert/layers/gelu_numba.py)."""
    from minibert.layers import gelu_select
    if request.param == "numba":
        pytest.importorskip("numba")
    previous = gelu_select.use_numba_gelu(request.param == "numba")
    yield request.param
    gelu_select.use_numba_gelu(previous)


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium driven through chromedriver (tests/helpers/browser.py), for the pages
    minibert writes (attention --html) and the documentation site. Both come from Debian: apt-get update &&
    apt-get install -y chromium chromium-driver; without them the test skips with that command as the reason."""
    import shutil

    from browser import Browser
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        pytest.skip("headless Chromium not installed: apt-get update && apt-get install -y chromium chromium-driver")
    b = Browser(chromedriver, chromium, tmp_path / "chromium-profile")
    try:
        yield b
    finally:
        b.quit()


SHARED_MEMORY = "/dev/shm"
LEFT_BEHIND = ("mpich_shm_", "minibert-procs-")  # MPICH's node memory; the folder of `--procs N` ranks


def _orphans(names):
    """Those of `names` (entries of /dev/shm) that no running process uses: none has it mapped, open, or named in
    its environment (how the ranks of `--procs N` find their folder)."""
    used = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        for what in ("maps", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            used |= {n for n in names if n in text}
    return set(names) - used


@pytest.fixture(scope="module")
def leaves_no_shared_memory():
    """The module's jobs leave nothing in /dev/shm, also those that failed on purpose: memory there is never given
    back until the machine restarts. What another test process (running alongside) still uses is not counted: an
    entry counts once no process has used it for three looks, a second apart. MPICH's topology files that its
    aborted jobs leave in /tmp are removed (below)."""
    import time
    if not os.path.isdir(SHARED_MEMORY):
        yield
        return
    before = set(os.listdir(SHARED_MEMORY))
    topologies = set(glob.glob(HYDRA_TOPOLOGY))
    yield
    _remove_orphan_topologies(set(glob.glob(HYDRA_TOPOLOGY)) - topologies)
    left = {n for n in os.listdir(SHARED_MEMORY) if n.startswith(LEFT_BEHIND)} - before
    for _ in range(3):
        left = _orphans(left) & set(os.listdir(SHARED_MEMORY))
        if not left:
            break
        time.sleep(1)
    assert not left, f"left in {SHARED_MEMORY}: {sorted(left)}"


# MPICH's process manager (hydra) hands each job's processor topology to its proxy in this file, always under /tmp,
# and removes it when the job ends, but not when a rank calls MPI_Abort, as the tests' failing jobs do on purpose.
# Only the proxy reads it, as it starts; so a file the module's jobs made is nobody's a few seconds on.
HYDRA_TOPOLOGY = os.path.join("/tmp", "hydra_hwloc_xmlfile_*")  # hydra names /tmp itself, not $TMPDIR


def _remove_orphan_topologies(paths, age=3.0):
    import time
    for path in paths:
        try:
            time.sleep(max(0.0, age - (time.time() - os.path.getmtime(path))))
            os.remove(path)
        except FileNotFoundError:  # its job ended and removed it
            pass
