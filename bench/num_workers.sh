#!/usr/bin/env bash
# Benchmark: DataLoader num_workers 0 vs 2 on Fashion-MNIST, with an
# augmentation chain and without, side by side in one run.
# Usage: bench/num_workers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec python3 bench/num_workers/driver.py
