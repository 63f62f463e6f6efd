#!/usr/bin/env bash
# Benchmark: peak training memory of bf16 vs fp32 and of batch 8 x accumulate 4
# vs batch 32 on an activation-heavy CNN, from the counting allocator.
# Usage: bench/memory.sh [--updates N]. Prints a Markdown table and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec python3 bench/memory/driver.py "$@"
