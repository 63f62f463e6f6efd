#!/usr/bin/env bash
# Benchmark: data-parallel training on this machine, 1 process x 2 threads
# vs 2 ranks x 1 thread (Gloo over loopback), same effective batch; prints a
# Markdown table (samples/s, time in the gradient all-reduce per update,
# bytes all-reduced per update) and the cost of those bytes on a ring at
# 100 Gb/s for 8 and 32 ranks.
# Usage: bench/ddp.sh [--repeats N] [--epochs N]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --parallel "$(nproc)" --target codefy >/dev/null
exec python3 bench/ddp/driver.py "$@"
