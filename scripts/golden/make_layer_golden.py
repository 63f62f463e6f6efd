#!/usr/bin/env python3
"""Golden values for Codefy's layer nodes (src/nodes/layer_nodes.cpp), from PyTorch.

tests/engine/layer_nodes_test.cpp runs each node on the inputs written here and
compares its outputs with the ones PyTorch computed, so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    /usr/bin/python3 scripts/golden/make_layer_golden.py            # writes tests/golden/layers.json
    /usr/bin/python3 scripts/golden/make_layer_golden.py --out DIR  # elsewhere

Each case is one node: its type and params (CodefyUI's names), node id and run
seed, its inputs, the module's state before the forward pass (parameters and
buffers, by PyTorch's state_dict names) and PyTorch's outputs. The module is
built the way CodefyUI's node builds it, after torch.manual_seed(node seed),
where the node seed is Codefy's per-node seed (src/engine/registry.cpp,
node_seed). The test checks a node with weights twice: as it initialised
them from the same seed (a case marked "seeded": LibTorch 1.13 draws the same
initial weights as PyTorch for every layer here, MultiheadAttention,
Transformer and LSTM included), and with the weights written here copied into
its kept module. Nodes that take their own `seed` param (RNNCell, MoELayer,
TimestepEmbedding, GaussianNoise, PositionalEncoding) draw from that, as
CodefyUI's do.

Train or eval mode as Codefy runs them: BatchNorm normalises with the batch's
statistics (CodefyUI's node describes per-batch statistics and leaves its
module in training mode), Dropout drops (CodefyUI: "it drops even during
evaluation"), everything else is in eval mode.
"""

import argparse
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_SEED = 7
MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def fnv1a(text):
    h = 1469598103934665603
    for c in text.encode():
        h = ((h ^ c) * 1099511628211) & MASK
    return h


def node_seed(run_seed, node_id):
    """Codefy's node_seed(): the seed LibTorch's RNG gets before the node runs."""
    return splitmix64((run_seed + 0x9E3779B97F4A7C15 * (fnv1a(node_id) & ~1)) & MASK) & 0x7FFFFFFFFFFFFFFF


def tensor_json(t):
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": t.detach().flatten().tolist()}


_inputs = torch.Generator().manual_seed(1234)


def randn(*shape):
    return torch.randn(*shape, generator=_inputs)


CASES = []


def case(name, node, params, inputs, build, forward, mode="eval", seeded=True):
    """Builds the module after seeding as Codefy seeds the node, records its
    state, runs `forward(module, inputs)` -> {port: tensor} and stores the case."""
    torch.manual_seed(node_seed(RUN_SEED, name))
    module = build() if build else None
    state = {}
    if module is not None:
        module.train(mode == "train")
        state = {k: tensor_json(v) for k, v in module.state_dict().items()}
    with torch.no_grad():
        outputs = forward(module, inputs)
    CASES.append({
        "name": name, "node": node, "params": params, "node_id": name, "run_seed": RUN_SEED,
        "seeded": seeded and module is not None,
        "inputs": {k: tensor_json(v) for k, v in inputs.items()},
        "state": state,
        "outputs": {k: tensor_json(v) for k, v in outputs.items()},
    })


def one(module, inputs):
    return {"tensor": module(inputs["tensor"])}


