"""`codefy plan` against real runs, side by side in one run: for an MLP, a CNN
and the forecast example (TCN + Transformer, series shortened to 1024 steps),
the plan's predicted peak at 2x, 3x and 4x its larger measured micro-batch
beside the peak_memory_bytes of a real `codefy run` at that micro-batch (two
optimizer updates, validation as wired), and how long the plan took.
Memory counts come from the counting allocator and are deterministic.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from graphlib import sequential_spec  # noqa: E402


def toy(name, layers, features, batch, precision):
    nodes = [("start", "Start", {}),
             ("data", "ToyDataset", {"n_samples": 512, "n_features": features, "n_classes": 10}),
             ("loader", "DataLoader", {"batch_size": batch, "shuffle": True}),
             ("model", "SequentialModel", {"layers": sequential_spec(layers)}),
             ("loss", "Loss", {"type": "CrossEntropyLoss"}),
             ("optimizer", "Optimizer", {"type": "Adam", "lr": 0.001}),
             ("train", "TrainingLoop", {"epochs": 1, "device": "cpu", "precision": precision})]
    edges = [("start", "trigger", "model", None), ("data", "dataset", "loader", "dataset"),
             ("model", "model", "optimizer", "model"), ("model", "model", "train", "model"),
             ("loader", "dataloader", "train", "dataloader"), ("optimizer", "optimizer", "train", "optimizer"),
             ("loss", "loss_fn", "train", "loss_fn")]
    return {"name": name,
            "nodes": [{"id": i, "type": t, "data": {"params": p}} for i, t, p in nodes],
            "edges": [dict({"source": s, "sourceHandle": sh, "target": t, "type": "trigger" if th is None else "data"},
                           **({"targetHandle": th} if th else {})) for s, sh, t, th in edges]}


def graphs():
    mlp = [("Linear", {"in_features": 64, "out_features": 256}), ("ReLU", {}),
           ("Linear", {"in_features": 256, "out_features": 256}), ("ReLU", {}),
           ("Linear", {"in_features": 256, "out_features": 10})]
    cnn = [("Reshape", {"shape": "3,32,32"}),
           ("Conv2d", {"in_channels": 3, "out_channels": 16, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
           ("Conv2d", {"in_channels": 16, "out_channels": 16, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
           ("AdaptiveAvgPool2d", {"output_size": 1}), ("Flatten", {}),
           ("Linear", {"in_features": 16, "out_features": 10})]
    forecast_dir = os.path.join(ROOT, "examples", "forecast-tcn-transformer")
    with open(os.path.join(forecast_dir, "graph.json")) as f:
        forecast = json.load(f)
    for n in forecast["nodes"]:
        if n["id"] == "series":
            n["data"]["params"]["steps"] = 1024
    return [("MLP 64-256-256-10, fp32", toy("mlp", mlp, 64, 64, "fp32"), ROOT),
            ("CNN 2 conv 3x32x32, bf16", toy("cnn", cnn, 3 * 32 * 32, 64, "bf16"), ROOT),
            ("forecast TCN + Transformer, bf16", forecast, forecast_dir)]


def codefy(binary, args):
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def real_peak(binary, tmp, g, base, batch):
    g = json.loads(json.dumps(g))
    for n in g["nodes"]:
        if n["id"] == "loader":
            n["data"]["params"]["batch_size"] = batch
        if n["type"] == "TrainingLoop":
            n["data"]["params"].update({"max_steps": 2, "epochs": 1})
    path = os.path.join(tmp, "run.json")
    with open(path, "w") as f:
        json.dump(g, f)
    rc, out, err = codefy(binary, ["run", path, "--json", "--base-dir", base, "--out", tmp])
    if rc != 0:
        sys.exit("run failed:\n" + out[-2000:] + err[-2000:])
    for line in out.splitlines():
        e = json.loads(line)
        if e.get("event") == "execution_complete":
            return e["results"]["train"]["peak_memory_bytes"]["cpu"]
    sys.exit("no metrics")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="codefy-plan-")
    mib = 1 << 20
    print("| model | plan time | measured at | fixed + per sample | micro-batch | predicted | real run | predicted / real |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, g, base in graphs():
        path = os.path.join(tmp, "plan.json")
        with open(path, "w") as f:
            json.dump(g, f)
        t = time.time()
        rc, out, err = codefy(a.codefy, ["plan", path, "--json", "--base-dir", base])
        took = time.time() - t
        if rc not in (0, 4):
            sys.exit("plan failed:\n" + out + err)
        p = json.loads(out)["plans"][0]
        m = p["measured"][-1]["micro_batch"]
        measured = ", ".join("%d: %.1f MiB" % (x["micro_batch"], x["peak_bytes"] / mib) for x in p["measured"])
        for k in (2 * m, 3 * m, 4 * m):
            predicted = max(p["fixed_bytes"] + p["per_sample_bytes"] * k, p.get("validation_peak_bytes", 0))
            real = real_peak(a.codefy, tmp, g, base, k)
            print("| %s | %.1f s | %s | %.2f MiB + %.1f KiB | %d | %.1f MiB | %.1f MiB | %.3f |" % (
                name, took, measured, p["fixed_bytes"] / mib, p["per_sample_bytes"] / 1024, k,
                predicted / mib, real / mib, predicted / real))


if __name__ == "__main__":
    main()
