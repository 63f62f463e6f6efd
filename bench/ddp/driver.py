"""bench/ddp.sh's driver: one process with two threads against two ranks
with one thread each, the same samples per update, medians of N runs."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from graphlib import sequential_spec  # noqa: E402

FEATURES, HIDDEN, CLASSES, SAMPLES = 64, 512, 10, 16384


def graph(batch, epochs):
    layers = [("Linear", {"in_features": FEATURES, "out_features": HIDDEN}), ("ReLU", {}),
              ("Linear", {"in_features": HIDDEN, "out_features": HIDDEN}), ("ReLU", {}),
              ("Linear", {"in_features": HIDDEN, "out_features": CLASSES})]

    def node(i, t, p):
        return {"id": i, "type": t, "data": {"params": p}}

    def edge(s, sh, t, th):
        return {"source": s, "sourceHandle": sh, "target": t, "targetHandle": th, "type": "data"}
    return {"name": "ddp-bench", "nodes": [
        node("start", "Start", {}),
        node("data", "ToyDataset", {"n_samples": SAMPLES, "n_features": FEATURES, "n_classes": CLASSES, "seed": 1}),
        node("loader", "DataLoader", {"batch_size": batch, "shuffle": True}),
        node("mlp", "SequentialModel", {"layers": sequential_spec(layers)}),
        node("loss", "Loss", {"type": "CrossEntropyLoss"}),
        node("opt", "Optimizer", {"type": "SGD", "lr": 0.05, "momentum": 0.9}),
        node("train", "TrainingLoop", {"epochs": epochs, "strategy": "ddp", "device": "cpu", "log_grad_norm": False})],
        "edges": [{"source": "start", "sourceHandle": "trigger", "target": "mlp", "type": "trigger"},
                  edge("data", "dataset", "loader", "dataset"), edge("mlp", "model", "opt", "model"),
                  edge("mlp", "model", "train", "model"), edge("loader", "dataloader", "train", "dataloader"),
                  edge("opt", "optimizer", "train", "optimizer"), edge("loss", "loss_fn", "train", "loss_fn")]}


def run(args):
    out = subprocess.run(["build/codefy", "run"] + args + ["--json"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if '"execution_complete"' in line:
            return json.loads(line)["results"]["train"]
    raise RuntimeError(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128, help="samples per update (each rank takes half)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, batch in (("one", a.batch), ("two", a.batch // 2)):
            paths[name] = os.path.join(tmp, name + ".json")
            with open(paths[name], "w") as f:
                json.dump(graph(batch, a.epochs), f)
        rows = {"1 process x 2 threads": [], "1 process x 1 thread": [], "2 ranks x 1 thread": []}
        for _ in range(a.repeats):
            rows["1 process x 2 threads"].append(run([paths["one"], "--threads", "2"]))
            rows["1 process x 1 thread"].append(run([paths["one"], "--threads", "1"]))
            rows["2 ranks x 1 thread"].append(run([paths["two"], "--nproc-per-node", "2", "--threads", "1"]))
    print("| | samples/s (median of %d) | all-reduce per update | bytes per update |" % a.repeats)
    print("| --- | --- | --- | --- |")
    grad_bytes = 0
    for name, ms in rows.items():
        sps = statistics.median(m["samples_per_second"] for m in ms)
        ddp = [m.get("ddp") for m in ms if m.get("ddp")]
        if ddp:
            t = statistics.median(d["all_reduce_seconds_per_reduction"] for d in ddp)
            grad_bytes = ddp[0]["bytes_per_reduction"]
            print("| %s | %.0f | %.3f ms | %d |" % (name, sps, t * 1e3, grad_bytes))
        else:
            print("| %s | %.0f | - | - |" % (name, sps))
    print()
    print("On paper, ring all-reduce at 100 Gb/s (12.5 GB/s), 2(n-1)/n x bytes per rank:")
    for label, nbytes in (("this model", grad_bytes), ("ResNet-50 (25.6M fp32 weights)", 25.6e6 * 4)):
        for n in (8, 32):
            print("- %s, %d ranks: %.3f ms per update" % (label, n, 2 * (n - 1) / n * nbytes / 12.5e9 * 1e3))


if __name__ == "__main__":
    main()