def layer_cases():
    case("linear", "Linear", {"in_features": 6, "out_features": 4}, {"tensor": randn(2, 3, 6)},
         lambda: nn.Linear(6, 4), one)
    case("conv1d", "Conv1d", {"in_channels": 2, "out_channels": 3, "kernel_size": 3, "stride": 1, "padding": 1},
         {"tensor": randn(2, 2, 7)}, lambda: nn.Conv1d(2, 3, 3, stride=1, padding=1), one)
    case("conv2d", "Conv2d", {"in_channels": 3, "out_channels": 4, "kernel_size": 3, "stride": 2, "padding": 1},
         {"tensor": randn(2, 3, 7, 7)}, lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), one)
    case("conv_transpose2d", "ConvTranspose2d",
         {"in_channels": 4, "out_channels": 2, "kernel_size": 3, "stride": 2, "padding": 1, "output_padding": 1},
         {"tensor": randn(1, 4, 3, 3)},
         lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), one)

    case("maxpool2d", "MaxPool2d", {"kernel_size": 2, "stride": 2}, {"tensor": randn(1, 2, 5, 5)},
         lambda: nn.MaxPool2d(2, 2), one)
    case("avgpool2d", "AvgPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, {"tensor": randn(1, 2, 6, 6)},
         lambda: nn.AvgPool2d(3, 2, 1), one)
    case("adaptive_avgpool2d", "AdaptiveAvgPool2d", {"output_height": 2, "output_width": 3},
         {"tensor": randn(2, 3, 5, 7)}, lambda: nn.AdaptiveAvgPool2d((2, 3)), one)

    def upsample(mode, scale):
        def forward(_, inputs):
            kwargs = {"scale_factor": scale, "mode": mode}
            if mode == "bilinear":
                kwargs["align_corners"] = False
            return {"tensor": F.interpolate(inputs["tensor"].float(), **kwargs)}
        return forward

    case("upsample_nearest", "Upsample", {"mode": "nearest", "scale_factor": 2.0}, {"tensor": randn(1, 2, 3, 3)},
         None, upsample("nearest", 2.0))
    case("upsample_bilinear", "Upsample", {"mode": "bilinear", "scale_factor": 1.5}, {"tensor": randn(1, 1, 4, 4)},
         None, upsample("bilinear", 1.5))
    case("upsample_area", "Upsample", {"mode": "area", "scale_factor": 0.5}, {"tensor": randn(1, 2, 4, 4)},
         None, upsample("area", 0.5))
    case("upsample_nearest_1d", "Upsample", {"mode": "nearest", "scale_factor": 3.0}, {"tensor": randn(1, 2, 4)},
         None, upsample("nearest", 3.0))

    # Dropout drops, from the node's seed: the same mask as PyTorch's from the same seed.
    case("dropout", "Dropout", {"p": 0.3}, {"tensor": randn(4, 5)}, lambda: nn.Dropout(0.3), one, mode="train")

    acts = {
        "relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
        "leaky_relu": lambda x: F.leaky_relu(x, negative_slope=0.01), "elu": F.elu, "gelu": F.gelu,
        "silu": F.silu, "mish": F.mish, "selu": F.selu, "softmax": lambda x: F.softmax(x, dim=-1),
        "hardswish": F.hardswish, "prelu": lambda x: nn.PReLU()(x),
    }
    x = randn(2, 5) * 3
    for fn, f in acts.items():
        case("activation_" + fn, "Activation", {"function": fn}, {"tensor": x}, None,
             lambda _, inputs, f=f: {"tensor": f(inputs["tensor"])})

    case("batchnorm2d", "BatchNorm2d", {"num_features": 3}, {"tensor": randn(2, 3, 4, 4) * 2 + 1},
         lambda: nn.BatchNorm2d(3), one, mode="train")
    case("batchnorm1d", "BatchNorm1d", {"num_features": 4}, {"tensor": randn(5, 4)}, lambda: nn.BatchNorm1d(4), one,
         mode="train")
    case("batchnorm1d_sequence", "BatchNorm1d", {"num_features": 4}, {"tensor": randn(3, 4, 6)},
         lambda: nn.BatchNorm1d(4), one, mode="train")
    case("layernorm", "LayerNorm", {"normalized_shape": "6", "eps": 1e-5}, {"tensor": randn(2, 3, 6)},
         lambda: nn.LayerNorm([6], eps=1e-5), one)
    case("layernorm_2d", "LayerNorm", {"normalized_shape": "3, 6", "eps": 1e-3}, {"tensor": randn(2, 3, 6)},
         lambda: nn.LayerNorm([3, 6], eps=1e-3), one)
    case("groupnorm", "GroupNorm", {"num_groups": 2, "num_channels": 4}, {"tensor": randn(2, 4, 3, 3)},
         lambda: nn.GroupNorm(2, 4), one)
    case("instancenorm2d", "InstanceNorm2d", {"num_features": 3, "affine": False}, {"tensor": randn(2, 3, 4, 4)},
         lambda: nn.InstanceNorm2d(3, affine=False), one)
    case("instancenorm2d_affine", "InstanceNorm2d", {"num_features": 3, "affine": True},
         {"tensor": randn(2, 3, 4, 4)}, lambda: nn.InstanceNorm2d(3, affine=True), one)

    indices = torch.tensor([[1, 0, 9, 3, 3], [7, 2, 0, 5, 8]])
    case("embedding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4, "padding_idx": -1},
         {"tensor": indices}, lambda: nn.Embedding(10, 4), one)
    case("embedding_padding", "Embedding", {"num_embeddings": 10, "embedding_dim": 4, "padding_idx": 0},
         {"tensor": indices}, lambda: nn.Embedding(10, 4, padding_idx=0), one)


