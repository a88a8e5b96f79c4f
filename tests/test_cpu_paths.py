"""The float32 parity tests hold on every CPU path, not only on this machine's.

The same sums run in another order on another CPU: MKL (torch's BLAS) takes its AVX-512 path on an Intel CPU with
AVX-512 and its AVX2 path on an AMD one; torch's own kernels and NumPy's OpenBLAS pick theirs by the CPU too. Each
leaves its own float32 rounding, so a bound that holds here may not hold there. This test runs the parity tests
again, in fresh processes, with each library switched to each path this CPU can run:

- torch: MKL_ENABLE_INSTRUCTIONS (MKL ignores AVX512 on a CPU that is not Intel's: it keeps AVX2 there, which is
  why tests/models/test_grad_comparison.py also feeds the comparison the residue MKL's AVX-512 path leaves) and
  ATEN_CPU_CAPABILITY;
- NumPy: OPENBLAS_CORETYPE, unless the environment sets it already (some CPUs need a fixed kernel: that one stays).

Each run first reports the kernels it got, so a switch that did not take is a failure, not a silent pass.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("threadpoolctl")

ROOT = Path(__file__).resolve().parents[1]

# Every test file that compares minibert's float32 numbers with transformers'.
PARITY_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/models").glob("test_*parity*.py")) + [
    "tests/models/test_distilbert_classification.py",
    "tests/models/test_electra_pretraining.py",
    "tests/models/test_family_classification.py",
    "tests/models/test_grad_comparison.py",
    "tests/embeddings/test_minilm_parity.py",
    "tests/io/test_checkpoint_transformers.py",
    "tests/distill/test_distiller.py",
]

# name: (what the CPU must have, MKL's instructions, ATen's capability, OpenBLAS's kernel)
PATHS = {
    "avx2": ({"avx2", "fma"}, "AVX2", "avx2", "Haswell"),
    "avx512": ({"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd"}, "AVX512", "avx512", "SkylakeX"),
}

PROBE = """
import json, numpy, threadpoolctl, torch
blas = [i.get("architecture") for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]
print(json.dumps({"openblas": blas[0] if blas else None, "aten": torch.backends.cpu.get_cpu_capability()}))
"""


def cpu_flags() -> set:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def path_env(name):
    needs, mkl, aten, openblas = PATHS[name]
    if not needs <= cpu_flags():
        pytest.skip(f"this CPU has no {name} ({', '.join(sorted(needs - cpu_flags()))} missing)")
    env = dict(os.environ, MKL_ENABLE_INSTRUCTIONS=mkl, ATEN_CPU_CAPABILITY=aten)
    if "OPENBLAS_CORETYPE" not in os.environ:
        env["OPENBLAS_CORETYPE"] = openblas
    return env


def test_every_float32_comparison_with_transformers_is_in_the_list():
    """A new parity test file joins the CPU-path runs: any test file that asserts against torch's gradients or
    outputs through hf_reference must be listed."""
    users = {str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
             if p != Path(__file__).resolve() and "assert_grads_match" in p.read_text(encoding="utf-8")}
    assert users <= set(PARITY_TESTS), users - set(PARITY_TESTS)


@pytest.mark.parametrize("name", list(PATHS))
def test_float32_parity_holds_on_this_cpu_path(name):
    env = path_env(name)
    _, _, aten, openblas = PATHS[name]
    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    got = json.loads(probe.stdout.strip().splitlines()[-1])
    assert got["aten"].lower() == aten, got
    if got["openblas"] is not None:  # NumPy built on another BLAS has no OpenBLAS kernel to switch
        assert got["openblas"].lower() == env["OPENBLAS_CORETYPE"].lower(), got
    if env.get("OPENBLAS_CORETYPE", "").lower() != openblas.lower():
        print(f"OPENBLAS_CORETYPE is set to {env['OPENBLAS_CORETYPE']} by the environment; NumPy keeps that kernel")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          *PARITY_TESTS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"parity tests under {name} ({got}):\n{run.stdout[-4000:]}{run.stderr[-2000:]}"
