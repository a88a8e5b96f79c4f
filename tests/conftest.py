"""Shared test set-up: one BLAS thread per test process (tests run in parallel processes; two BLAS threads
per process on two cores make every step ten times slower), and the helpers in tests/helpers/ importable."""

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
