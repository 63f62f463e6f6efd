#!/usr/bin/env bash
# Copies the header-only nlohmann/json into build-gpu-deps/include so that
# tests/gpu/check.sh can build on a GPU machine that has only PyTorch.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-gpu-deps/include
cp -r /usr/include/nlohmann build-gpu-deps/include/
# Gloo's headers (libgloo-dev), which c10d's ProcessGroupGloo.hpp includes,
# for the NCCL check; used only where the wheel ships none of its own.
mkdir -p build-gpu-deps/gloo-include
cp -r /usr/include/gloo build-gpu-deps/gloo-include/
du -sh build-gpu-deps
