#!/usr/bin/env bash
# Configures and builds a sanitizer build with clang 14 at -O1:
#
#   scripts/sanitize-build.sh [targets...]           ./build-sanitize: AddressSanitizer +
#       UndefinedBehaviorSanitizer on Codefy's libraries, and libFuzzer's
#       coverage, so the fuzz targets (fuzz/) share them
#   scripts/sanitize-build.sh --thread [targets...]  ./build-tsan: ThreadSanitizer, the server's tests
#
# Targets: what to build (default: all of that build's). Used by
# `scripts/test.sh --sanitize [thread]` and `scripts/fuzz.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The test programs of the ASan + UBSan build, chosen for CI's time
# (README, "Build time"; instrumentation about doubles a unit's compile
# time): those of the libraries that parse what comes from outside (graph
# files, messages, weight files, CSV, uploads) and of the server that
# receives it; of test_train, the readers' tests (test_train_readers). Left
# out: test_model, test_device, test_plot, the rest of test_train and the
# node-library programs (test_engine, test_layer_nodes, test_classic_nodes,
# test_tensor_nodes, test_edu_nodes, test_distributed), whose tests train models
# through LibTorch, which is not instrumented anyway; the layer-spec and
# graph fuzz targets cover the parsing among them. Every library is
# instrumented (the fuzz targets link them all).
if [ "${1:-}" = "--thread" ]; then
  shift
  dir=build-tsan
  options=(-DCODEFY_SANITIZE=thread -DCODEFY_FUZZ=OFF -DCODEFY_TEST_PROGRAMS=test_server)
else
  dir=build-sanitize
  options=(-DCODEFY_SANITIZE=address,undefined -DCODEFY_FUZZ=ON
           "-DCODEFY_TEST_PROGRAMS=test_util;test_graph;test_store;test_train_readers;test_server")
fi

# -DNDEBUG as in every build: Debian's LibTorch is built with it, and some of
# its classes have members only without it (at::RecordFunction's
# inputs_valid_), so our code would see another layout than the library's.
# Warnings are shown, not fatal: the gcc build (scripts/build.sh) is the
# one with -Werror; clang's own warnings must not fail this build.
cmake -S . -B "$dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCODEFY_FATAL_WARNINGS=OFF \
  "${options[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$dir" --parallel "$(nproc)" --target "$@"
else
  cmake --build "$dir" --parallel "$(nproc)"
fi
