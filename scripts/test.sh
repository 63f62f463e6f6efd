#!/usr/bin/env bash
# Everything on a fresh Debian 12 machine: install packages, build, run all
# tests: the C++ tests (ctest, the layering check among them), the editor's
# unit tests (Vitest) and its browser tests (Playwright in Debian's chromium
# against a real `codefy serve`).
#
# scripts/test.sh --sanitize: instead, the sanitizer build (./build-sanitize,
# clang, AddressSanitizer + UndefinedBehaviorSanitizer; see
# scripts/sanitize-build.sh for which test programs it holds) and its ctest.
# scripts/test.sh --sanitize thread: ThreadSanitizer (./build-tsan) on the
# server's tests (not in CI: a third build of the libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  scripts/setup.sh
  if [ "${2:-}" = "thread" ]; then
    scripts/sanitize-build.sh --thread
    dir=build-tsan
  else
    scripts/sanitize-build.sh
    dir=build-sanitize
  fi
  # Left to the normal ctest: ServerDdp.* and distributed_two_machines, whose
  # `codefy` ranks meet over Gloo within a timeout: under the sanitizers on a
  # busy machine a rank missed it (one run took 308 s, another failed "rank
  # 1 never joined"), and the DDP code is no reader of outside input. Also
  # left out: the slow-reader test, which bounds how many progress frames a
  # run sends in a wall-clock window (timing, not memory safety; it missed
  # that window under the sanitizers on a busy machine).
  GTEST_FILTER='-ServerDdp.*:ServerFixture.AClientThatReadsSlowlyMissesProgressButNeverTheRunsEnd' exec ctest --test-dir "$dir" --output-on-failure --parallel "$(nproc)" \
    -E '^distributed_two_machines$'
fi
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
cd web
npm run --silent lint
npm test --silent
npm run --silent e2e
