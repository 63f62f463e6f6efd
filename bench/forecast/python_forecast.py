"""The forecast example's model and training loop in plain PyTorch, for
bench/forecast/driver.py: the same layers (three dilated causal TCN blocks,
a 2-layer Transformer encoder, a linear head), windows of 256 steps x 32
features, horizon 16, AdamW, MSE, the loss divided by the accumulation count,
gradient clipping at 1.0, one epoch and a validation pass. Prints one JSON
line: {"seconds": epoch seconds}. bf16 is torch.autocast on the CPU.
"""
import argparse
import json
import time

import torch
import torch.nn as nn


class Chomp1d(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return x[:, :, :-self.n].contiguous()


class Block(nn.Module):
    def __init__(self, cin, d):
        super().__init__()
        pad = 2 * d
        self.net = nn.Sequential(nn.Conv1d(cin, 64, 3, dilation=d, padding=pad), Chomp1d(pad), nn.ReLU(),
                                 nn.Conv1d(64, 64, 3, dilation=d, padding=pad), Chomp1d(pad), nn.ReLU())
        self.skip = nn.Conv1d(cin, 64, 1) if cin != 64 else nn.Identity()

    def forward(self, x):
        return torch.relu(self.net(x) + self.skip(x))


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.tcn = nn.Sequential(Block(32, 1), Block(64, 2), Block(64, 4))
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, 0.1, batch_first=True), 2)
        self.head = nn.Linear(64, 16)

    def forward(self, x):
        h = self.tcn(x.permute(0, 2, 1)).permute(0, 2, 1)
        return self.head(self.encoder(h)[:, -1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=512)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--accumulate", type=int, default=8)
    ap.add_argument("--precision", default="fp32")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(torch.get_num_threads())
    steps = a.windows + 256 + 16 - 1
    series = torch.randn(int(steps / 0.8), 32)
    split = steps
    x = series.unfold(0, 256, 1).transpose(1, 2)
    y = series[256:, 0].unfold(0, 16, 1)
    n = min(len(y), len(x))
    x, y = x[:n], y[:n]
    train_idx = torch.arange(a.windows)
    val_idx = torch.arange(split - 256, n)
    model = Forecaster()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.MSELoss()
    bf16 = a.precision == "bf16"
    t0 = time.perf_counter()
    model.train()
    order = train_idx[torch.randperm(len(train_idx))]
    opt.zero_grad(set_to_none=True)
    for i, start in enumerate(range(0, len(order), a.batch)):
        idx = order[start:start + a.batch]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            out = model(x[idx])
            loss = loss_fn(out.float(), y[idx]) / a.accumulate
        loss.backward()
        if (i + 1) % a.accumulate == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(val_idx), 128):
            idx = val_idx[start:start + 128]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss_fn(model(x[idx]).float(), y[idx])
    print(json.dumps({"seconds": time.perf_counter() - t0}))


if __name__ == "__main__":
    main()
