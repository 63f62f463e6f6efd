"""Run history's recording overhead: an MLP (64-256-256-10, Adam, ToyDataset of 20,000
samples, batch 64, 6 epochs, one thread) run with `codefy run --json`, alternating with
and without --no-record, and recording with --tensorboard too; prints each TrainingLoop's seconds, the medians and their ratio,
and the size of the store the recorded runs made. Run from the repository root:
python3 bench/history/overhead.py [--reps N]. The ratio of whole runs is noisy on a shared
machine; the recorder also reports the time it spent itself (recording_seconds), which is the
cost measured directly.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from graphlib import sequential_spec  # noqa: E402


def graph():
    spec = [("Linear", {"in_features": 64, "out_features": 256}), ("ReLU", {}),
            ("Linear", {"in_features": 256, "out_features": 256}), ("ReLU", {}),
            ("Linear", {"in_features": 256, "out_features": 10})]
    nodes = [("start", "Start", {}), ("data", "ToyDataset", {"n_samples": 20000, "n_features": 64, "n_classes": 10}),
             ("loader", "DataLoader", {"batch_size": 64, "shuffle": True}),
             ("model", "SequentialModel", {"layers": sequential_spec(spec)}),
             ("loss", "Loss", {"type": "CrossEntropyLoss"}), ("optimizer", "Optimizer", {"type": "Adam", "lr": 0.001}),
             ("train", "TrainingLoop", {"epochs": 6, "device": "cpu"})]
    edges = [("start", "trigger", "model", None), ("data", "dataset", "loader", "dataset"),
             ("model", "model", "optimizer", "model"), ("model", "model", "train", "model"),
             ("loader", "dataloader", "train", "dataloader"), ("optimizer", "optimizer", "train", "optimizer"),
             ("loss", "loss_fn", "train", "loss_fn")]
    return {"name": "overhead",
            "nodes": [{"id": i, "type": t, "data": {"params": p}} for i, t, p in nodes],
            "edges": [dict({"source": s, "sourceHandle": sh, "target": t, "type": "trigger" if th is None else "data"},
                           **({"targetHandle": th} if th else {})) for s, sh, t, th in edges]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="codefy-history-")
    path = os.path.join(tmp, "g.json")
    with open(path, "w") as f:
        json.dump(graph(), f)
    store = os.path.join(tmp, "d")
    times = {"record": [], "no-record": [], "record+tensorboard": []}
    busy = {"record": [], "record+tensorboard": []}
    for _ in range(a.reps):
        for mode in times:
            args = [a.codefy, "run", path, "--json", "--data-dir", store, "--threads", "1"]
            if mode == "no-record":
                args.append("--no-record")
            if mode == "record+tensorboard":
                args += ["--tensorboard", os.path.join(tmp, "tb")]
            out = subprocess.run(args, capture_output=True, text=True).stdout
            for line in out.splitlines():
                e = json.loads(line)
                if e.get("event") == "execution_complete":
                    times[mode].append(e["results"]["train"]["seconds"])
                    if mode in busy:
                        busy[mode].append(e["recording_seconds"] / e["seconds"])
    for mode, v in times.items():
        print(mode, ["%.2f" % x for x in v], "median %.3f" % statistics.median(v))
    for mode, shares in busy.items():
        print("%s: the recorder's own time / the run's, measured in the run: median %.5f, max %.5f"
              % (mode, statistics.median(shares), max(shares)))
    for mode in ("record", "record+tensorboard"):
        print("%s / no-record: %.3f" % (mode, statistics.median(times[mode]) / statistics.median(times["no-record"])))
    print("store bytes", sum(os.path.getsize(os.path.join(store, f)) for f in os.listdir(store)), "for", a.reps, "runs")


if __name__ == "__main__":
    main()