def sinusoidal_pe(seq, d):
    pe = torch.zeros(seq, d, dtype=torch.float32)
    position = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * -(math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(position * div_term[: pe[:, 0::2].shape[1]])
    pe[:, 1::2] = torch.cos(position * div_term[: pe[:, 1::2].shape[1]])
    return pe


def positional_encoding(mode, seed):
    def forward(_, inputs):
        x = inputs["tensor"].float()
        seq, d = x.shape[0], x.shape[-1]
        if mode == "sinusoidal":
            pe = sinusoidal_pe(seq, d)
        else:
            gen = torch.Generator()
            gen.manual_seed(seed)
            pe = torch.randn(seq, d, generator=gen, dtype=torch.float32) * (1.0 / math.sqrt(d))
        out = x + pe if x.dim() == 2 else x + pe.unsqueeze(1)
        return {"tensor": out, "pe": pe}
    return forward


def sequence_cases():
    case("positional_encoding", "PositionalEncoding", {"mode": "sinusoidal", "max_len": 16, "seed": 42},
         {"tensor": randn(5, 2, 6)}, None, positional_encoding("sinusoidal", 42))
    case("positional_encoding_odd", "PositionalEncoding", {"mode": "sinusoidal", "max_len": 512, "seed": 42},
         {"tensor": randn(4, 5)}, None, positional_encoding("sinusoidal", 42))
    case("positional_encoding_learnable", "PositionalEncoding", {"mode": "learnable", "max_len": 512, "seed": 3},
         {"tensor": randn(5, 6)}, None, positional_encoding("learnable", 3))

    def mha(module, inputs):
        out, weights = module(inputs["query"], inputs["key"], inputs["value"])
        return {"output": out, "weights": weights}

    case("mha", "MultiHeadAttention", {"embed_dim": 8, "num_heads": 2},
         {"query": randn(4, 2, 8), "key": randn(6, 2, 8), "value": randn(6, 2, 8)},
         lambda: nn.MultiheadAttention(8, 2), mha)

    case("mha_unbatched", "MultiHeadAttention", {"embed_dim": 6, "num_heads": 3},
         {"query": randn(3, 6), "key": randn(5, 6), "value": randn(5, 6)}, lambda: nn.MultiheadAttention(6, 3), mha)

    tparams = {"d_model": 8, "nhead": 2, "num_layers": 2, "dim_feedforward": 16}
    case("transformer_encoder", "TransformerEncoder", tparams, {"tensor": randn(5, 2, 8)},
         lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=False), 2), one)
    case("transformer_encoder_unbatched", "TransformerEncoder", dict(tparams, num_layers=1), {"tensor": randn(3, 8)},
         lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=False), 1), one)
    case("transformer_decoder", "TransformerDecoder", tparams, {"tensor": randn(4, 2, 8), "memory": randn(5, 2, 8)},
         lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, batch_first=False), 2),
         lambda m, i: {"tensor": m(i["tensor"], i["memory"])})

    def lstm(module, inputs):
        out, (h, _) = module(inputs["tensor"])
        return {"output": out, "hidden": h}

    def gru(module, inputs):
        out, h = module(inputs["tensor"])
        return {"output": out, "hidden": h}

    case("lstm", "LSTM",
         {"input_size": 3, "hidden_size": 5, "num_layers": 2, "batch_first": True, "bidirectional": True},
         {"tensor": randn(2, 4, 3)},
         lambda: nn.LSTM(3, 5, num_layers=2, batch_first=True, bidirectional=True), lstm)
    case("lstm_unbatched", "LSTM",
         {"input_size": 3, "hidden_size": 4, "num_layers": 1, "batch_first": True, "bidirectional": False},
         {"tensor": randn(5, 3)}, lambda: nn.LSTM(3, 4, batch_first=True), lstm)
    case("gru_unbatched_bidirectional", "GRU",
         {"input_size": 3, "hidden_size": 4, "num_layers": 2, "batch_first": False, "bidirectional": True},
         {"tensor": randn(5, 3)}, lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True), gru)
    case("gru", "GRU", {"input_size": 3, "hidden_size": 4, "num_layers": 1, "batch_first": False,
                        "bidirectional": False},
         {"tensor": randn(4, 2, 3)}, lambda: nn.GRU(3, 4, num_layers=1, batch_first=False), gru)


