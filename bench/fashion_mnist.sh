#!/usr/bin/env bash
# Benchmark: the Fashion-MNIST CNN example (README's main command).
# Prints seconds per epoch and test accuracy for the full 3-epoch run, then
# one epoch with glibc malloc left untuned (CODEFY_MALLOC_TUNING=0) for the
# side-by-side ratio. Usage: bench/fashion_mnist.sh [build/codefy]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/codefy}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

epoch_times() { python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("event") == "progress" and e["data"].get("event") == "epoch":
        print("epoch %d: %.1f s, loss %.4f" % (e["data"]["epoch"], e["data"]["seconds"], e["data"]["loss"]))
    if e.get("event") == "execution_complete":
        for node, r in e["results"].items():
            if "accuracy" in r: print("test accuracy: %.4f" % r["accuracy"])
            if "samples_per_second" in r: print("samples/s: %.0f" % r["samples_per_second"])
'; }

echo "== tuned malloc (default), 3 epochs"
"$bin" run examples/fashion-mnist/graph.json --json --out "$out" | tee "$out/tuned.jsonl" | epoch_times

python3 - "$out" <<'PY'
import json, sys
g = json.load(open("examples/fashion-mnist/graph.json"))
for n in g["nodes"]:
    if n["id"] == "train": n["data"]["params"]["epochs"] = 1
json.dump(g, open(sys.argv[1] + "/one_epoch.json", "w"))
PY
echo "== untuned malloc (CODEFY_MALLOC_TUNING=0), 1 epoch"
CODEFY_MALLOC_TUNING=0 "$bin" run "$out/one_epoch.json" --json --out "$out" | tee "$out/untuned.jsonl" | epoch_times

python3 - "$out" <<'PY'
import json, sys
def first_epoch(path):
    for line in open(path):
        e = json.loads(line)
        if e.get("event") == "progress" and e["data"].get("event") == "epoch": return e["data"]["seconds"]
t, u = first_epoch(sys.argv[1] + "/tuned.jsonl"), first_epoch(sys.argv[1] + "/untuned.jsonl")
print("epoch 1: tuned %.1f s, untuned %.1f s, ratio untuned/tuned %.2f" % (t, u, u / t))
PY
