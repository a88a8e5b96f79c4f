#!/usr/bin/env bash
# Set up and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh dev
# Headless Chromium drives the interactive attention page in tests/viz (Debian packages).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
        (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
            || echo "warning: could not install chromium; the browser tests will be skipped"
    fi
fi
# Two test processes on two cores, one BLAS thread each (two threads per process would oversubscribe).
# --dist loadgroup keeps the course's chapters and the documentation site (which shows their outputs) on one
# worker, in that order.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# What the tests write to temporary folders (pytest's tmp_path, Chromium's scratch folders, ...) goes into one
# folder of its own, removed when the run ends, whatever its outcome.
TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/minibert-tests.XXXXXX")"
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
python3 -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider "$@"
