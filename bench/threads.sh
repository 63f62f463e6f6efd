#!/usr/bin/env bash
# Benchmark: MLP training samples/s at 1 and 2 intra-op threads, side by side
# in one run, to place the rule that picks one thread for small models.
# Usage: bench/threads.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec python3 bench/threads/sweep.py
