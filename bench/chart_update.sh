#!/usr/bin/env bash
# The loss chart's update cost with a long series (default 100k points, 200
# updates): per update, fold one progress message into the run's series,
# build the chart's columns and redraw, in headless chromium; the code the
# editor uses beside the code it replaced. Needs web/node_modules (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."
node bench/editor/chart_update.mjs "${1:-100000}" "${2:-200}"
