#!/usr/bin/env bash
# Everything on a fresh Debian 12 machine: install packages, build, then train
# the Fashion-MNIST CNN example (3 epochs) and print its metrics.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/codefy run examples/fashion-mnist/graph.json "$@"
