#!/usr/bin/env bash
# Benchmark: TrainingLoop step time vs a hand-written LibTorch C++ loop and the
# same loop in Python (Debian's python3-torch), side by side in one run.
# Usage: bench/step_time.sh [--reps N] [--epochs E] [--threads T] [--cases 1,3] [--contenders codefy,cpp,...]
# Prints per-case times and a Markdown table for bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh python3-torch >/dev/null
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCODEFY_BUILD_BENCH=ON >/dev/null
cmake --build build --parallel "$(nproc)" --target codefy codefy_bench_baseline >/dev/null
exec /usr/bin/python3 bench/step_time/driver.py "$@"
