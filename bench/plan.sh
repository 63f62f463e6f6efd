#!/usr/bin/env bash
# Benchmark: `codefy plan`'s predicted peaks beside real runs' peaks (MLP, CNN,
# the forecast example) and the time a plan takes. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
exec python3 bench/plan/driver.py "$@"
