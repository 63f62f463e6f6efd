"""Training samples/s with DataLoader num_workers 0 and 2, side by side in one
run: the Fashion-MNIST linear and CNN models, with the augmentation chain
(RandomCrop padding 2 -> RandomHorizontalFlip -> NormalizeTransform) and
without one (the in-memory path). Best of 3 alternating runs each."""
import json, os, subprocess, sys
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from graphlib import sequential_spec

GRAPH = os.path.join(os.environ.get("TMPDIR", "/tmp"), "codefy-workers-bench.json")
MODELS = {
    "linear": [("Flatten", {}), ("Linear", {"in_features": 784, "out_features": 10})],
    "CNN": [("Conv2d", {"in_channels": 1, "out_channels": 16, "kernel_size": 3, "padding": 1}), ("ReLU", {}),
            ("MaxPool2d", {"kernel_size": 2}), ("Conv2d", {"in_channels": 16, "out_channels": 32, "kernel_size": 3,
                                                           "padding": 1}),
            ("ReLU", {}), ("MaxPool2d", {"kernel_size": 2}), ("Flatten", {}),
            ("Linear", {"in_features": 32 * 7 * 7, "out_features": 10})],
}


def graph(model, workers, augment):
    node = lambda i, t, p: {"id": i, "type": t, "data": {"params": p}}
    edge = lambda s, sh, t, th: {"source": s, "sourceHandle": sh, "target": t, "targetHandle": th, "type": "data"}
    nodes = [node("start", "Start", {}),
             node("data", "Dataset", {"name": "FashionMNIST", "split": "train", "data_dir": "", "max_samples": 12800}),
             node("loader", "DataLoader", {"batch_size": 64, "shuffle": True, "num_workers": workers}),
             node("model", "SequentialModel", {"layers": sequential_spec(MODELS[model])}),
             node("loss", "Loss", {"type": "CrossEntropyLoss"}), node("opt", "Optimizer", {"type": "SGD", "lr": 0.05}),
             node("train", "TrainingLoop", {"epochs": 1, "device": "cpu"})]
    edges = [{"source": "start", "sourceHandle": "trigger", "target": "model", "type": "trigger"},
             edge("data", "dataset", "loader", "dataset"), edge("model", "model", "opt", "model"),
             edge("model", "model", "train", "model"), edge("loader", "dataloader", "train", "dataloader"),
             edge("opt", "optimizer", "train", "optimizer"), edge("loss", "loss_fn", "train", "loss_fn")]
    if augment:
        nodes += [node("crop", "RandomCrop", {"size": 28, "padding": 2}), node("flip", "RandomHorizontalFlip", {"p": 0.5}),
                  node("norm", "NormalizeTransform", {"preset": "FashionMNIST"})]
        edges += [edge("crop", "transform", "flip", "transform"), edge("flip", "transform", "norm", "transform"),
                  edge("norm", "transform", "data", "train_transform")]
    return {"name": "workers", "nodes": nodes, "edges": edges}


def samples_per_second(g):
    with open(GRAPH, "w") as f:
        json.dump(g, f)
    out = subprocess.run(["build/codefy", "run", GRAPH, "--json"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        j = json.loads(line)
        if j.get("event") == "execution_complete":
            return j["results"]["train"]["samples_per_second"]
    raise SystemExit(out[-2000:])


print("| model | data | num_workers 0 samples/s | num_workers 2 samples/s | 2 / 0 |")
print("| --- | --- | --- | --- | --- |")
for model in MODELS:
    for augment in (True, False):
        best = {0: 0.0, 2: 0.0}
        for _ in range(3):
            for workers in (0, 2):
                best[workers] = max(best[workers], samples_per_second(graph(model, workers, augment)))
        data = "crop + flip + normalize" if augment else "in memory, no chain"
        print("| %s | %s | %.0f | %.0f | %.2f |" % (model, data, best[0], best[2], best[2] / best[0]), flush=True)
