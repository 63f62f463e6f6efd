#!/usr/bin/env python3
"""Golden values for Codefy's losses, optimizers and LR schedulers, from PyTorch.

The C++ tests (tests/train/builders_test.cpp, tests/train/schedulers_test.cpp)
compare Codefy against the JSON this writes, so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    apt-get install -y python3-torch
    /usr/bin/python3 scripts/golden/make_golden.py            # writes tests/golden/*.json
    /usr/bin/python3 scripts/golden/make_golden.py --out DIR  # elsewhere

Every input is written literally below; nothing is random. Option names in the
JSON are Codefy's (src/train/builders.h, src/train/schedulers.h) and only the
ones that differ from Codefy's defaults are written, so the C++ side starts
from its default options and applies them. Where Codefy deliberately differs
from calling PyTorch naively, the script applies Codefy's documented rule
first and says so (see codefy_target).
"""

import argparse
import json
import math
import os
import warnings

import torch

warnings.filterwarnings("ignore")  # "lr_scheduler.step() before optimizer.step()" and the like
torch.set_grad_enabled(True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tensor_json(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": t.detach().flatten().tolist()}


# ----------------------------------------------------------------------------- losses

P43 = [[0.2, -1.3, 0.7], [1.5, 0.1, -0.4], [-0.8, 0.9, 2.1], [0.05, -0.6, 0.3]]
T4_CLASS = [2, 0, 1, 2]
P23 = [[0.5, -1.2, 2.0], [0.0, 3.1, -0.7]]
T23 = [[0.1, -0.2, 0.4], [1.5, 0.3, -2.2]]
P41 = [[0.3], [-1.1], [2.4], [0.9]]
T4 = [0.0, -0.5, 3.0, 1.0]


def codefy_target(loss_type, prediction, target):
    """Codefy's target handling (src/train/builders.h): class targets become
    int64; regression/BCE targets take the prediction's dtype and an [N] target
    is reshaped to an [N,1] prediction (PyTorch itself would broadcast it to
    [N,N])."""
    if loss_type in ("CrossEntropyLoss", "NLLLoss"):
        if target.is_floating_point() and target.shape == prediction.shape:
            return target.to(prediction.dtype)
        return target.long()
    t = target.to(prediction.dtype)
    if prediction.dim() == 2 and prediction.shape[1] == 1 and t.dim() == 1 and t.shape[0] == prediction.shape[0]:
        t = t.unsqueeze(1)
    return t


def make_torch_loss(loss_type, options):
    if loss_type == "CrossEntropyLoss":
        return torch.nn.CrossEntropyLoss(label_smoothing=options.get("label_smoothing", 0.0))
    if loss_type == "SmoothL1Loss":
        return torch.nn.SmoothL1Loss(beta=options.get("beta", 1.0))
    if loss_type == "HuberLoss":
        return torch.nn.HuberLoss(delta=options.get("delta", 1.0))
    return getattr(torch.nn, loss_type)()


LOSS_CASES = [
    ("ce_plain", "CrossEntropyLoss", {}, P43, torch.float32, T4_CLASS, torch.int64),
    ("ce_label_smoothing", "CrossEntropyLoss", {"label_smoothing": 0.1}, P43, torch.float32, T4_CLASS, torch.int64),
    ("ce_int32_target", "CrossEntropyLoss", {}, P43, torch.float32, T4_CLASS, torch.int32),
    ("ce_probability_target", "CrossEntropyLoss", {"label_smoothing": 0.2}, P43, torch.float32,
     [[0.1, 0.2, 0.7], [1.0, 0.0, 0.0], [0.3, 0.3, 0.4], [0.0, 0.5, 0.5]], torch.float32),
    ("ce_float64", "CrossEntropyLoss", {}, P43, torch.float64, T4_CLASS, torch.int64),
    ("nll", "NLLLoss", {}, [[-1.2, -0.4, -2.3], [-0.1, -2.5, -3.0], [-1.1, -1.1, -1.1], [-0.7, -0.9, -2.0]],
     torch.float32, T4_CLASS, torch.int64),
    ("mse", "MSELoss", {}, P23, torch.float32, T23, torch.float32),
    ("mse_n1_vs_n", "MSELoss", {}, P41, torch.float32, T4, torch.float32),
    ("mse_int_target", "MSELoss", {}, P41, torch.float32, [0, -1, 3, 1], torch.int64),
    ("l1", "L1Loss", {}, P23, torch.float32, T23, torch.float32),
    ("l1_n1_vs_n", "L1Loss", {}, P41, torch.float32, T4, torch.float32),
    ("smooth_l1", "SmoothL1Loss", {}, P23, torch.float32, T23, torch.float32),
    ("smooth_l1_beta", "SmoothL1Loss", {"beta": 0.5}, P23, torch.float32, T23, torch.float32),
    ("smooth_l1_beta0", "SmoothL1Loss", {"beta": 0.0}, P23, torch.float32, T23, torch.float32),
    ("huber", "HuberLoss", {}, P23, torch.float32, T23, torch.float32),
    ("huber_delta", "HuberLoss", {"delta": 2.0}, P23, torch.float32, T23, torch.float32),
    ("huber_n1_vs_n", "HuberLoss", {"delta": 0.5}, P41, torch.float32, T4, torch.float32),
    ("bce_logits", "BCEWithLogitsLoss", {}, P23, torch.float32,
     [[0.0, 1.0, 1.0], [0.5, 0.0, 0.25]], torch.float32),
    ("bce_logits_n1_vs_n", "BCEWithLogitsLoss", {}, P41, torch.float32, [0, 1, 1, 0], torch.int64),
]


def losses():
    cases = []
    for name, loss_type, options, pred, pred_dtype, target, target_dtype in LOSS_CASES:
        p = torch.tensor(pred, dtype=pred_dtype, requires_grad=True)
        t = torch.tensor(target, dtype=target_dtype)
        value = make_torch_loss(loss_type, options)(p, codefy_target(loss_type, p, t))
        value.backward()
        cases.append({"name": name, "type": loss_type, "options": options, "prediction": tensor_json(p),
                      "target": tensor_json(t), "loss": value.item(), "grad": tensor_json(p.grad)})
    return {"description": "Each loss (mean reduction) and d loss / d prediction.", "cases": cases}


# ----------------------------------------------------------------------------- optimizers

OBJECTIVE = {
    "formula": "sum(a * (w - c)^2) + sum(q * v^2 + k * v) + 0.1 * sum(w)^2",
    "w0": [1.0, -2.0, 0.5],
    "v0": [[0.3, -0.7], [1.5, 0.0]],
    "a": [0.5, 2.0, 1.0],
    "c": [0.2, 0.4, -1.0],
    "q": [[1.0, 0.25], [3.0, 0.5]],
    "k": [[0.3, -0.2], [0.0, 1.0]],
}
STEPS = 5


def objective(w, v, o):
    a, c = torch.tensor(o["a"], dtype=torch.float64), torch.tensor(o["c"], dtype=torch.float64)
    q, k = torch.tensor(o["q"], dtype=torch.float64), torch.tensor(o["k"], dtype=torch.float64)
    return (a * (w - c) ** 2).sum() + (q * v ** 2 + k * v).sum() + 0.1 * w.sum() ** 2


OPTIMIZER_CASES = [
    ("sgd_plain", {"type": "SGD", "lr": 0.1}),
    ("sgd_momentum_nesterov_wd", {"type": "SGD", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("sgd_momentum_dampening", {"type": "SGD", "lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("adam", {"type": "Adam", "lr": 0.1}),
    ("adam_amsgrad_wd", {"type": "Adam", "lr": 0.1, "amsgrad": True, "weight_decay": 0.05, "beta1": 0.8,
                         "beta2": 0.95}),
    ("adamw", {"type": "AdamW", "lr": 0.1, "weight_decay": 0.1, "beta1": 0.85, "beta2": 0.99}),
    ("adamw_amsgrad", {"type": "AdamW", "lr": 0.05, "weight_decay": 0.01, "amsgrad": True, "eps": 1e-6}),
    ("rmsprop", {"type": "RMSprop", "lr": 0.01}),
    ("rmsprop_centered_momentum", {"type": "RMSprop", "lr": 0.02, "momentum": 0.5, "centered": True, "alpha": 0.9,
                                   "weight_decay": 0.01}),
    ("adagrad_lr_decay", {"type": "Adagrad", "lr": 0.3, "lr_decay": 0.1, "weight_decay": 0.01}),
    ("adagrad_eps", {"type": "Adagrad", "lr": 0.3, "eps": 0.1}),
]


def make_torch_optimizer(params, o):
    t = o["type"]
    wd = o.get("weight_decay", 0.0)
    betas = (o.get("beta1", 0.9), o.get("beta2", 0.999))
    if t == "SGD":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o.get("momentum", 0.0), dampening=o.get("dampening", 0.0),
                               nesterov=o.get("nesterov", False), weight_decay=wd)
    if t in ("Adam", "AdamW"):
        cls = torch.optim.Adam if t == "Adam" else torch.optim.AdamW
        return cls(params, lr=o["lr"], betas=betas, eps=o.get("eps", 1e-8), weight_decay=wd,
                   amsgrad=o.get("amsgrad", False))
    if t == "RMSprop":
        return torch.optim.RMSprop(params, lr=o["lr"], alpha=o.get("alpha", 0.99), eps=o.get("eps", 1e-8),
                                   weight_decay=wd, momentum=o.get("momentum", 0.0), centered=o.get("centered", False))
    if t == "Adagrad":
        # eps left out: PyTorch's Adagrad default (1e-10), which Codefy also uses then.
        return torch.optim.Adagrad(params, lr=o["lr"], lr_decay=o.get("lr_decay", 0.0), weight_decay=wd,
                                   eps=o.get("eps", 1e-10))
    raise ValueError(t)


def optimizers():
    cases = []
    for name, options in OPTIMIZER_CASES:
        w = torch.tensor(OBJECTIVE["w0"], dtype=torch.float64, requires_grad=True)
        v = torch.tensor(OBJECTIVE["v0"], dtype=torch.float64, requires_grad=True)
        opt = make_torch_optimizer([w, v], options)
        for _ in range(STEPS):
            opt.zero_grad()
            objective(w, v, OBJECTIVE).backward()
            opt.step()
        cases.append({"name": name, "options": options, "w": w.detach().tolist(), "v": v.detach().tolist()})
    return {"description": "Parameters after `steps` updates on the objective, float64, from w0 and v0 "
                           "(one parameter group holding w then v).",
            "objective": OBJECTIVE, "steps": STEPS, "dtype": "float64", "cases": cases}


# ----------------------------------------------------------------------------- schedulers

S = torch.optim.lr_scheduler


def plateau_metrics_min():
    return [1.0, 0.9, 0.85, 0.849, 0.86, 0.85, 0.8, 0.79, 0.795, 0.80, 0.81, 0.7, 0.69, 0.695, 0.7,
            0.71, 0.72, 0.5, 0.5, 0.5, 0.5, 0.5, 0.49, 0.48, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


def plateau_metrics_max():
    return [0.1, 0.2, 0.3, 0.3, 0.3, 0.35, 0.34, 0.33, 0.5, 0.5, 0.5, 0.5, 0.51, 0.6, 0.6,
            0.6, 0.6, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8]


def epoch_events(n):
    return ["begin"] + ["epoch"] * n


def update_events(n):
    return ["begin"] + ["update"] * n


def mixed_events(epochs, updates_per_epoch):
    return ["begin"] + (["update"] * updates_per_epoch + ["epoch"]) * epochs


# Each case: Codefy options, base lrs (one param group each), events, metrics
# per epoch event (ReduceLROnPlateau only), and a builder of the PyTorch
# schedulers: (per-update list, per-epoch list).
SCHEDULER_CASES = [
    ("step_lr", {"type": "StepLR", "step_size": 7, "gamma": 0.5}, [0.1, 0.03], epoch_events(30), None,
     lambda o: ([], [S.StepLR(o, step_size=7, gamma=0.5)])),
    ("step_lr_every_epoch", {"type": "StepLR", "step_size": 1, "gamma": 0.9}, [0.1], epoch_events(30), None,
     lambda o: ([], [S.StepLR(o, step_size=1, gamma=0.9)])),
    ("multistep_lr", {"type": "MultiStepLR", "milestones": [5, 12, 12, 20], "gamma": 0.3}, [0.1, 0.02],
     epoch_events(30), None, lambda o: ([], [S.MultiStepLR(o, milestones=[5, 12, 12, 20], gamma=0.3)])),
    ("exponential_lr", {"type": "ExponentialLR", "gamma": 0.9}, [0.1, 0.5], epoch_events(30), None,
     lambda o: ([], [S.ExponentialLR(o, gamma=0.9)])),
    ("cosine_past_t_max", {"type": "CosineAnnealingLR", "t_max": 7, "eta_min": 0.001}, [0.1, 0.01],
     epoch_events(30), None, lambda o: ([], [S.CosineAnnealingLR(o, T_max=7, eta_min=0.001)])),
    ("cosine_eta0", {"type": "CosineAnnealingLR", "t_max": 10}, [0.05], epoch_events(30), None,
     lambda o: ([], [S.CosineAnnealingLR(o, T_max=10)])),
    ("one_cycle_cos", {"type": "OneCycleLR", "max_lr": 0.1, "total_steps": 30}, [0.001, 0.002],
     update_events(30), None, lambda o: ([S.OneCycleLR(o, max_lr=0.1, total_steps=30, cycle_momentum=False)], [])),
    ("one_cycle_linear", {"type": "OneCycleLR", "max_lr": 0.5, "total_steps": 30, "pct_start": 0.25,
                          "anneal_strategy": "linear", "div_factor": 10.0, "final_div_factor": 100.0}, [0.001],
     update_events(30), None,
     lambda o: ([S.OneCycleLR(o, max_lr=0.5, total_steps=30, pct_start=0.25, anneal_strategy="linear",
                              div_factor=10.0, final_div_factor=100.0, cycle_momentum=False)], [])),
    ("one_cycle_cos_odd", {"type": "OneCycleLR", "max_lr": 0.02, "total_steps": 27, "pct_start": 0.4}, [0.001],
     update_events(27), None,
     lambda o: ([S.OneCycleLR(o, max_lr=0.02, total_steps=27, pct_start=0.4, cycle_momentum=False)], [])),
    ("plateau_min", {"type": "ReduceLROnPlateau", "factor": 0.5, "patience": 2, "cooldown": 1, "threshold": 0.01,
                     "min_lr": 0.01}, [0.1, 0.05], epoch_events(30), plateau_metrics_min(),
     lambda o: ([], [S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2, cooldown=1, threshold=0.01,
                                         min_lr=0.01)])),
    ("plateau_max", {"type": "ReduceLROnPlateau", "mode": "max", "factor": 0.3, "patience": 1}, [0.1],
     epoch_events(30), plateau_metrics_max(),
     lambda o: ([], [S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1)])),
    ("plateau_eps_rule", {"type": "ReduceLROnPlateau", "factor": 0.5, "patience": 0}, [3e-8], epoch_events(8),
     [1.0] * 8, lambda o: ([], [S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=0)])),
    ("linear_warmup", {"type": "LinearWarmup", "warmup_steps": 10, "warmup_start_factor": 0.1}, [0.1, 0.02],
     update_events(30), None, lambda o: ([S.LinearLR(o, start_factor=0.1, total_iters=10)], [])),
    ("warmup_then_step_lr", {"type": "StepLR", "step_size": 2, "gamma": 0.5, "warmup_steps": 6,
                             "warmup_start_factor": 0.25}, [0.1], mixed_events(8, 4), None,
     lambda o: ([S.LinearLR(o, start_factor=0.25, total_iters=6)], [S.StepLR(o, step_size=2, gamma=0.5)])),
    ("warmup_then_cosine", {"type": "CosineAnnealingLR", "t_max": 5, "warmup_steps": 6, "warmup_start_factor": 0.5},
     [0.1, 0.04], mixed_events(12, 4), None,
     lambda o: ([S.LinearLR(o, start_factor=0.5, total_iters=6)], [S.CosineAnnealingLR(o, T_max=5)])),
    ("warmup_then_exponential", {"type": "ExponentialLR", "gamma": 0.8, "warmup_steps": 9,
                                 "warmup_start_factor": 0.2}, [0.05], mixed_events(6, 5), None,
     lambda o: ([S.LinearLR(o, start_factor=0.2, total_iters=9)], [S.ExponentialLR(o, gamma=0.8)])),
]


def schedulers():
    cases = []
    for name, options, base_lrs, events, metrics, build in SCHEDULER_CASES:
        params = [torch.zeros(1, requires_grad=True) for _ in base_lrs]
        opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, base_lrs)], lr=base_lrs[0])
        per_update, per_epoch = build(opt)  # constructing them is PyTorch's initial step: "begin"
        lrs, metric_iter = [], iter(metrics or [])
        for event in events:
            if event == "update":
                for s in per_update:
                    s.step()
            elif event == "epoch":
                for s in per_epoch:
                    if isinstance(s, S.ReduceLROnPlateau):
                        s.step(next(metric_iter))
                    else:
                        s.step()
            lrs.append([g["lr"] for g in opt.param_groups])
        case = {"name": name, "options": options, "base_lrs": base_lrs, "events": events, "lrs": lrs}
        if metrics is not None:
            case["metrics"] = metrics
        cases.append(case)
    return {"description": "Learning rate of every parameter group after each event: 'begin' (the "
                           "scheduler's start), 'update' (after an optimizer update), 'epoch' (after an "
                           "epoch, with the next metric for ReduceLROnPlateau).",
            "cases": cases}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"), help="output folder")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for file_name, make in (("losses.json", losses), ("optimizers.json", optimizers), ("schedulers.json", schedulers)):
        doc = {"generator": "scripts/golden/make_golden.py", "torch_version": torch.__version__}
        doc.update(make())
        path = os.path.join(args.out, file_name)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(f"wrote {path}: {len(doc['cases'])} cases (torch {torch.__version__})")


if __name__ == "__main__":
    main()
