"""The article's workload side by side: Codefy's example graph against the
same model and loop in Python (bench/forecast/python_forecast.py), for fp32
and bf16, one batch of 128 against 16 x accumulate 8.

Codefy runs the example with its series shortened so an epoch has --windows
training windows (the model, window of 256 x 32 features, horizon 16 and
recipe unchanged); its TrainingLoop reports the epoch's seconds (validation
included), peak_memory_bytes.cpu (the counting allocator's highest live CPU
tensor bytes) and start_memory_bytes.cpu (live when training began: model,
data). "Training peak" is their difference: activations, gradients,
optimizer state. Python reports the epoch's seconds the same way (its
validation pass included); its memory is not counted (no allocator hook in
stock PyTorch). Configurations alternate within each repetition.
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WINDOW, HORIZON = 256, 16


def steps_for(windows, val_fraction=0.2):
    # training windows = split - (window + horizon) + 1, split = steps * (1 - val_fraction)
    split = windows + WINDOW + HORIZON - 1
    return int(round(split / (1 - val_fraction)))


def codefy_graph(windows, batch, accumulate, precision):
    g = json.load(open(os.path.join(ROOT, "examples/forecast-tcn-transformer/graph.json")))
    g = copy.deepcopy(g)
    for n in g["nodes"]:
        p = n["data"]["params"]
        if n["id"] == "series":
            p.update({"steps": steps_for(windows), "stride": 1})
        elif n["id"] == "loader":
            p.update({"batch_size": batch})
        elif n["id"] == "train":
            p.update({"epochs": 1, "device": "cpu", "precision": precision, "accumulate_steps": accumulate})
        elif n["id"] == "schedule":
            p.update({"T_max": 1})
    return g


def run_codefy(binary, tmp, windows, batch, accumulate, precision):
    path = os.path.join(tmp, "forecast-%s-%d.json" % (precision, accumulate))
    with open(path, "w") as f:
        json.dump(codefy_graph(windows, batch, accumulate, precision), f)
    p = subprocess.run([binary, "run", path, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("codefy failed:\n%s%s" % (p.stdout[-2000:], p.stderr[-2000:]))
    for line in p.stdout.splitlines():
        e = json.loads(line)
        if e.get("event") == "execution_complete":
            m = e["results"]["train"]
            return {"seconds": m["seconds"], "peak": m["peak_memory_bytes"]["cpu"],
                    "start": m["start_memory_bytes"]["cpu"], "precision": m["precision"],
                    "loss": m["final_train_loss"]}
    sys.exit("no metrics from codefy")


def run_python(windows, batch, accumulate, precision):
    p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench/forecast/python_forecast.py"),
                        "--windows", str(windows), "--batch", str(batch), "--accumulate", str(accumulate),
                        "--precision", precision],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    ap.add_argument("--windows", type=int, default=512)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="codefy-forecast-")
    configs = [("fp32", 128, 1), ("fp32", 16, 8), ("bf16", 128, 1), ("bf16", 16, 8)]
    codefy = {c: [] for c in configs}
    python = {c: [] for c in configs}
    for _ in range(a.reps):
        for c in configs:
            codefy[c].append(run_codefy(a.codefy, tmp, a.windows, c[1], c[2], c[0]))
            python[c].append(run_python(a.windows, c[1], c[2], c[0]))
    mib = lambda b: "%.1f MiB" % (b / 2**20)
    print("Epoch of %d training windows (256 steps x 32 features, horizon 16), effective batch 128, %d rep(s)"
          % (a.windows, a.reps))
    print()
    print("| precision | batch x accumulate | live at start | peak | training peak | Codefy s/epoch | Python s/epoch | Codefy / Python |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in configs:
        cm = codefy[c]
        secs = sorted(m["seconds"] for m in cm)
        ps = python[c]
        if any("error" in r for r in ps):
            py, ratio = "fails: " + next(r["error"] for r in ps if "error" in r)[:90], "-"
        else:
            pys = sorted(r["seconds"] for r in ps)
            py = " / ".join("%.1f" % s for s in pys)
            ratio = "%.2f" % (statistics.median(secs) / statistics.median(pys))
        print("| %s | %d x %d | %s | %s | %s | %s | %s | %s |" % (
            c[0], c[1], c[2], mib(cm[0]["start"]), mib(cm[0]["peak"]), mib(cm[0]["peak"] - cm[0]["start"]),
            " / ".join("%.1f" % s for s in secs), py, ratio))
    t = {c: codefy[c][0]["peak"] - codefy[c][0]["start"] for c in configs}
    print()
    print("training peak, 16 x 8 / 128 x 1: fp32 **%.3f**, bf16 **%.3f**" % (
        t[("fp32", 16, 8)] / t[("fp32", 128, 1)], t[("bf16", 16, 8)] / t[("bf16", 128, 1)]))
    print("training peak, bf16 / fp32: 128 x 1 **%.3f**, 16 x 8 **%.3f**" % (
        t[("bf16", 128, 1)] / t[("fp32", 128, 1)], t[("bf16", 16, 8)] / t[("fp32", 16, 8)]))
    med = lambda c: statistics.median(m["seconds"] for m in codefy[c])
    print("time per epoch, bf16 / fp32: 128 x 1 **%.2f**, 16 x 8 **%.2f**" % (
        med(("bf16", 128, 1)) / med(("fp32", 128, 1)), med(("bf16", 16, 8)) / med(("fp32", 16, 8))))


if __name__ == "__main__":
    main()