def seeded_rnn_cell(input_size, hidden_size, nonlinearity, seed):
    cell = nn.RNNCell(input_size, hidden_size, nonlinearity=nonlinearity)
    gen = torch.Generator()
    gen.manual_seed(seed)
    scale = 1.0 / math.sqrt(max(1, hidden_size))
    with torch.no_grad():
        for p in cell.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * scale)
            else:
                p.zero_()
    return cell


class ExpertFFN(nn.Module):
    def __init__(self, hidden_dim, expert_hidden_dim):
        super().__init__()
        self.fc1 = nn.Linear(hidden_dim, expert_hidden_dim)
        self.fc2 = nn.Linear(expert_hidden_dim, hidden_dim)

    def forward(self, x):
        return self.fc2(F.silu(self.fc1(x)))


class MoE(nn.Module):
    """CodefyUI's MoELayer: a bias-free gate, top-k softmax routing, SiLU expert FFNs."""

    def __init__(self, num_experts, top_k, hidden_dim, expert_hidden_dim):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = max(1, min(top_k, num_experts))
        self.gate = nn.Linear(hidden_dim, num_experts, bias=False)
        self.experts = nn.ModuleList([ExpertFFN(hidden_dim, expert_hidden_dim) for _ in range(num_experts)])

    def forward(self, x):
        b, t, h = x.shape
        topk_vals, topk_idx = torch.topk(self.gate(x), k=self.top_k, dim=-1)
        topk_weights = F.softmax(topk_vals, dim=-1)
        flat_x = x.reshape(b * t, h)
        flat_idx = topk_idx.reshape(b * t, self.top_k)
        flat_w = topk_weights.reshape(b * t, self.top_k)
        out = torch.zeros_like(flat_x)
        for k in range(self.top_k):
            for e in range(self.num_experts):
                mask = flat_idx[:, k] == e
                if not mask.any():
                    continue
                out[mask] = out[mask] + flat_w[:, k].unsqueeze(-1)[mask] * self.experts[e](flat_x[mask])
        return out.reshape(b, t, h), topk_weights, topk_idx


