"""Side-by-side step time: Codefy's TrainingLoop (the whole node engine, run by
the `codefy` binary) vs a hand-written LibTorch C++ loop (baseline.cpp) vs the
same loop in Python (baseline.py, Debian's python3-torch).

Every contender runs as its own process, several times, in rotating order, so
machine noise hits all of them alike. Each process trains E epochs; the first
is warm-up, the median of the rest is that process's epoch time; a case's
time is the median over its processes. All contenders get the same threads
and the same glibc malloc settings Codefy applies at start-up (through
glibc's MALLOC_*_ environment variables), so the ratio is the loop, not the
allocator. Prints a Markdown table for bench/RESULTS.md.
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

# name, model, batch, accumulate, precision, samples
CASES = [
    ("tiny MLP 32-64-10, batch 16", "tiny", 16, 1, "fp32", 16000),
    ("MLP 784-256-256-10, batch 64", "mlp", 64, 1, "fp32", 19200),
    ("MLP 784-256-256-10, batch 64, bf16", "mlp", 64, 1, "bf16", 19200),
    ("MLP 784-256-256-10, batch 16 x accumulate 4", "mlp", 16, 4, "fp32", 19200),
    ("small CNN (2 conv + linear), batch 64", "cnn", 64, 1, "fp32", 6400),
]

# Forward FLOPs per sample (2 per multiply-add); training is counted as 3x forward.
FORWARD_FLOPS = {
    "tiny": 2 * (32 * 64 + 64 * 10),
    "mlp": 2 * (784 * 256 + 256 * 256 + 256 * 10),
    "cnn": 2 * (16 * 28 * 28 * 1 * 9 + 32 * 14 * 14 * 16 * 9 + 32 * 7 * 7 * 10),
}

# Codefy with its defaults (the gradient norm read at every update, R-PRAC-1) and
# with log_grad_norm off; the hand-written loop plain and reading the norm the
# idiomatic LibTorch way (clip_grad_norm_ with an infinite limit); Python.
ALL = ["codefy", "codefy-nonorm", "cpp", "cpp-norm", "python"]

MALLOC_ENV = {  # the values of device::tune_allocator()
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    "MALLOC_TOP_PAD_": str(64 << 20),
}


def layer_spec(model):
    """The model as a SequentialModel v2 spec (what the editor saves)."""
    if model == "tiny":
        layers = [("Linear", {"in_features": 32, "out_features": 64}), ("ReLU", {}),
                  ("Linear", {"in_features": 64, "out_features": 10})]
    elif model == "mlp":
        layers = [("Linear", {"in_features": 784, "out_features": 256}), ("ReLU", {}),
                  ("Linear", {"in_features": 256, "out_features": 256}), ("ReLU", {}),
                  ("Linear", {"in_features": 256, "out_features": 10})]
    else:
        layers = [("Conv2d", {"in_channels": 1, "out_channels": 16, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
                  ("MaxPool2d", {"kernel_size": 2}),
                  ("Conv2d", {"in_channels": 16, "out_channels": 32, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
                  ("MaxPool2d", {"kernel_size": 2}), ("Flatten", {}),
                  ("Linear", {"in_features": 32 * 7 * 7, "out_features": 10})]
    return sequential_spec(layers)


def codefy_graph(model, batch, accumulate, precision, samples, epochs, log_grad_norm):
    if model == "cnn":  # real images: Fashion-MNIST from Debian's dataset-fashion-mnist
        data = {"type": "Dataset", "params": {"name": "FashionMNIST", "split": "train", "max_samples": samples}}
    else:
        data = {"type": "ToyDataset", "params": {"task": "classification", "n_samples": samples,
                                                "n_features": 784 if model == "mlp" else 32, "n_classes": 10}}
    nodes = [
        ("start", "Start", {}),
        ("data", data["type"], data["params"]),
        ("loader", "DataLoader", {"batch_size": batch, "shuffle": True}),
        ("model", "SequentialModel", {"layers": layer_spec(model)}),
        ("loss", "Loss", {"type": "CrossEntropyLoss"}),
        ("optimizer", "Optimizer", {"type": "Adam", "lr": 0.001}),
        ("train", "TrainingLoop", {"epochs": epochs, "device": "cpu", "precision": precision,
                                   "accumulate_steps": accumulate, "log_grad_norm": log_grad_norm}),
    ]
    edges = [("start", "trigger", "model", None), ("data", "dataset", "loader", "dataset"),
             ("model", "model", "optimizer", "model"), ("model", "model", "train", "model"),
             ("loader", "dataloader", "train", "dataloader"), ("optimizer", "optimizer", "train", "optimizer"),
             ("loss", "loss_fn", "train", "loss_fn")]
    return {
        "name": "step-time benchmark",
        "nodes": [{"id": i, "type": t, "position": {"x": 0, "y": 0}, "data": {"params": p}} for i, t, p in nodes],
        "edges": [dict({"id": "e%d" % k, "source": s, "sourceHandle": sh, "target": t,
                        "type": "trigger" if th is None else "data"}, **({"targetHandle": th} if th else {}))
                  for k, (s, sh, t, th) in enumerate(edges)],
    }


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return p.stdout


def codefy_epochs(binary, graph_path, env):
    seconds, batches = [], None
    for line in run([binary, "run", graph_path, "--json"], env).splitlines():
        e = json.loads(line)
        if e.get("event") != "progress":
            continue
        d = e["data"]
        if d.get("event") == "config":
            batches = d["config"]["batches_per_epoch"]
        elif d.get("event") == "epoch":
            seconds.append(d["seconds"])
    return seconds, batches


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    ap.add_argument("--baseline", default=os.path.join(ROOT, "build", "codefy_bench_baseline"))
    ap.add_argument("--reps", type=int, default=5, help="processes per contender and case")
    ap.add_argument("--epochs", type=int, default=4, help="epochs per process (the first is warm-up)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cases", default="", help="comma-separated case numbers (1-based); empty = all")
    ap.add_argument("--contenders", default=",".join(ALL))
    a = ap.parse_args()

    env = dict(os.environ, **MALLOC_ENV, CODEFY_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    gemm = json.loads(run([a.baseline, "--gemm", "--threads", str(a.threads)], env))
    print("threads %d; measured GEMM rate (1024^3, best of several): fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n"
          % (a.threads, gemm["fp32_gflops"], gemm["bf16_gflops"]))

    chosen = [CASES[int(i) - 1] for i in a.cases.split(",")] if a.cases else CASES
    tmp = tempfile.mkdtemp(prefix="codefy-bench-")
    rows = []
    names = a.contenders.split(",")
    for title, model, batch, accumulate, precision, samples in chosen:
        args = ["--model", model, "--batch", str(batch), "--accumulate", str(accumulate), "--precision", precision,
                "--samples", str(samples), "--epochs", str(a.epochs), "--threads", str(a.threads)]
        graphs = {}
        for lg in (True, False):
            graphs[lg] = os.path.join(tmp, "%s-%s-%d-%s.json" % (model, precision, accumulate, lg))
            with open(graphs[lg], "w") as f:
                json.dump(codefy_graph(model, batch, accumulate, precision, samples, a.epochs, lg), f)

        def contender(name):
            if name == "codefy":
                return codefy_epochs(a.codefy, graphs[True], env)
            if name == "codefy-nonorm":
                return codefy_epochs(a.codefy, graphs[False], env)
            if name == "cpp-norm":
                out = json.loads(run([a.baseline, "--grad-norm"] + args, env))
                return out["epoch_seconds"], out["batches_per_epoch"]
            cmd = [a.baseline] + args if name == "cpp" else [sys.executable, os.path.join(ROOT, "bench", "step_time",
                                                                                        "baseline.py")] + args
            out = json.loads(run(cmd, env))
            return out["epoch_seconds"], out["batches_per_epoch"]

        per_batch = {n: [] for n in names}
        for rep in range(a.reps):
            for n in names[rep % len(names):] + names[:rep % len(names)]:  # rotate the order
                seconds, batches = contender(n)
                per_batch[n].append(statistics.median(seconds[1:] or seconds) / batches)
        t = {n: statistics.median(v) for n, v in per_batch.items()}
        flops = 3 * FORWARD_FLOPS[model] * batch  # per micro-batch
        peak = gemm["bf16_gflops"] if precision == "bf16" else gemm["fp32_gflops"]
        rows.append((title, t, flops / t["codefy"] / 1e9 if "codefy" in t else 0, peak))
        print("%s: %s" % (title, ", ".join("%s %.1f us [%s]" % (n, t[n] * 1e6, " ".join("%.1f" % (x * 1e6)
                                                                                       for x in per_batch[n]))
                                            for n in names)), flush=True)

    if set(names) != set(ALL):
        return
    print("\n| case | Codefy | Codefy, log_grad_norm off | C++ | C++ + grad norm | Python "
          "| **Codefy / C++** | Codefy off / C++ | Codefy / (C++ + grad norm) | C++ / Python | Codefy / Python "
          "| Codefy GFLOP/s (of GEMM) |")
    print("| --- " * 12 + "|")
    for title, t, gflops, peak in rows:
        us = lambda n: "%.0f us" % (t[n] * 1e6)
        print("| %s | %s | %s | %s | %s | %s | **%.3f** | %.3f | %.3f | %.2f | %.2f | %.1f (%.0f%%) |" % (
            title, us("codefy"), us("codefy-nonorm"), us("cpp"), us("cpp-norm"), us("python"),
            t["codefy"] / t["cpp"], t["codefy-nonorm"] / t["cpp"], t["codefy"] / t["cpp-norm"],
            t["cpp"] / t["python"], t["codefy"] / t["python"], gflops, 100 * gflops / peak))
    print("\nTimes are per micro-batch (median over processes of each process's median epoch / batches).")


if __name__ == "__main__":
    main()
