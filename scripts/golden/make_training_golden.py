#!/usr/bin/env python3
"""Golden values for Codefy's training loop (codefy::train::train_model), from PyTorch.

tests/train/training_golden_test.cpp trains the same tiny network on the same
data with Codefy and compares the weights after K optimizer updates against
the JSON this writes (tests/golden/training.json), so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    apt-get install -y python3-torch
    /usr/bin/python3 scripts/golden/make_training_golden.py              # writes tests/golden/training.json
    /usr/bin/python3 scripts/golden/make_training_golden.py --out FILE   # elsewhere

The data (inputs, targets) and the initial weights are drawn once from a fixed
seed and written into the JSON; the C++ test reads them back, so both sides
start from identical tensors and the C++ side never depends on PyTorch's RNG.

The loop written here is the textbook PyTorch recipe, which is what Codefy
promises to match:

    for each epoch, for each micro-batch in order (shuffle=False):
        with autocast (bf16 only):   loss = loss_fn(model(x), y)
        (loss / N).backward()        # only when N = accumulate_steps > 1
        at the end of every window of N micro-batches (the epoch's last window
        may be shorter and is still divided by N):
            torch.nn.utils.clip_grad_norm_(params, max_norm)   # when clipping
            optimizer.step(); optimizer.zero_grad()

Cases:
  fp32_sgd_clip  SGD(momentum 0.9, lr 0.05), batch 4 x accumulate 3 over 20
                 samples (5 micro-batches: windows of 3 + 2), 2 epochs, clip 0.5
  fp32_adam      Adam(lr 0.01), same accumulation, no clipping
  bf16_adam      torch.autocast("cpu", dtype=torch.bfloat16) around forward and
                 loss only (backward outside), Adam(lr 0.01), batch 4 x
                 accumulate 2 (windows 2 + 2 + 1), 2 epochs. Its entry also
                 holds `fp32_reference`: the same run in fp32, so the test can
                 show its bf16 tolerance is far tighter than the bf16-vs-fp32
                 gap (a run that ignored autocast would fail).
"""

import argparse
import json
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED = 1234
N_SAMPLES, N_FEATURES, HIDDEN, N_CLASSES = 20, 6, 8, 3


class TinyNet(torch.nn.Module):
    """Linear(6,8) -> tanh -> Linear(8,3); parameter names match the C++ test's
    register_module names (a.weight, a.bias, b.weight, b.bias)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(N_FEATURES, HIDDEN)
        self.b = torch.nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


def tensor_json(t):
    t = t.detach()
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": t.flatten().tolist()}


def weights_json(model):
    return {name: tensor_json(p) for name, p in model.named_parameters()}


def train(init_state, inputs, targets, *, optimizer, lr, batch_size, accumulate, epochs, clip, bf16):
    model = TinyNet()
    model.load_state_dict(init_state)
    params = list(model.parameters())
    if optimizer == "SGD":
        opt = torch.optim.SGD(params, lr=lr, momentum=0.9)
    else:
        opt = torch.optim.Adam(params, lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = inputs.shape[0]
    batches = (n + batch_size - 1) // batch_size
    steps = 0
    opt.zero_grad()
    for _ in range(epochs):
        model.train()
        for b in range(batches):
            x = inputs[b * batch_size:(b + 1) * batch_size]
            y = targets[b * batch_size:(b + 1) * batch_size]
            if bf16:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = loss_fn(model(x), y)
            else:
                loss = loss_fn(model(x), y)
            (loss / accumulate if accumulate > 1 else loss).backward()
            if (b + 1) % accumulate == 0 or b + 1 == batches:
                if clip > 0:
                    torch.nn.utils.clip_grad_norm_(params, clip)
                opt.step()
                opt.zero_grad()
                steps += 1
    return model, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "training.json"))
    args = parser.parse_args()

    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # reproducible reductions
    inputs = torch.randn(N_SAMPLES, N_FEATURES)
    targets = torch.randint(0, N_CLASSES, (N_SAMPLES,))
    init = TinyNet()
    init_state = {k: v.clone() for k, v in init.state_dict().items()}

    cases = [
        dict(name="fp32_sgd_clip", optimizer="SGD", lr=0.05, batch_size=4, accumulate=3, epochs=2, clip=0.5, bf16=False),
        dict(name="fp32_adam", optimizer="Adam", lr=0.01, batch_size=4, accumulate=3, epochs=2, clip=0.0, bf16=False),
        dict(name="bf16_adam", optimizer="Adam", lr=0.01, batch_size=4, accumulate=2, epochs=2, clip=0.0, bf16=True),
    ]
    out_cases = []
    for c in cases:
        kw = {k: v for k, v in c.items() if k != "name"}
        model, steps = train(init_state, inputs, targets, **kw)
        entry = {
            "name": c["name"],
            "precision": "bf16" if c["bf16"] else "fp32",
            "optimizer": c["optimizer"],
            "lr": c["lr"],
            "momentum": 0.9 if c["optimizer"] == "SGD" else 0.0,
            "batch_size": c["batch_size"],
            "accumulate_steps": c["accumulate"],
            "epochs": c["epochs"],
            "grad_clip_norm": c["clip"],
            "loss": "CrossEntropyLoss",
            "updates": steps,
            "final_weights": weights_json(model),
        }
        if c["bf16"]:
            ref, _ = train(init_state, inputs, targets, **dict(kw, bf16=False))
            entry["fp32_reference"] = weights_json(ref)
        out_cases.append(entry)

    golden = {
        "generator": "scripts/golden/make_training_golden.py",
        "torch_version": torch.__version__,
        "description": "TinyNet Linear(6,8)-tanh-Linear(8,3) trained from `initial_weights` on `inputs`/`targets` "
                       "(sequential order); `final_weights` after `updates` optimizer steps.",
        "seed": SEED,
        "inputs": tensor_json(inputs),
        "targets": tensor_json(targets),
        "initial_weights": weights_json(init),
        "cases": out_cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
