"""Side-by-side step time: Codefy's TrainingLoop (the whole node engine, run by
the `codefy` binary) vs a hand-written LibTorch C++ loop (baseline.cpp) vs the
same loop in Python (baseline.py, Debian's python3-torch).

Every contender runs as its own process, several times, in rotating order, so
machine noise hits all of them alike. Each process trains E epochs; the first
is warm-up, the median of the rest is that process's epoch time; a case's
time is the median over its processes, printed with the range over them.
Ratios are taken per repetition (processes of one rotation ran back to back)
and the median of those is reported with its range, so a slow minute hits
both sides of a ratio. All contenders get the same threads and the same glibc
malloc settings Codefy applies at start-up (through glibc's MALLOC_*_
environment variables), so the ratio is the loop, not the allocator. Prints
Markdown tables for bench/RESULTS.md.
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
    ("small CNN (2 conv + linear), batch 64, bf16", "cnn", 64, 1, "bf16", 6400),
]

# Forward FLOPs per sample (2 per multiply-add); training is counted as 3x forward.
FORWARD_FLOPS = {
    "tiny": 2 * (32 * 64 + 64 * 10),
    "mlp": 2 * (784 * 256 + 256 * 256 + 256 * 10),
    "cnn": 2 * (16 * 28 * 28 * 1 * 9 + 32 * 14 * 14 * 16 * 9 + 32 * 7 * 7 * 10),
}

# Codefy with its defaults (the gradient norm read at every update) and with
# log_grad_norm off; the hand-written loop as a LibTorch user writes it, and
# "tuned": doing what Codefy does beyond the textbook (single-pass Adam,
# channels-last pooling, one autocast cache per accumulation window), plain
# and reading the norm the idiomatic LibTorch way (clip_grad_norm_ with an
# infinite limit): those two leave Codefy's node engine as the only
# difference; Python.
ALL = ["codefy", "codefy-nonorm", "cpp", "cpp-tuned", "cpp-tuned-norm", "python"]

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


def codefy_epochs(cmd, env):
    seconds, batches = [], None
    for line in run(cmd, env).splitlines():
        e = json.loads(line)
        if e.get("event") != "progress":
            continue
        d = e["data"]
        if d.get("event") == "config":
            batches = d["config"]["batches_per_epoch"]
        elif d.get("event") == "epoch":
            seconds.append(d["seconds"])
    return seconds, batches


def machine():
    """The CPU's model and its bf16 instructions: bf16's speed-up depends on them (AMX, AVX-512 BF16)."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    bf16 = [f for f in ("avx512_bf16", "amx_bf16") if f in flags] or ["none"]
    return "%s, %d logical CPUs, bf16 instructions: %s" % (model, os.cpu_count(), " ".join(bf16))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codefy", default=os.path.join(ROOT, "build", "codefy"))
    ap.add_argument("--baseline", default=os.path.join(ROOT, "build", "codefy_bench_baseline"))
    ap.add_argument("--reps", type=int, default=7, help="processes per contender and case")
    ap.add_argument("--epochs", type=int, default=4, help="epochs per process (the first is warm-up)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cases", default="", help="comma-separated case numbers (1-based); empty = all")
    ap.add_argument("--contenders", default=",".join(ALL))
    a = ap.parse_args()

    env = dict(os.environ, **MALLOC_ENV, CODEFY_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    gemm = json.loads(run([a.baseline, "--gemm", "--threads", str(a.threads)], env))
    print("machine: %s" % machine())
    print("threads %d; measured GEMM rate (1024^3, best of several): fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s\n"
          % (a.threads, gemm["fp32_gflops"], gemm["bf16_gflops"]))

    chosen = [CASES[int(i) - 1] for i in a.cases.split(",")] if a.cases else CASES
    tmp = tempfile.mkdtemp(prefix="codefy-bench-")
    rows = []
    names = a.contenders.split(",")
    def command(name, case, graphs):
        title, model, batch, accumulate, precision, samples = case
        if name == "codefy":
            return [a.codefy, "run", graphs[True], "--json"]
        if name == "codefy-nonorm":
            return [a.codefy, "run", graphs[False], "--json"]
        args = ["--model", model, "--batch", str(batch), "--accumulate", str(accumulate), "--precision", precision,
                "--samples", str(samples), "--epochs", str(a.epochs), "--threads", str(a.threads)]
        if name.startswith("cpp"):
            return [a.baseline] + {"cpp": [], "cpp-tuned": ["--tuned"],
                                   "cpp-tuned-norm": ["--tuned", "--grad-norm"]}[name] + args
        return [sys.executable, os.path.join(ROOT, "bench", "step_time", "baseline.py")] + args

    graphs = {}
    for case in chosen:
        title, model, batch, accumulate, precision, samples = case
        graphs[title] = {}
        for lg in (True, False):
            graphs[title][lg] = os.path.join(tmp, "%s-%s-%d-%s.json" % (model, precision, accumulate, lg))
            with open(graphs[title][lg], "w") as f:
                json.dump(codefy_graph(model, batch, accumulate, precision, samples, a.epochs, lg), f)

    # Repetitions outermost: one repetition runs every case and contender
    # (contenders in rotating order), so the processes a ratio compares,
    # bf16 against fp32 too, ran minutes apart at most.
    results = {case[0]: {n: [] for n in names} for case in chosen}
    for rep in range(a.reps):
        for case in chosen:
            for n in names[rep % len(names):] + names[:rep % len(names)]:
                if n.startswith("codefy"):
                    seconds, batches = codefy_epochs(command(n, case, graphs[case[0]]), env)
                else:
                    out = json.loads(run(command(n, case, graphs[case[0]]), env))
                    seconds, batches = out["epoch_seconds"], out["batches_per_epoch"]
                results[case[0]][n].append(statistics.median(seconds[1:] or seconds) / batches)
        print("repetition %d of %d done" % (rep + 1, a.reps), file=sys.stderr, flush=True)

    for title, model, batch, accumulate, precision, samples in chosen:
        per_batch = results[title]
        flops = 3 * FORWARD_FLOPS[model] * batch  # per micro-batch
        peak = gemm["bf16_gflops"] if precision == "bf16" else gemm["fp32_gflops"]
        rows.append((title, model, precision, per_batch, peak, flops))
        print("%s: %s" % (title, ", ".join("%s %s [%s]" % (n, us(per_batch[n]), " ".join(
            "%.0f" % (x * 1e6) for x in per_batch[n])) for n in names)), flush=True)

    if set(names) != set(ALL):
        return
    print("\n| case | Codefy | Codefy, log_grad_norm off | C++ | C++ tuned | C++ tuned + grad norm | Python "
          "| **Codefy / (C++ tuned + norm)** | Codefy off / C++ tuned | Codefy / C++ "
          "| C++ / Python | Codefy GFLOP/s (of GEMM) |")
    print("| --- " * 12 + "|")
    for title, model, precision, pb, peak, flops in rows:
        med = lambda n: statistics.median(pb[n])
        gflops = flops / med("codefy") / 1e9
        print("| %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s | %.1f (%.0f%%) |" % (
            title, us(pb["codefy"]), us(pb["codefy-nonorm"]), us(pb["cpp"]), us(pb["cpp-tuned"]),
            us(pb["cpp-tuned-norm"]), us(pb["python"]), ratio(pb["codefy"], pb["cpp-tuned-norm"]),
            ratio(pb["codefy-nonorm"], pb["cpp-tuned"]), ratio(pb["codefy"], pb["cpp"]), ratio(pb["cpp"], pb["python"]),
            gflops, 100 * gflops / peak))
    print("\nTimes are per micro-batch: median over processes of each process's median epoch / batches, "
          "with the range over processes. Ratios: median over repetitions of the per-repetition ratio, with its range.")

    pairs = [(t32, t16) for t32, m32, p32, _, _, _ in rows if p32 == "fp32"
             for t16, m16, p16, _, _, _ in rows if p16 == "bf16" and m16 == m32 and t16 == t32 + ", bf16"]
    if pairs:
        print("\n| bf16 / fp32 step time | Codefy | Codefy, log_grad_norm off | C++ | C++ tuned | Python |")
        print("| --- " * 6 + "|")
        for t32, t16 in pairs:
            print("| %s | %s |" % (t32, " | ".join(ratio(results[t16][n], results[t32][n])
                                                 for n in ["codefy", "codefy-nonorm", "cpp", "cpp-tuned", "python"])))
        print("\n(bf16 and fp32 processes of one repetition ran up to a few minutes apart, so these ratios "
              "are noisier than the ones above.)")


def us(values):
    """Median and range over processes, in microseconds."""
    return "%.0f us (%.0f-%.0f)" % (statistics.median(values) * 1e6, min(values) * 1e6, max(values) * 1e6)


def ratio(num, den):
    """Median and range of the per-repetition ratios num[i] / den[i]."""
    r = [x / y for x, y in zip(num, den)]
    return "%.3f (%.2f-%.2f)" % (statistics.median(r), min(r), max(r))


if __name__ == "__main__":
    main()
