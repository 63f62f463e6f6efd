#!/usr/bin/env bash
# Everything on a fresh Debian 12 machine: install packages, build, run all
# tests: the C++ tests (ctest, the layering check among them), the editor's
# unit tests (Vitest) and its browser tests (Playwright in Debian's chromium
# against a real `codefy serve`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure --parallel "$(nproc)"
cd web
npm run --silent lint
npm test --silent
npm run --silent e2e
