#!/usr/bin/env bash
# Set up and run the main job: pre-train the mini BERT on the built-in Wikipedia corpus (~15 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
minibert pretrain "$@"
