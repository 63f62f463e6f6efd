"""Peak memory of training, side by side in one run: bf16 vs fp32, and
batch 8 x accumulate 4 vs batch 32 vs batch 8, on an activation-heavy CNN
(three 3x3 convolutions at 64x64, about 20k parameters: activations are
nearly all of the memory).

Each configuration runs the `codefy` binary once (memory counts are
deterministic; no need for medians) for a few optimizer updates and reads
TrainingLoop's metrics: peak_memory_bytes.cpu (highest live CPU tensor bytes
during the node, from the counting allocator) and start_memory_bytes.cpu
(live when training started: model, data). "Training peak" is their
difference: activations, gradients, optimizer state.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from graphlib import sequential_spec  # noqa: E402


def layers():
    spec = [("Reshape", {"shape": "3,64,64"}),
            ("Conv2d", {"in_channels": 3, "out_channels": 32, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
            ("Conv2d", {"in_channels": 32, "out_channels": 32, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
            ("Conv2d", {"in_channels": 32, "out_channels": 32, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
            ("AdaptiveAvgPool2d", {"output_size": 1}), ("Flatten", {}),
            ("Linear", {"in_features": 32, "out_features": 10})]
    return sequential_spec(spec)


def graph(batch, accumulate, precision, updates):
    nodes = [
        ("start", "Start", {}),
        ("data", "ToyDataset", {"n_samples": 256, "n_features": 3 * 64 * 64, "n_classes": 10}),
        ("loader", "DataLoader", {"batch_size": batch, "shuffle": True}),
        ("model", "SequentialModel", {"layers": layers()}),
        ("loss", "Loss", {"type": "CrossEntropyLoss"}),
        ("optimizer", "Optimizer", {"type": "Adam", "lr": 0.001}),
        ("train", "TrainingLoop", {"epochs": 1, "device": "cpu", "precision": precision,
                                   "accumulate_steps": accumulate, "max_steps": updates}),
    ]
    edges = [("start", "trigger", "model", None), ("data", "dataset", "loader", "dataset"),
             ("model", "model", "optimizer", "model"), ("model", "model", "train", "model"),
             ("loader", "dataloader", "train", "dataloader"), ("optimizer", "optimizer", "train", "optimizer"),
             ("loss", "loss_fn", "train", "loss_fn")]
    return {"name": "memory benchmark",
            "nodes": [{"id": i, "type": t, "data": {"params": p}} for i, t, p in nodes],
            "edges": [dict({"source": s, "sourceHandle": sh, "target": t, "type": "trigger" if th is None else "data"},
                           **({"targetHandle": th} if th else {})) for s, sh, t, th in edges]}


def measure(binary, tmp, name, batch, accumulate, precision, updates):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(graph(batch, accumulate, precision, updates), f)
    p = subprocess.run([binary, "run", path, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (name, p.stdout[-2000:], p.stderr[-2000:]))
    for line in p.stdout.splitlines():
        e = json.loads(line)
        if e.get("event") == "execution_complete":
            m = e["results"]["train"]
            return {"peak": m["peak_memory_bytes"]["cpu"], "start": m["start_memory_bytes"]["cpu"],
                    "precision": m["precision"], "steps": m["total_steps"]}
    sys.exit("no metrics from " + name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    ap.add_argument("--updates", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="codefy-memory-")
    runs = {
        "fp32, batch 32": (32, 1, "fp32"),
        "bf16, batch 32": (32, 1, "bf16"),
        "fp32, batch 8": (8, 1, "fp32"),
        "fp32, batch 8 x accumulate 4": (8, 4, "fp32"),
    }
    r = {name: measure(a.codefy, tmp, "run%d" % i, *cfg, a.updates) for i, (name, cfg) in enumerate(runs.items())}
    mib = lambda b: "%.1f MiB" % (b / 2**20)
    print("| run | precision used | updates | live at start | peak | training peak (peak - start) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, m in r.items():
        print("| %s | %s | %d | %s | %s | %s |" % (name, m["precision"], m["steps"], mib(m["start"]), mib(m["peak"]),
                                                  mib(m["peak"] - m["start"])))
    t = {name: m["peak"] - m["start"] for name, m in r.items()}
    print()
    print("bf16 / fp32 training peak, batch 32: **%.3f** (goal <= 0.6)" % (t["bf16, batch 32"] / t["fp32, batch 32"]))
    print("batch 8 x 4 / batch 32 training peak: **%.3f** (goal <= 0.35)"
          % (t["fp32, batch 8 x accumulate 4"] / t["fp32, batch 32"]))
    print("batch 8 x 4 / batch 8 training peak: **%.3f** (goal within 10%%, <= 1.10)"
          % (t["fp32, batch 8 x accumulate 4"] / t["fp32, batch 8"]))


if __name__ == "__main__":
    main()
