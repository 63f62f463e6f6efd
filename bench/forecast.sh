#!/usr/bin/env bash
# Benchmark: the article's workload (examples/forecast-tcn-transformer) on a
# short series: peak memory and time per epoch for fp32 / bf16 x accumulate 1 / 8
# at the same effective batch (128), beside the same model and loop written in
# Python with Debian's python3-torch, interleaved in one run.
# Usage: bench/forecast.sh [--windows N] [--reps R]. Prints Markdown tables.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec python3 bench/forecast/driver.py "$@"