def timestep_embedding(embed_dim, max_period, seed):
    gen = torch.Generator()
    gen.manual_seed(seed)
    fc1, fc2 = nn.Linear(embed_dim, 4 * embed_dim), nn.Linear(4 * embed_dim, embed_dim)
    scale = 1.0 / math.sqrt(embed_dim)
    with torch.no_grad():
        for layer in (fc1, fc2):
            layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) * scale)
            layer.bias.zero_()

    def forward(_, inputs):
        t = inputs["timestep"]
        if t.dim() == 0:
            t = t.unsqueeze(0)
        half = embed_dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
        args = t.float().unsqueeze(-1) * freqs.unsqueeze(0)
        emb = torch.cat([torch.sin(args), torch.cos(args)], dim=-1)
        return {"embedding": fc2(F.silu(fc1(emb)))}
    return forward


def gaussian_noise(shape, mean, std, seed):
    def forward(_, inputs):
        size = tuple(inputs["shape_ref"].shape) if "shape_ref" in inputs else shape
        gen = torch.Generator()
        gen.manual_seed(seed)
        noise = torch.randn(size, generator=gen, dtype=torch.float32)
        if std != 1.0:
            noise = noise * std
        if mean != 0.0:
            noise = noise + mean
        return {"noise": noise}
    return forward


def own_seed_cases():
    """Nodes with their own `seed` param: built from it, whatever the node seed."""
    for name, nonlin, with_hidden in (("rnncell", "tanh", True), ("rnncell_no_hidden", "tanh", False),
                                      ("rnncell_relu", "relu", True)):
        params = {"input_size": 3, "hidden_size": 5, "nonlinearity": nonlin, "seed": 42}
        inputs = {"tensor": randn(2, 3)}
        if with_hidden:
            inputs["hidden"] = randn(2, 5)
        cell = seeded_rnn_cell(3, 5, nonlin, 42)
        case(name, "RNNCell", params, inputs, lambda cell=cell: cell,
             lambda m, i: {"hidden": m(i["tensor"], i.get("hidden"))})

    def moe(seed, top_k):
        torch.manual_seed(seed)
        return MoE(4, top_k, 6, 8)

    def moe_forward(m, i):
        out, w, idx = m(i["x"])
        return {"output": out, "routing_weights": w, "expert_indices": idx}

    layer = moe(42, 2)
    case("moe", "MoELayer", {"num_experts": 4, "top_k": 2, "hidden_dim": 6, "expert_hidden_dim": 8, "seed": 42},
         {"x": randn(2, 3, 6)}, lambda: layer, moe_forward)
    layer3 = moe(5, 1)
    case("moe_top1_2d", "MoELayer", {"num_experts": 4, "top_k": 1, "hidden_dim": 6, "expert_hidden_dim": 8, "seed": 5},
         {"x": randn(3, 6)}, lambda: layer3, lambda m, i: moe_forward(m, {"x": i["x"].unsqueeze(0)}))

    case("timestep_embedding", "TimestepEmbedding", {"embed_dim": 8, "max_period": 10000, "seed": 42},
         {"timestep": torch.tensor([0, 10, 999])}, None, timestep_embedding(8, 10000, 42))
    case("timestep_embedding_scalar", "TimestepEmbedding", {"embed_dim": 6, "max_period": 100, "seed": 1},
         {"timestep": torch.tensor(25)}, None, timestep_embedding(6, 100, 1))

    case("gaussian_noise", "GaussianNoise", {"shape": "2,3", "mean": 1.5, "std": 0.5, "seed": 42}, {}, None,
         gaussian_noise((2, 3), 1.5, 0.5, 42))
    case("gaussian_noise_shape_ref", "GaussianNoise", {"shape": "1,3,8,8", "mean": 0.0, "std": 1.0, "seed": 9},
         {"shape_ref": randn(3, 4)}, None, gaussian_noise(None, 0.0, 1.0, 9))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"), help="output folder")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    layer_cases()
    sequence_cases()
    own_seed_cases()
    doc = {"generator": "scripts/golden/make_layer_golden.py", "torch_version": torch.__version__, "cases": CASES}
    path = os.path.join(args.out, "layers.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(CASES)} cases (torch {torch.__version__})")


if __name__ == "__main__":
    main()
