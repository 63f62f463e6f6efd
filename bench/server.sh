#!/usr/bin/env bash
# Benchmark: requests/s and p99 latency of GET /api/health and GET /api/nodes
# under wrk (Debian) on loopback, with the server idle and while it trains the
# Fashion-MNIST example, for runs computing at the server's own priority
# (--run-priority 0), at nice 10 (SCHED_BATCH) and at idle (SCHED_IDLE, what
# CPU runs get by default), side by side in one run; and how long 400 updates of that
# training take with and without an editor's load or wrk, at each priority.
# Usage: bench/server.sh [seconds per measurement, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
scripts/setup.sh wrk >/dev/null
scripts/build.sh >/dev/null
data=$(mktemp -d)
port=18765
base="http://127.0.0.1:$port"
pid=
stop_server() { [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; }
trap 'stop_server; rm -rf "$data"' EXIT

start_server() {  # run priority
  build/codefy serve --port "$port" --data-dir "$data/$1" --run-priority "$1" >"$data/serve-$1.log" 2>&1 &
  pid=$!
  for _ in $(seq 50); do python3 -c "import urllib.request;urllib.request.urlopen('$base/api/health')" 2>/dev/null && return; sleep 0.2; done
  echo "the server did not start" >&2; exit 1
}

# Three wrk runs per route, back to back: the median requests/s and p99
# with the range over the three (this VM's latency wanders between runs).
measure() {  # label
  for route in /api/health /api/nodes; do
    for _ in 1 2 3; do wrk -t2 -c32 -d"${secs}s" --latency "$base$route"; echo "----"; done | python3 -c '
import re, statistics, sys
runs = [t for t in sys.stdin.read().split("----") if "Requests/sec" in t]
def ms(v):
    n, unit = float(re.match(r"([0-9.]+)", v).group(1)), re.sub(r"[0-9.]", "", v)
    return n * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
rps = [float(re.search(r"Requests/sec:\s+([0-9.]+)", t).group(1)) for t in runs]
p99 = [ms(re.search(r"99%\s+([0-9.]+\w+)", t).group(1)) for t in runs]
print("| %s | %s | %.0f (%.0f-%.0f) | %.2fms (%.2f-%.2f) |" % (sys.argv[1], sys.argv[2], statistics.median(rps),
      min(rps), max(rps), statistics.median(p99), min(p99), max(p99)))' "$1" "$route"
  done
}

# Runs the Fashion-MNIST example headless (max_steps: 0 = whole run, in the
# background; else waits for it and prints its seconds).
train() {  # max_steps
  python3 - "$base" "$1" <<'PY'
import json, sys, threading, time, urllib.request
base, steps = sys.argv[1], int(sys.argv[2])
token = json.load(urllib.request.urlopen(base + "/api/auth/bootstrap"))["token"]
graph = json.load(open("examples/fashion-mnist/graph.json"))
graph["name"] = "bench"
for n in graph["nodes"]:
    if n["type"] == "TrainingLoop":
        n["data"]["params"]["max_steps"] = steps
req = urllib.request.Request(base + "/api/graph/save", json.dumps(graph).encode(),
                             {"X-CodefyUI-Token": token, "Content-Type": "application/json"})
urllib.request.urlopen(req)
run = urllib.request.Request(base + "/api/graph/run/bench", b"{}", {"X-CodefyUI-Token": token})
if steps:
    answer = json.load(urllib.request.urlopen(run, timeout=3600))
    print("%.2f" % answer["outputs"]["train"]["metrics"]["seconds"])
    sys.exit(0)
threading.Thread(target=lambda: urllib.request.urlopen(run, timeout=3600), daemon=True).start()
for _ in range(100):  # until the training loop is running
    h = json.load(urllib.request.urlopen(base + "/api/health"))
    if any(q["running"] for q in h["queues"].values()):
        break
    time.sleep(0.1)
time.sleep(5)  # past data loading, into the epochs
PY
}

echo "| server | route | requests/s (range of 3) | p99 latency (range of 3) |"
echo "| --- | --- | --- | --- |"
for prio in 0 10 idle; do
  start_server $prio
  [ $prio = 0 ] && measure "not training"
  train 0
  measure "training (Fashion-MNIST CNN, 2 threads), runs at priority $prio"
  stop_server
done

# An editor's load: 50 requests/s (health, node list, run list), paced.
editor_load() {
  python3 - "$base" <<'PY' &
import sys, time, urllib.request
base = sys.argv[1]
routes = ["/api/health", "/api/nodes", "/api/runs"]
i = 0
while True:
    urllib.request.urlopen(base + routes[i % 3]).read()
    i += 1
    time.sleep(0.02)
PY
  load=$!
}

echo
echo "| runs at | 400 updates, quiet server | with an editor's load (50 req/s) | ratio (range of 3) | with wrk on /api/health | ratio |"
echo "| --- | --- | --- | --- | --- | --- |"
for prio in 0 10 idle; do
  start_server $prio
  train 400 >/dev/null  # warm: the data set read once
  quiet=() editor=()
  for _ in 1 2 3; do  # alternating, so a slow minute hits both
    quiet+=("$(train 400)")
    editor_load
    editor+=("$(train 400)")
    kill $load; wait $load 2>/dev/null || true
  done
  wrk -t2 -c32 -d600s "$base/api/health" >/dev/null 2>&1 &
  load=$!
  loaded=$(train 400)
  kill $load; wait $load 2>/dev/null || true
  stop_server
  python3 -c "
import statistics as st, sys
n, l = sys.argv[1], float(sys.argv[2])
q, e = [float(v) for v in sys.argv[3:6]], [float(v) for v in sys.argv[6:9]]
r = [b / a for a, b in zip(q, e)]
print('| %s | %.2f s | %.2f s | %.3fx (%.3f-%.3f) | %.2f s | %.2fx |' % (n, st.median(q), st.median(e), st.median(r), min(r), max(r), l, l / st.median(q)))" \
    $prio "$loaded" "${quiet[@]}" "${editor[@]}"
done

# What an editor's load costs by itself: the CPU time the server and its
# client spend on it over 20 s (the server not training), as a share of one
# CPU and of the machine, the floor under the slowdown of a run that uses
# every CPU.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
start_server idle
editor_load
sleep 2  # past the client's start-up
s0=$(cpu_seconds "$pid") c0=$(cpu_seconds "$load")
sleep 20
s1=$(cpu_seconds "$pid") c1=$(cpu_seconds "$load")
kill $load; wait $load 2>/dev/null || true
stop_server
python3 -c "
import os, sys
s, c = (float(sys.argv[2]) - float(sys.argv[1])) / 20, (float(sys.argv[4]) - float(sys.argv[3])) / 20
n = len(os.sched_getaffinity(0))
print()
print('An editor\'s load (50 requests/s) by itself: the server %.1f%% of one CPU, its client %.1f%%; together %.1f%% of this machine\'s %d CPUs.' % (100 * s, 100 * c, 100 * (s + c) / n, n))" \
  "$s0" "$s1" "$c0" "$c1"
