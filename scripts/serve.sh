#!/usr/bin/env bash
# Everything on a fresh Debian 12 machine: install packages, build Codefy and
# its editor, start the server and print the editor's URL. Ctrl-C stops it.
# Extra arguments go to `codefy serve` (e.g. --port 8080, --device-budget-mb cpu=4096).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
exec build/codefy serve --examples-dir examples "$@"
