#!/usr/bin/env bash
# Everything on a fresh Debian 12 machine: install packages, build, run all tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
