#!/usr/bin/env bash
# Benchmark: requests/s and p99 latency of GET /api/health and GET /api/nodes
# under wrk (Debian) on loopback, with the server idle and while it trains the
# Fashion-MNIST example (same run, side by side).
# Usage: bench/server.sh [seconds per measurement, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
scripts/setup.sh wrk >/dev/null
scripts/build.sh >/dev/null
data=$(mktemp -d)
port=18765
build/codefy serve --port "$port" --data-dir "$data" >"$data/serve.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 50); do python3 -c "import urllib.request;urllib.request.urlopen('$base/api/health')" 2>/dev/null && break; sleep 0.2; done

measure() {  # label
  for route in /api/health /api/nodes; do
    wrk -t2 -c32 -d"${secs}s" --latency "$base$route" | python3 -c '
import re, sys
t = sys.stdin.read()
rps = re.search(r"Requests/sec:\s+([0-9.]+)", t).group(1)
p99 = re.search(r"99%\s+([0-9.]+\w+)", t).group(1)
print("| %s | %s | %s | %s |" % (sys.argv[1], sys.argv[2], rps, p99))' "$1" "$route"
  done
}

echo "| server | route | requests/s | p99 latency |"
echo "| --- | --- | --- | --- |"
measure idle
python3 - "$base" <<'PY'
import json, sys, threading, urllib.request
base = sys.argv[1]
token = json.load(urllib.request.urlopen(base + "/api/auth/bootstrap"))["token"]
graph = json.load(open("examples/fashion-mnist/graph.json"))
graph["name"] = "bench"
req = urllib.request.Request(base + "/api/graph/save", json.dumps(graph).encode(),
                             {"X-CodefyUI-Token": token, "Content-Type": "application/json"})
urllib.request.urlopen(req)
run = urllib.request.Request(base + "/api/graph/run/bench", b"{}", {"X-CodefyUI-Token": token})
threading.Thread(target=lambda: urllib.request.urlopen(run, timeout=3600), daemon=True).start()
import time
for _ in range(100):  # until the training loop is running
    h = json.load(urllib.request.urlopen(base + "/api/health"))
    if h["queues"]["cpu"]["running"]:
        break
    time.sleep(0.1)
time.sleep(5)  # past data loading, into the epochs
PY
measure "training (Fashion-MNIST CNN, 2 threads)"
