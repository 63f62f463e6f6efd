#!/usr/bin/env bash
# The editor's weight and speed: JavaScript loaded before the canvas shows
# (gzip), and the time to open a 300-node graph in headless chromium, with
# and without positions in the file. Needs a built tree (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
nodes="${1:-300}"; reps="${2:-5}"; port=18810

echo "JavaScript and CSS the first screen loads (gzip -9 bytes):"
for f in $(grep -oE '/assets/[^"]+\.(js|css)' web/dist/index.html); do
  printf '  %-40s %8d\n' "$f" "$(gzip -9c "web/dist$f" | wc -c)"
done
echo "Loaded on demand (gzip -9 bytes):"
for f in web/dist/assets/*.js; do
  grep -q "$(basename "$f")" web/dist/index.html || printf '  %-40s %8d\n' "/assets/$(basename "$f")" "$(gzip -9c "$f" | wc -c)"
done

data="$(mktemp -d)"
build/codefy serve --port "$port" --data-dir "$data" --web-dir web/dist >/dev/null 2>&1 &
server=$!
trap 'kill $server; rm -rf "$data"' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.2; done
node bench/editor/open_graph.mjs "http://127.0.0.1:$port" "$nodes" "$reps"
