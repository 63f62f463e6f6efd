"""The same hand-written training loop as baseline.cpp, in Python with Debian's
python3-torch (1.13.1): the loop a PyTorch user writes. Prints one JSON line.
"""
import argparse
import json
import time

import torch
from torch import nn
import torch.nn.functional as F


def make_model(name):
    if name == "tiny":
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def input_shape(model, n):
    return {"tiny": (n, 32), "mlp": (n, 784)}.get(model, (n, 1, 28, 28))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp", choices=["tiny", "mlp", "cnn"])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--samples", type=int, default=19200)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    torch.manual_seed(0)
    model = make_model(a.model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs = torch.randn(input_shape(a.model, a.samples))
    targets = torch.randint(0, 10, (a.samples,))
    batches = (a.samples + a.batch - 1) // a.batch
    bf16 = a.precision == "bf16"

    epoch_seconds = []
    loss_sum = 0.0
    model.train()
    for _ in range(a.epochs):
        t = time.perf_counter()
        perm = torch.randperm(a.samples)
        loss_sum = 0.0
        optimizer.zero_grad()
        for b in range(batches):
            idx = perm[b * a.batch:(b + 1) * a.batch]
            x, y = inputs.index_select(0, idx), targets.index_select(0, idx)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = F.cross_entropy(model(x), y)
            (loss / a.accumulate if a.accumulate > 1 else loss).backward()
            loss_sum += loss.item()
            if (b + 1) % a.accumulate == 0 or b + 1 == batches:
                optimizer.step()
                optimizer.zero_grad()
        epoch_seconds.append(time.perf_counter() - t)
    print(json.dumps({"epoch_seconds": epoch_seconds, "batches_per_epoch": batches,
                      "updates_per_epoch": -(-batches // a.accumulate), "threads": torch.get_num_threads(),
                      "loss": loss_sum / batches}))


if __name__ == "__main__":
    main()
