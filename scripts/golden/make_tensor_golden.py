#!/usr/bin/env python3
"""Golden values for Codefy's tensor, RL and diffusion nodes, from PyTorch.

tests/engine/tensor_nodes_test.cpp runs each case through the node of the
same name (src/nodes/tensor_nodes.cpp, src/nodes/generative_nodes.cpp) and
compares every output with the JSON this writes, so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    /usr/bin/python3 scripts/golden/make_tensor_golden.py            # writes tests/golden/tensors.json
    /usr/bin/python3 scripts/golden/make_tensor_golden.py --out DIR  # elsewhere

Each case is {name, node, params, inputs, seed?, outputs}. Inputs are written
literally; `seed`, when present, is what torch.manual_seed got before the node
ran (TensorCreate's randn and rand draw from the global generator, as in
CodefyUI). What a node computes is written here with plain torch calls,
following CodefyUI's node definitions (backend/app/nodes/): its parameter
defaults, its quirks (Squeeze's dim -1 squeezes every size-1 dimension), its
seeded weight initialisation for RewardModel and DiffusionUNet.
"""

import argparse
import json
import math
import os

import torch
import torch.nn.functional as F

from golden_common import ROOT, tensor_json





def literal(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype)


CASES = []


def case(name, node, params, inputs, outputs, seed=None):
    c = {"name": name, "node": node, "params": params,
         "inputs": {k: (tensor_json(v) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()},
         "outputs": {k: (tensor_json(v) if isinstance(v, torch.Tensor) else v) for k, v in outputs.items()}}
    if seed is not None:
        c["seed"] = seed
    CASES.append(c)


A23 = literal([[0.5, -1.25, 2.0], [3.0, 0.75, -0.5]])
B23 = literal([[1.5, 0.25, -1.0], [-2.0, 0.5, 4.0]])
ROW3 = literal([10.0, -20.0, 30.0])
COL21 = literal([[2.0], [-3.0]])
X234 = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 7.0 - 1.5
M34 = literal([[0.3, -0.2, 0.9, 1.1], [0.0, 2.0, -1.5, 0.4], [1.2, 0.7, -0.3, -0.8]])


def sources():
    # TensorCreate: the global generator, seeded as the executor seeds it.
    for fill in ("zeros", "ones", "full", "arange"):
        shape = (2, 3)
        t = {"zeros": lambda: torch.zeros(*shape), "ones": lambda: torch.ones(*shape),
             "full": lambda: torch.full(shape, 2.5), "arange": lambda: torch.arange(shape[0]).float()}[fill]()
        case(f"tensor_create_{fill}", "TensorCreate", {"shape": "2,3", "fill": fill, "value": 2.5}, {}, {"tensor": t})
    for fill in ("randn", "rand"):
        torch.manual_seed(11)
        t = torch.randn(2, 3, 4) if fill == "randn" else torch.rand(2, 3, 4)
        case(f"tensor_create_{fill}_seed11", "TensorCreate", {"shape": "2, 3, 4", "fill": fill}, {}, {"tensor": t},
             seed=11)
    # TensorInput: its own generator from its `seed` param.
    for dtype_name, dtype in (("float32", torch.float32), ("float64", torch.float64), ("int64", torch.int64),
                              ("int32", torch.int32), ("bool", torch.bool)):
        g = torch.Generator().manual_seed(7)
        if dtype.is_floating_point:
            t = torch.randn(2, 3, generator=g, dtype=dtype)
        elif dtype == torch.bool:
            t = torch.randint(0, 2, (2, 3), generator=g).bool()
        else:
            t = torch.randint(0, 10, (2, 3), generator=g, dtype=dtype)
        case(f"tensor_input_random_{dtype_name}", "TensorInput",
             {"shape": "2,3", "dtype": dtype_name, "value_mode": "random", "seed": 7}, {}, {"tensor": t})
    case("tensor_input_explicit", "TensorInput",
         {"shape": "2,2", "value_mode": "explicit", "values": [[1, 2.5], [-3, 4]]}, {},
         {"tensor": torch.tensor([1, 2.5, -3, 4], dtype=torch.float32).reshape(2, 2)})
    case("tensor_input_arange_int64", "TensorInput", {"shape": "2,3", "dtype": "int64", "value_mode": "arange"}, {},
         {"tensor": torch.arange(6, dtype=torch.int64).reshape(2, 3)})
    case("tensor_input_ones_float64", "TensorInput", {"shape": "3", "dtype": "float64", "value_mode": "ones"}, {},
         {"tensor": torch.ones(3, dtype=torch.float64)})
    case("tensor_input_default_random", "TensorInput", {}, {},
         {"tensor": torch.randn(1, 4, 4, generator=torch.Generator().manual_seed(0))})


def elementwise():
    case("add_same_shape", "Add", {}, {"tensor_a": A23, "tensor_b": B23}, {"tensor": torch.add(A23, B23)})
    case("add_broadcast_alpha", "Add", {"alpha": -0.5}, {"tensor_a": A23, "tensor_b": ROW3},
         {"tensor": torch.add(A23, ROW3, alpha=-0.5)})
    case("add_broadcast_both", "Add", {}, {"tensor_a": COL21, "tensor_b": ROW3}, {"tensor": torch.add(COL21, ROW3)})
    case("add_int_float", "Add", {}, {"tensor_a": torch.tensor([1, 2, 3]), "tensor_b": ROW3},
         {"tensor": torch.add(torch.tensor([1, 2, 3]), ROW3)})
    case("multiply_broadcast", "Multiply", {}, {"tensor_a": A23, "tensor_b": COL21}, {"tensor": torch.mul(A23, COL21)})
    case("scalar_multiply", "ScalarMultiply", {"scalar": -2.5}, {"tensor": A23}, {"tensor": A23 * -2.5})
    case("lerp_param", "Lerp", {"alpha": 0.25}, {"tensor_a": A23, "tensor_b": B23},
         {"tensor": 0.25 * A23 + (1.0 - 0.25) * B23})
    alpha = literal([[0.0], [1.0]])
    case("lerp_alpha_tensor", "Lerp", {}, {"tensor_a": A23, "tensor_b": B23, "alpha": alpha},
         {"tensor": alpha * A23 + (1.0 - alpha) * B23})


def products_and_reductions():
    case("matmul_2d", "MatMul", {}, {"tensor_a": A23, "tensor_b": M34}, {"tensor": torch.matmul(A23, M34)})
    case("matmul_batched_broadcast", "MatMul", {}, {"tensor_a": X234, "tensor_b": M34.t()},
         {"tensor": torch.matmul(X234, M34.t())})
    case("matmul_dot", "MatMul", {}, {"tensor_a": ROW3, "tensor_b": literal([0.5, 1.0, -2.0])},
         {"tensor": torch.matmul(ROW3, literal([0.5, 1.0, -2.0]))})
    case("matmul_matrix_vector", "MatMul", {}, {"tensor_a": A23, "tensor_b": ROW3}, {"tensor": torch.matmul(A23, ROW3)})
    case("mean_last", "Mean", {}, {"tensor": X234}, {"tensor": X234.mean(dim=-1)})
    case("mean_two_dims_keepdim", "Mean", {"dim": "1, 2", "keepdim": True}, {"tensor": X234},
         {"tensor": X234.mean(dim=[1, 2], keepdim=True)})
    case("argmax_last", "Argmax", {}, {"tensor": M34}, {"tensor": torch.argmax(M34, dim=-1)})
    case("argmax_dim0_keepdim", "Argmax", {"dim": 0, "keepdim": True}, {"tensor": M34},
         {"tensor": torch.argmax(M34, dim=0, keepdim=True)})
    case("softmax_last", "Softmax", {}, {"tensor": X234}, {"tensor": F.softmax(X234, dim=-1)})
    case("softmax_dim1", "Softmax", {"dim": 1}, {"tensor": X234}, {"tensor": F.softmax(X234, dim=1)})
    q = literal([[1.0, 0.0, 1.0], [0.5, -2.0, 0.25]])
    k = literal([[1.0, 0.0, 1.0], [0.0, 3.0, 0.0], [-1.0, -1.0, 2.0], [2.0, 2.0, 2.0]])
    sim = F.normalize(q, dim=1, eps=1e-12) @ F.normalize(k, dim=1, eps=1e-12).T
    case("cosine_similarity", "CosineSimilarity", {"top_k": 2}, {"queries": q, "keys": k},
         {"similarity": sim, "top_k_indices": torch.topk(sim, k=2, dim=1).indices.tolist(), "top_k_labels": [[], []]})
    labels = ["king", "man", "woman", "queen"]
    masked = sim.clone()
    masked[:, 0] = -float("inf")
    masked[:, 2] = -float("inf")
    idx = torch.topk(masked, k=3, dim=1).indices.tolist()
    case("cosine_similarity_labels_exclude", "CosineSimilarity", {"top_k": 3, "exclude_self_words": "King, woman"},
         {"queries": literal([1.0, 0.0, 1.0]), "keys": k, "key_labels": labels},
         {"similarity": F.normalize(literal([[1.0, 0.0, 1.0]]), dim=1) @ F.normalize(k, dim=1).T,
          "top_k_indices": idx[:1], "top_k_labels": [[labels[j] for j in idx[0]]]})


def shapes():
    case("permute", "Permute", {"dims": "2,0,1"}, {"tensor": X234}, {"tensor": X234.permute(2, 0, 1)})
    case("reshape", "Reshape", {"shape": "-1, 6"}, {"tensor": X234}, {"tensor": X234.reshape(-1, 6)})
    x5 = torch.arange(120, dtype=torch.float32).reshape(2, 3, 4, 5)
    case("flatten_default", "Flatten", {}, {"tensor": x5}, {"tensor": torch.flatten(x5, 1)})
    case("flatten_start2", "Flatten", {"start_dim": 2}, {"tensor": x5}, {"tensor": torch.flatten(x5, 2)})
    s = torch.arange(6, dtype=torch.float32).reshape(1, 2, 1, 3, 1)
    case("squeeze_all", "Squeeze", {}, {"tensor": s}, {"tensor": s.squeeze()})
    case("squeeze_dim2", "Squeeze", {"dim": 2}, {"tensor": s}, {"tensor": s.squeeze(2)})
    case("squeeze_not_one", "Squeeze", {"dim": 1}, {"tensor": s}, {"tensor": s.squeeze(1)})
    case("unsqueeze", "Unsqueeze", {"dim": -1}, {"tensor": A23}, {"tensor": A23.unsqueeze(-1)})
    case("concat_dim1", "Concat", {"dim": 1}, {"tensor_a": A23, "tensor_b": COL21},
         {"tensor": torch.cat([A23, COL21], dim=1)})
    case("stack_dim_last", "Stack", {"dim": -1}, {"tensor_a": A23, "tensor_b": B23},
         {"tensor": torch.stack([A23, B23], dim=-1)})
    parts = torch.chunk(X234, 3, dim=2)
    case("split_uneven", "Split", {"chunks": 3, "dim": 2}, {"tensor": X234},
         {f"chunk_{i}": p for i, p in enumerate(parts)})
    parts = torch.chunk(X234, 2, dim=0)
    case("split_default", "Split", {}, {"tensor": X234}, {f"chunk_{i}": p for i, p in enumerate(parts)})


def kl():
    p = literal([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    q = literal([[0.3, 0.3, 0.4], [0.2, 0.6, 0.2]])
    for reduction in ("batchmean", "sum", "mean", "none"):
        for kind in ("probs", "logits"):
            if kind == "logits":
                a, b = p.log() * 2.0, q.log() - 0.5
                log_q, target = F.log_softmax(b, dim=-1), F.softmax(a, dim=-1)
            else:
                a, b = p, q
                log_q, target = torch.log(b.clamp_min(1e-12)), a
            if reduction == "none":
                kl_value = F.kl_div(log_q, target, reduction="none").sum(dim=-1)
            else:
                kl_value = F.kl_div(log_q, target, reduction=reduction)
            case(f"kl_{kind}_{reduction}", "KLDivergence", {"input_kind": kind, "reduction": reduction},
                 {"p": a, "q": b}, {"kl": kl_value})


# ----------------------------------------------------------------------------- weights from a seed


def linear_from_generator(layer, g):
    """nn.Linear.reset_parameters drawn from generator g: kaiming_uniform_(a=sqrt(5))
    on the weight is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and so is the bias."""
    bound = 1.0 / math.sqrt(layer.weight.size(1))
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound, generator=g)
        layer.bias.uniform_(-bound, bound, generator=g)


def reward():
    for hidden in (torch.arange(8, dtype=torch.float32).reshape(2, 4) / 4 - 1,
                   torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 10 - 1.2):
        fc1, fc2 = torch.nn.Linear(4, 3), torch.nn.Linear(3, 1)
        g = torch.Generator().manual_seed(5)
        linear_from_generator(fc1, g)
        linear_from_generator(fc2, g)
        h = hidden[:, -1, :] if hidden.dim() == 3 else hidden
        with torch.no_grad():
            rewards = fc2(torch.relu(fc1(h))).squeeze(-1)
        case(f"reward_model_rank{hidden.dim()}", "RewardModel", {"input_dim": 4, "hidden_dim": 3, "seed": 5},
             {"hidden_states": hidden}, {"rewards": rewards})


def randn_like_codefyui(shape, g, scale):
    return torch.randn(shape, generator=g) * scale


class ResBlock:
    def __init__(self, cin, cout, groups, temb, seed):
        g = torch.Generator().manual_seed(seed)
        scale = 1.0 / math.sqrt(max(cin, 1))
        self.groups = groups
        self.w1 = randn_like_codefyui((cout, cin, 3, 3), g, scale)
        self.w2 = randn_like_codefyui((cout, cout, 3, 3), g, scale)
        self.wt = randn_like_codefyui((cout, temb), g, scale)
        self.ws = randn_like_codefyui((cout, cin, 1, 1), g, scale) if cin != cout else None

    def __call__(self, x, temb):
        h = F.silu(F.group_norm(x, self.groups))
        h = F.conv2d(h, self.w1, padding=1)
        h = h + F.linear(temb, self.wt)[:, :, None, None]
        h = F.silu(F.group_norm(h, self.groups))
        h = F.conv2d(h, self.w2, padding=1)
        return h + (F.conv2d(x, self.ws) if self.ws is not None else x)


class UNet:
    def __init__(self, cin, base, mult, temb, groups, seed):
        g = torch.Generator().manual_seed(seed)
        s = 1.0 / math.sqrt(temb)
        self.temb = temb
        self.fc1 = randn_like_codefyui((4 * temb, temb), g, s)
        self.fc2 = randn_like_codefyui((temb, 4 * temb), g, s)
        ch, skips, self.down = base, [], []
        for level, m in enumerate(mult[:-1]):
            self.down.append(ResBlock(ch, base * m, groups, temb, seed + 100 + level))
            ch = base * m
            skips.append(ch)
        self.mid = ResBlock(ch, base * mult[-1], groups, temb, seed + 200)
        ch = base * mult[-1]
        self.up = []
        for level, skip in enumerate(reversed(skips)):
            self.up.append(ResBlock(ch + skip, skip, groups, temb, seed + 300 + level))
            ch = skip
        g = torch.Generator().manual_seed(seed + 999)
        self.stem = torch.randn((base, cin, 3, 3), generator=g) * 0.1
        self.head = torch.randn((cin, ch, 1, 1), generator=g) * 0.1

    def time(self, t):
        half = self.temb // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = t.float().unsqueeze(-1) * freqs.unsqueeze(0)
        emb = torch.cat([torch.sin(args), torch.cos(args)], dim=-1)
        return F.linear(F.silu(F.linear(emb, self.fc1)), self.fc2)

    def __call__(self, x, t):
        if t.ndim == 0:
            t = t.unsqueeze(0)
        if t.shape[0] == 1 and x.shape[0] > 1:
            t = t.expand(x.shape[0])
        temb = self.time(t)
        h = F.conv2d(x, self.stem, padding=1)
        skips = []
        for block in self.down:
            h = block(h, temb)
            skips.append(h)
            h = F.max_pool2d(h, 2)
        h = self.mid(h, temb)
        for block, skip in zip(self.up, reversed(skips)):
            h = F.interpolate(h, scale_factor=2, mode="nearest")
            h = block(torch.cat([h, skip], dim=1), temb)
        return F.conv2d(h, self.head)


def ddpm(model, noise, num_steps, schedule, beta_start, beta_end, seed):
    if schedule == "linear":
        betas = torch.linspace(beta_start, beta_end, num_steps, dtype=torch.float32)
    else:
        t = torch.linspace(0, num_steps, num_steps + 1, dtype=torch.float32) / num_steps
        alpha_bar = torch.cos(((t + 0.008) / (1 + 0.008)) * math.pi / 2) ** 2
        alpha_bar = alpha_bar / alpha_bar[0]
        betas = torch.clamp(1 - alpha_bar[1:] / alpha_bar[:-1], 0.0001, 0.999)
    alphas = 1.0 - betas
    alpha_bars = torch.cumprod(alphas, dim=0)
    g = torch.Generator().manual_seed(seed)
    x = noise.clone().float()
    for t in reversed(range(num_steps)):
        eps = model(x, torch.full((x.shape[0],), t, dtype=torch.long))
        mean = (1.0 / torch.sqrt(alphas[t])) * (x - (betas[t] / torch.sqrt(1.0 - alpha_bars[t])) * eps)
        if t > 0:
            x = mean + torch.sqrt(betas[t]) * torch.randn(x.shape, generator=g, dtype=x.dtype)
        else:
            x = mean
    return x


def diffusion():
    unet_params = {"in_channels": 2, "base_channels": 4, "channel_mult": "1,2", "time_emb_dim": 8, "num_groups": 2,
                   "seed": 3}
    model = UNet(2, 4, (1, 2), 8, 2, 3)
    noise = torch.randn(2, 2, 4, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        case("diffusion_unet_forward", "DiffusionUNet", unet_params, {"x": noise, "t": torch.tensor([5, 0])},
             {"predicted_noise": model(noise, torch.tensor([5, 0]))})
        for schedule in ("linear", "cosine"):
            params = {"num_steps": 4, "schedule": schedule, "beta_start": 0.001, "beta_end": 0.2, "seed": 9}
            case(f"ddpm_sampler_{schedule}", "DDPMSampler", dict(params, unet=unet_params), {"noise": noise},
                 {"image": ddpm(model, noise, 4, schedule, 0.001, 0.2, 9)})
        default_model = UNet(3, 16, (1, 2, 4), 32, 4, 42)
        x = torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(2))
        case("diffusion_unet_defaults_forward", "DiffusionUNet", {}, {"x": x, "t": torch.tensor(10)},
             {"predicted_noise": default_model(x, torch.tensor(10))})


def examples():
    """The example graphs the tests run (examples/<path>/graph.json), computed
    here from the same seeds: outputs are keyed "<node id>.<port>"."""
    def seeded(shape, seed):
        return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    q, k, v = seeded((1, 4, 8), 1), seeded((1, 4, 8), 2), seeded((1, 4, 8), 3)
    weights = F.softmax(torch.matmul(q, k.permute(0, 2, 1)) * (1 / math.sqrt(8)), dim=-1)
    case("example_attention_by_hand", "example", {"path": "attention-by-hand"}, {},
         {"weights.tensor": weights, "attend.tensor": torch.matmul(weights, v)})
    noise = seeded((1, 3, 16, 16), 4)
    image = ddpm(UNet(3, 16, (1, 2, 4), 32, 4, 42), noise, 10, "linear", 0.0001, 0.02, 42)
    case("example_unet_forward", "example", {"path": "unet-forward"}, {}, {"sampler.image": image})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"))
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    sources()
    elementwise()
    products_and_reductions()
    shapes()
    kl()
    reward()
    diffusion()
    examples()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tensors.json")
    with open(path, "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"{len(CASES)} cases -> {path}")


if __name__ == "__main__":
    main()
