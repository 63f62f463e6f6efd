#!/usr/bin/env python3
"""Golden values for Codefy's deep:Edu-* teaching nodes, from PyTorch.

tests/engine/edu_deep_test.cpp runs each case through the node it names
(src/nodes/edu_deep_nodes.cpp) and compares every output with the JSON this
writes, so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    /usr/bin/python3 scripts/golden/make_edu_deep_golden.py            # writes tests/golden/edu_deep.json
    /usr/bin/python3 scripts/golden/make_edu_deep_golden.py --out DIR  # elsewhere

Each case is {name, node, params, inputs, outputs, verbose?, steps?}. What a
node computes is written here with plain torch calls following CodefyUI's
node definitions (plugins/deep/nodes/): its defaults, its seeded weights
(a torch.Generator seeded from the `seed` param, randn times CodefyUI's
scale, in CodefyUI's order), its verbose steps. A verbose case also lists
each step's name, tensor names and scalars, and its step tensors appear
among the outputs as `__step__{i}__{name}`, as the run output store names
them. Cases named `example_*` are the lesson graphs in examples/edu-deep-*.
"""

import argparse
import json
import math
import os

import torch
import torch.nn.functional as F

from golden_common import ROOT, tensor_json





def as_json(v):
    return tensor_json(v) if isinstance(v, torch.Tensor) else v


CASES = []


class Steps:
    """CodefyUI's StepRecorder, as the golden file keeps it."""

    def __init__(self):
        self.metas = []
        self.tensors = {}

    def record(self, name, scalars=None, **tensors):
        i = len(self.metas)
        self.metas.append({"name": name, "scalars": {k: float(v) for k, v in (scalars or {}).items()},
                           "tensors": list(tensors)})
        for k, v in tensors.items():
            self.tensors[f"__step__{i}__{k}"] = v


def case(name, node, params, inputs, outputs, steps=None):
    c = {"name": name, "node": node, "params": params,
         "inputs": {k: as_json(v) for k, v in inputs.items()},
         "outputs": {k: as_json(v) for k, v in outputs.items()}}
    if steps is not None:
        c["verbose"] = True
        c["steps"] = steps.metas
        c["outputs"].update({k: as_json(v) for k, v in steps.tensors.items()})
    CASES.append(c)


def rand(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def gen(seed):
    return torch.Generator().manual_seed(int(seed))


# ----------------------------------------------------------------------------- CNN

def conv2d(x, weight=None, bias=None, out_channels=2, kernel_size=3, stride=1, padding=0, seed=0, steps=None):
    if x.ndim == 3:
        x = x.unsqueeze(0)
    N, Cin, H, W = x.shape
    if weight is None:
        weight = torch.randn(out_channels, Cin, kernel_size, kernel_size, generator=gen(seed)) * (
            1.0 / math.sqrt(Cin * kernel_size * kernel_size))
    Cout, _, kH, kW = weight.shape
    Hout = (H + 2 * padding - kH) // stride + 1
    Wout = (W + 2 * padding - kW) // stride + 1
    cols = F.unfold(x, kernel_size=(kH, kW), stride=stride, padding=padding)
    weight_mat = weight.reshape(Cout, Cin * kH * kW)
    out_cols = torch.matmul(weight_mat, cols)
    if bias is not None:
        out_cols = out_cols + bias.view(1, Cout, 1)
    y = out_cols.reshape(N, Cout, Hout, Wout)
    # The unrolled convolution is F.conv2d.
    assert torch.allclose(y, F.conv2d(x, weight, bias, stride=stride, padding=padding), atol=1e-5)
    if steps is not None:
        L = Hout * Wout
        steps.record("im2col", {"Cin": Cin, "kH": kH, "kW": kW, "L": L, "Hout": Hout, "Wout": Wout}, cols=cols)
        steps.record("weight_matrix", {"Cout": Cout, "Cin*kH*kW": Cin * kH * kW}, weight_mat=weight_mat)
        steps.record("matmul", {"has_bias": 1.0 if bias is not None else 0.0}, out_cols=out_cols)
        steps.record("feature_map", {"N": N, "Cout": Cout, "Hout": Hout, "Wout": Wout}, y=y)
    return {"y": y, "cols": cols, "weight": weight}


def maxpool2d(x, kernel_size=2, stride=0, padding=0, steps=None):
    if x.ndim == 3:
        x = x.unsqueeze(0)
    N, C, H, W = x.shape
    stride = kernel_size if stride == 0 else stride
    y, argmax = F.max_pool2d(x, kernel_size=kernel_size, stride=stride, padding=padding, return_indices=True)
    if steps is not None:
        h_out = math.floor((H + 2 * padding - kernel_size) / stride) + 1
        w_out = math.floor((W + 2 * padding - kernel_size) / stride) + 1
        xp = F.pad(x, (padding,) * 4, value=float("-inf")) if padding > 0 else x
        total = h_out * w_out
        n = min(6, total)
        flats = [0] if n <= 1 else [round(i * (total - 1) / (n - 1)) for i in range(n)]
        for i, flat in enumerate(flats):
            oh, ow = flat // w_out, flat % w_out
            top, left = oh * stride, ow * stride
            src = int(argmax[0, 0, oh, ow])
            in_window = (src // W - top + padding) * kernel_size + (src % W - left + padding)
            steps.record(f"window_{i}", {"out_row": oh, "out_col": ow, "max": float(y[0, 0, oh, ow]),
                                         "argmax_in_window": in_window},
                         window=xp[0, 0, top:top + kernel_size, left:left + kernel_size])
        steps.record("downsample", {"kernel_size": kernel_size, "stride": stride, "padding": padding, "H": H, "W": W,
                                    "Hout": h_out, "Wout": w_out}, y=y)
    return {"y": y, "argmax": argmax}


def cnn():
    x6 = rand(1, 1, 6, 6, seed=1)
    case("conv2d_default_weights", "deep:Edu-Conv2d", {"padding": 1}, {"x": x6}, conv2d(x6, padding=1))
    x3 = rand(2, 5, 5, seed=2)
    w = rand(3, 2, 2, 2, seed=3)
    b = torch.tensor([0.5, -1.0, 0.25])
    case("conv2d_given_weight_bias_stride2", "deep:Edu-Conv2d", {"stride": 2, "padding": 1},
         {"x": x3, "weight": w, "bias": b}, conv2d(x3, w, b, stride=2, padding=1))
    x2 = rand(2, 3, 7, 5, seed=4)
    case("conv2d_seeded_batch", "deep:Edu-Conv2d", {"out_channels": 4, "kernel_size": 2, "seed": 7}, {"x": x2},
         conv2d(x2, out_channels=4, kernel_size=2, seed=7))
    s = Steps()
    out = conv2d(x6, padding=1, seed=5, steps=s)
    case("conv2d_verbose", "deep:Edu-Conv2d", {"padding": 1, "seed": 5}, {"x": x6}, out, s)

    p = rand(1, 2, 4, 6, seed=6)
    case("maxpool_default", "deep:Edu-MaxPool2d", {}, {"x": p}, maxpool2d(p))
    p5 = rand(2, 3, 5, 5, seed=7)
    case("maxpool_k3_s2_pad1", "deep:Edu-MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, {"x": p5},
         maxpool2d(p5, 3, 2, 1))
    p3 = rand(2, 6, 6, seed=8)
    case("maxpool_unbatched_overlap", "deep:Edu-MaxPool2d", {"kernel_size": 2, "stride": 1}, {"x": p3},
         maxpool2d(p3, 2, 1))
    s = Steps()
    out = maxpool2d(p5, 3, 2, 1, steps=s)
    case("maxpool_verbose_padded", "deep:Edu-MaxPool2d", {"kernel_size": 3, "stride": 2, "padding": 1}, {"x": p5},
         out, s)
    s = Steps()
    p8 = rand(1, 1, 8, 8, seed=9)
    out = maxpool2d(p8, steps=s)
    case("maxpool_verbose_sampled", "deep:Edu-MaxPool2d", {}, {"x": p8}, out, s)


# ----------------------------------------------------------------------------- attention

def projections(embed_dim, count, seed):
    g = gen(seed)
    scale = 1.0 / math.sqrt(embed_dim)
    return [torch.randn(embed_dim, embed_dim, generator=g) * scale for _ in range(count)]


def build_mask(seq, causal, mask):
    m = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1) if causal else None
    if mask is not None:
        m = mask if m is None else (m | mask)
    return m


def self_attention(x, embed_dim=8, causal=False, temperature=1.0, seed=42, mask=None, labels=None, steps=None):
    Wq, Wk, Wv = projections(embed_dim, 3, seed)
    squeeze = x.ndim == 2
    xb = x.unsqueeze(0) if squeeze else x.transpose(0, 1)
    seq, d = x.shape[0], x.shape[-1]
    Q, K, V = F.linear(xb, Wq), F.linear(xb, Wk), F.linear(xb, Wv)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d)
    m = build_mask(seq, causal, mask)
    if m is not None:
        scores = scores.masked_fill(m.unsqueeze(0), float("-inf"))
    w = torch.nan_to_num(F.softmax(scores / max(1e-6, temperature), dim=-1), nan=0.0)
    ob = torch.matmul(w, V)
    out = ob.squeeze(0) if squeeze else ob.transpose(0, 1)
    wo = w.squeeze(0) if squeeze else w
    if steps is not None:
        un = (lambda t: t.squeeze(0)) if squeeze else (lambda t: t)
        steps.record("input", tensor=x)
        steps.record("compute_qkv", Q=un(Q), K=un(K), V=un(V))
        steps.record("scaled_scores", {"d": d, "sqrt_d": math.sqrt(d)}, scores=un(scores))
        if m is not None:
            steps.record("mask", mask=m)
        steps.record("softmax_weights", weights=wo)
        steps.record("weighted_sum", output=out)
    return {"output": out, "weights": wo, "labels": list(labels or [])}


def multi_head(q, c, embed_dim=8, num_heads=2, causal=False, seed=42, mask=None, cross=False, steps=None):
    Wq, Wk, Wv, Wo = projections(embed_dim, 4, seed)
    hd = embed_dim // num_heads
    squeeze = q.ndim == 2
    qb = q.unsqueeze(0) if squeeze else q.transpose(0, 1)
    cb = c.unsqueeze(0) if squeeze else c.transpose(0, 1)
    B, Qs, Ks = qb.shape[0], qb.shape[1], cb.shape[1]

    def split(t, s):
        return t.view(B, s, num_heads, hd).transpose(1, 2)

    Q, K, V = split(F.linear(qb, Wq), Qs), split(F.linear(cb, Wk), Ks), split(F.linear(cb, Wv), Ks)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(hd)
    m = mask if cross else build_mask(Qs, causal, mask)
    if m is not None:
        scores = scores.masked_fill(m.unsqueeze(0).unsqueeze(0), float("-inf"))
    w = torch.nan_to_num(F.softmax(scores, dim=-1), nan=0.0)
    att = torch.matmul(w, V).transpose(1, 2).contiguous().view(B, Qs, embed_dim)
    ob = F.linear(att, Wo)
    out = ob.squeeze(0) if squeeze else ob.transpose(0, 1)
    wo = w.squeeze(0) if squeeze else w
    if steps is not None:
        un = (lambda t: t.squeeze(0)) if squeeze else (lambda t: t)
        if cross:
            steps.record("input", query=q, context=c)
        else:
            steps.record("input", tensor=q)
        steps.record("compute_qkv", Q=un(Q), K=un(K), V=un(V))
        if cross:
            steps.record("scaled_scores", {"head_dim": hd}, scores=un(scores))
        else:
            steps.record("scaled_scores", {"head_dim": hd, "sqrt_dh": math.sqrt(hd)}, scores=un(scores))
        steps.record("softmax_weights", weights=wo)
        steps.record("concat_and_project", output=out)
    lists = {"q_labels": [], "k_labels": []} if cross else {"labels": []}
    return {"output": out, "weights": wo, **lists}


def attention():
    x = rand(5, 8, seed=10)
    labels = ["the", "cat", "sat", "on", "mat"]
    case("self_attention_default", "deep:Edu-SelfAttention", {}, {"tensor": x, "labels": labels},
         self_attention(x, labels=labels))
    case("self_attention_causal_sharp", "deep:Edu-SelfAttention", {"causal": True, "temperature": 0.5, "seed": 3},
         {"tensor": x}, self_attention(x, causal=True, temperature=0.5, seed=3))
    x3 = rand(4, 2, 6, seed=11)
    mask = torch.tensor([[False, True, False, False], [False, False, False, True],
                         [True, True, True, True], [False, False, False, False]])
    case("self_attention_batched_mask_full_row", "deep:Edu-SelfAttention", {"embed_dim": 6},
         {"tensor": x3, "mask": mask}, self_attention(x3, embed_dim=6, mask=mask))
    s = Steps()
    out = self_attention(x, causal=True, steps=s)
    case("self_attention_verbose_causal", "deep:Edu-SelfAttention", {"causal": True}, {"tensor": x}, out, s)

    out = multi_head(x, x)
    out["labels"] = labels
    case("mha_default", "deep:Edu-MultiHeadAttention", {}, {"tensor": x, "labels": labels}, out)
    x8 = rand(3, 2, 8, seed=12)
    out = multi_head(x8, x8, num_heads=4, causal=True, seed=9)
    case("mha_batched_causal_4heads", "deep:Edu-MultiHeadAttention", {"num_heads": 4, "causal": True, "seed": 9},
         {"tensor": x8}, out)
    m5 = torch.eye(5, dtype=torch.bool)
    out = multi_head(x, x, mask=m5)
    case("mha_mask", "deep:Edu-MultiHeadAttention", {}, {"tensor": x, "mask": m5}, out)
    s = Steps()
    out = multi_head(x, x, steps=s)
    case("mha_verbose", "deep:Edu-MultiHeadAttention", {}, {"tensor": x}, out, s)

    q = rand(3, 8, seed=13)
    ctx = rand(6, 8, seed=14)
    out = multi_head(q, ctx, cross=True)
    out["q_labels"] = ["a", "b", "c"]
    case("cross_attention_default", "deep:Edu-CrossAttention", {}, {"query": q, "context": ctx, "q_labels": ["a", "b", "c"]},
         out)
    q3, c3 = rand(2, 3, 12, seed=15), rand(4, 3, 12, seed=16)
    cm = torch.tensor([[False, False, True, True], [True, False, False, False]])
    out = multi_head(q3, c3, embed_dim=12, num_heads=3, seed=1, mask=cm, cross=True)
    case("cross_attention_batched_mask", "deep:Edu-CrossAttention", {"embed_dim": 12, "num_heads": 3, "seed": 1},
         {"query": q3, "context": c3, "mask": cm}, out)
    s = Steps()
    out = multi_head(q, ctx, cross=True, steps=s)
    case("cross_attention_verbose", "deep:Edu-CrossAttention", {}, {"query": q, "context": ctx}, out, s)


# ----------------------------------------------------------------------------- Transformer

def layer_norm(x, gamma=None, beta=None, eps=1e-5, affine=True, steps=None):
    d = x.shape[-1]
    gamma = torch.ones(d) if gamma is None else gamma
    beta = torch.zeros(d) if beta is None else beta
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    xhat = (x - mean) / torch.sqrt(var + eps)
    y = gamma * xhat + beta if affine else xhat
    assert torch.allclose(y, F.layer_norm(x, (d,), gamma if affine else None, beta if affine else None, eps),
                          atol=1e-5)
    if steps is not None:
        steps.record("mean", {"D": d, "eps": eps}, mean=mean)
        steps.record("var", var=var)
        steps.record("normalize", xhat=xhat)
        steps.record("affine", y=y)
    return {"y": y, "mean": mean, "var": var}


def patchify(x, patch_size=8, flatten=True, steps=None):
    if x.ndim == 3:
        x = x.unsqueeze(0)
    B, C, H, W = x.shape
    gh, gw = H // patch_size, W // patch_size
    unfolded = x.unfold(2, patch_size, patch_size).unfold(3, patch_size, patch_size)
    permuted = unfolded.permute(0, 2, 3, 1, 4, 5).contiguous()
    tokens = (permuted.view(B, gh * gw, C * patch_size * patch_size) if flatten
              else permuted.view(B, gh * gw, C, patch_size, patch_size))
    if steps is not None:
        steps.record("input", {"B": B, "C": C, "H": H, "W": W, "patch_size": patch_size, "grid_h": gh, "grid_w": gw,
                               "n_patches": gh * gw}, image=x)
        steps.record("unfold", unfolded=unfolded)
        steps.record("permute", permuted=permuted)
        steps.record("flatten" if flatten else "reshape", tokens=tokens)
    return {"tokens": tokens, "grid": torch.tensor([gh, gw], dtype=torch.long)}


def transformer():
    x = rand(2, 3, 5, seed=20)
    case("layer_norm_default", "deep:Edu-LayerNorm", {}, {"x": x}, layer_norm(x))
    g, b = rand(5, seed=21), rand(5, seed=22)
    case("layer_norm_affine_inputs", "deep:Edu-LayerNorm", {"normalized_dim": 5, "eps": 0.1},
         {"x": x, "gamma": g, "beta": b}, layer_norm(x, g, b, eps=0.1))
    case("layer_norm_no_affine", "deep:Edu-LayerNorm", {"elementwise_affine": False}, {"x": x, "gamma": g},
         layer_norm(x, g, affine=False))
    s = Steps()
    out = layer_norm(x, g, b, steps=s)
    case("layer_norm_verbose", "deep:Edu-LayerNorm", {}, {"x": x, "gamma": g, "beta": b}, out, s)

    img = rand(2, 3, 4, 6, seed=23)
    case("patchify_flatten", "deep:Edu-Patchify", {"patch_size": 2}, {"image": img}, patchify(img, 2))
    case("patchify_keep_patches", "deep:Edu-Patchify", {"patch_size": 2, "flatten": False}, {"image": img},
         patchify(img, 2, False))
    img3 = rand(1, 16, 8, seed=24)
    case("patchify_default_unbatched", "deep:Edu-Patchify", {}, {"image": img3}, patchify(img3))
    s = Steps()
    out = patchify(img, 2, steps=s)
    case("patchify_verbose", "deep:Edu-Patchify", {"patch_size": 2}, {"image": img}, out, s)


# ----------------------------------------------------------------------------- RNN

def sampled(seq):
    return set(range(seq)) if seq <= 6 else {round(k * (seq - 1) / 5) for k in range(6)}


def rnn(x, input_size=4, hidden=8, activation="tanh", seed=0, h0=None, steps=None):
    g = gen(seed)
    W_ih = torch.randn(hidden, input_size, generator=g) * 0.1
    W_hh = torch.randn(hidden, hidden, generator=g) * 0.1
    b_ih = torch.randn(hidden, generator=g) * 0.1
    b_hh = torch.randn(hidden, generator=g) * 0.1
    batched = x.ndim == 3
    xb = x if batched else x.unsqueeze(0)
    N, seq = xb.shape[0], xb.shape[1]
    h = torch.zeros(N, hidden) if h0 is None else (h0.expand(N, hidden) if h0.ndim == 1 else h0)
    cell = torch.nn.RNNCell(input_size, hidden, nonlinearity=activation)
    with torch.no_grad():
        cell.weight_ih.copy_(W_ih), cell.weight_hh.copy_(W_hh), cell.bias_ih.copy_(b_ih), cell.bias_hh.copy_(b_hh)
    act = torch.tanh if activation == "tanh" else F.relu
    hs, ref = [], h
    record = sampled(seq)
    for t in range(seq):
        x_t = xb[:, t, :]
        Wx = x_t @ W_ih.T + b_ih
        Wh = h @ W_hh.T + b_hh
        h = act(Wx + Wh)
        ref = cell(x_t, ref)
        assert torch.allclose(h, ref, atol=1e-6)
        hs.append(h)
        if steps is not None and t in record:
            steps.record(f"t={t}", x_t=x_t[0], Wx=Wx[0], Wh=Wh[0], h_t=h[0])
    h_seq = torch.stack(hs, 1) if batched else torch.stack(hs, 1).squeeze(0)
    h_last = h if batched else h.squeeze(0)
    if steps is not None:
        steps.record("h_seq", {"seq": seq, "hidden_size": hidden}, h_seq=h_seq)
    return {"h_seq": h_seq, "h_last": h_last, "weights": W_ih}


def lstm(x, input_size=4, hidden=8, seed=0, h0=None, c0=None, steps=None):
    g = gen(seed)
    H = hidden
    w_ih = torch.randn(4 * H, input_size, generator=g) * 0.1
    w_hh = torch.randn(4 * H, H, generator=g) * 0.1
    b_ih = torch.randn(4 * H, generator=g) * 0.1
    b_hh = torch.randn(4 * H, generator=g) * 0.1
    batched = x.ndim == 3
    xb = x if batched else x.unsqueeze(0)
    N, seq = xb.shape[0], xb.shape[1]

    def state(s):
        return torch.zeros(N, H) if s is None else (s.unsqueeze(0).expand(N, H) if s.ndim == 1 else s)

    h, c = state(h0), state(c0)
    cell = torch.nn.LSTMCell(input_size, H)
    with torch.no_grad():
        cell.weight_ih.copy_(w_ih), cell.weight_hh.copy_(w_hh), cell.bias_ih.copy_(b_ih), cell.bias_hh.copy_(b_hh)
    rh, rc = h, c
    un = (lambda t: t) if batched else (lambda t: t.squeeze(0))
    record = sampled(seq)
    hs = []
    for t in range(seq):
        x_t = xb[:, t, :]
        gates = F.linear(x_t, w_ih, b_ih) + F.linear(h, w_hh, b_hh)
        i, f = torch.sigmoid(gates[:, :H]), torch.sigmoid(gates[:, H:2 * H])
        gg, o = torch.tanh(gates[:, 2 * H:3 * H]), torch.sigmoid(gates[:, 3 * H:])
        c = f * c + i * gg
        h = o * torch.tanh(c)
        rh, rc = cell(x_t, (rh, rc))
        assert torch.allclose(h, rh, atol=1e-6) and torch.allclose(c, rc, atol=1e-6)
        hs.append(h)
        if steps is not None and t in record:
            steps.record(f"timestep_{t}", {"t": t}, x_t=un(x_t), i=un(i), f=un(f), g=un(gg), o=un(o), c_t=un(c),
                         h_t=un(h))
    out = {"h_seq": un(torch.stack(hs, 1)), "h_last": un(h), "c_last": un(c), "weight_ih": w_ih, "weight_hh": w_hh,
           "bias_ih": b_ih, "bias_hh": b_hh}
    if steps is not None:
        steps.record("h_seq", {"seq": seq, "hidden_size": H}, h_seq=out["h_seq"], h_last=out["h_last"],
                     c_last=out["c_last"])
    return out


def recurrent():
    x = rand(5, 4, seed=30)
    case("rnn_default", "deep:Edu-RNNCell", {}, {"x_seq": x}, rnn(x))
    xb = rand(2, 3, 3, seed=31)
    h0 = rand(6, seed=32)
    case("rnn_relu_batched_h0", "deep:Edu-RNNCell",
         {"input_size": 3, "hidden_size": 6, "activation": "relu", "seed": 4}, {"x_seq": xb, "h0": h0},
         rnn(xb, 3, 6, "relu", 4, h0))
    s = Steps()
    x9 = rand(9, 4, seed=33)
    out = rnn(x9, steps=s)
    case("rnn_verbose_sampled", "deep:Edu-RNNCell", {}, {"x_seq": x9}, out, s)

    case("lstm_default", "deep:Edu-LSTMCell", {}, {"x_seq": x}, lstm(x))
    h0b, c0b = rand(2, 5, seed=34), rand(2, 5, seed=35)
    case("lstm_batched_states", "deep:Edu-LSTMCell", {"input_size": 3, "hidden_size": 5, "seed": 8},
         {"x_seq": xb, "h0": h0b, "c0": c0b}, lstm(xb, 3, 5, 8, h0b, c0b))
    c0 = rand(8, seed=36)
    case("lstm_unbatched_c0", "deep:Edu-LSTMCell", {}, {"x_seq": x, "c0": c0}, lstm(x, c0=c0))
    s = Steps()
    x8 = rand(2, 8, 4, seed=37)
    out = lstm(x8, steps=s)
    case("lstm_verbose_sampled", "deep:Edu-LSTMCell", {}, {"x_seq": x8}, out, s)


# ----------------------------------------------------------------------------- diffusion

def denoise(x_t, eps, t=50, num_steps=100, beta_start=0.0001, beta_end=0.02, steps=None):
    betas = torch.linspace(beta_start, beta_end, num_steps, dtype=torch.float32)
    ac = torch.cumprod(1.0 - betas, dim=0)
    a_t, a_p = ac[t], ac[t - 1]
    pred_x0 = (x_t - torch.sqrt(1.0 - a_t) * eps) / torch.sqrt(a_t)
    x_prev = torch.sqrt(a_p) * pred_x0 + torch.sqrt(1.0 - a_p) * eps
    if steps is not None:
        steps.record("schedule", {"t": t, "abar_t": a_t.item(), "abar_prev": a_p.item(),
                                  "sqrt_abar_t": torch.sqrt(a_t).item(),
                                  "sqrt_one_minus_abar_t": torch.sqrt(1.0 - a_t).item()})
        steps.record("predict_x0", pred_x0=pred_x0)
        steps.record("x_prev", {"sqrt_abar_prev": torch.sqrt(a_p).item(),
                                "sqrt_one_minus_abar_prev": torch.sqrt(1.0 - a_p).item()}, x_prev=x_prev)
    return {"x_prev": x_prev, "pred_x0": pred_x0}


def resample(x, direction="down", factor=2, mode="nearest", skip=None, steps=None):
    if x.ndim == 3:
        x = x.unsqueeze(0)
    H, W = x.shape[2], x.shape[3]
    if direction == "down" and mode == "avgpool":
        y = F.avg_pool2d(x, kernel_size=factor)
    else:
        kw = {"scale_factor": (1.0 / factor) if direction == "down" else float(factor), "mode": mode}
        if mode == "bilinear":
            kw["align_corners"] = False
        y = F.interpolate(x, **kw)
    if steps is not None:
        steps.record("resample", {"factor": factor, "H_before": H, "W_before": W, "H_after": y.shape[2],
                                  "W_after": y.shape[3]}, x=x, y=y)
    if skip is not None and direction == "up":
        cb = y.shape[1]
        y = torch.cat([y, skip], dim=1)
        if steps is not None:
            steps.record("skip_concat", {"channels_before": cb, "channels_skip": skip.shape[1],
                                         "channels_after": y.shape[1]}, y=y)
    return {"y": y, "shape": torch.tensor(list(y.shape), dtype=torch.long)}


def resblock(x, in_channels=8, out_channels=8, groups=4, time_emb_dim=32, seed=42, time_emb=None):
    g = gen(seed)
    scale = 1.0 / math.sqrt(max(in_channels, 1))
    w1 = torch.randn(out_channels, in_channels, 3, 3, generator=g) * scale
    w2 = torch.randn(out_channels, out_channels, 3, 3, generator=g) * scale
    wt = torch.randn(out_channels, time_emb_dim, generator=g) * scale if time_emb_dim > 0 else None
    ws = torch.randn(out_channels, in_channels, 1, 1, generator=g) * scale if in_channels != out_channels else None
    h = F.conv2d(F.silu(F.group_norm(x, groups, eps=1e-5)), w1, torch.zeros(out_channels), padding=1)
    if time_emb is not None and wt is not None:
        te = time_emb.unsqueeze(0) if time_emb.ndim == 1 else time_emb
        h = h + F.linear(te, wt, torch.zeros(out_channels))[:, :, None, None]
    h = F.conv2d(F.silu(F.group_norm(h, groups, eps=1e-5)), w2, torch.zeros(out_channels), padding=1)
    skip = F.conv2d(x, ws, torch.zeros(out_channels)) if ws is not None else x
    return {"tensor": h + skip}


def diffusion():
    x_t, eps = rand(1, 2, 3, 3, seed=40), rand(1, 2, 3, 3, seed=41)
    case("denoise_default", "deep:Edu-DenoiseStep", {}, {"x_t": x_t, "noise_pred": eps}, denoise(x_t, eps))
    case("denoise_first_step_custom_schedule", "deep:Edu-DenoiseStep",
         {"t": 1, "num_steps": 10, "beta_start": 0.001, "beta_end": 0.2}, {"x_t": x_t, "noise_pred": eps},
         denoise(x_t, eps, 1, 10, 0.001, 0.2))
    s = Steps()
    v, e = rand(4, seed=42), rand(4, seed=43)
    out = denoise(v, e, t=99, steps=s)
    case("denoise_verbose_last", "deep:Edu-DenoiseStep", {"t": 99}, {"x_t": v, "noise_pred": e}, out, s)

    x = rand(1, 2, 6, 4, seed=44)
    for mode in ("nearest", "bilinear", "avgpool"):
        case(f"resample_down_{mode}", "deep:Edu-Resample", {"mode": mode}, {"x": x}, resample(x, mode=mode))
    x7 = rand(2, 7, 9, seed=45)
    case("resample_down_factor3_odd", "deep:Edu-Resample", {"factor": 3, "mode": "bilinear"}, {"x": x7},
         resample(x7, factor=3, mode="bilinear"))
    case("resample_up_nearest", "deep:Edu-Resample", {"direction": "up"}, {"x": x}, resample(x, "up"))
    sk = rand(1, 3, 12, 8, seed=46)
    case("resample_up_bilinear_skip", "deep:Edu-Resample", {"direction": "up", "mode": "bilinear"},
         {"x": x, "skip": sk}, resample(x, "up", mode="bilinear", skip=sk))
    case("resample_down_ignores_skip", "deep:Edu-Resample", {}, {"x": x, "skip": sk}, resample(x, skip=sk))
    s = Steps()
    out = resample(x, "up", 2, "nearest", sk, steps=s)
    case("resample_verbose_skip", "deep:Edu-Resample", {"direction": "up"}, {"x": x, "skip": sk}, out, s)

    r = rand(2, 4, 5, 5, seed=47)
    te = rand(2, 6, seed=48)
    case("resblock_channels_change_time", "deep:Edu-ResBlock",
         {"in_channels": 4, "out_channels": 8, "groups": 2, "time_emb_dim": 6, "seed": 3},
         {"tensor": r, "time_emb": te}, resblock(r, 4, 8, 2, 6, 3, te))
    r8 = rand(1, 8, 4, 4, seed=49)
    case("resblock_default_no_time", "deep:Edu-ResBlock", {}, {"tensor": r8}, resblock(r8))
    te1 = rand(32, seed=50)
    case("resblock_single_time_vector", "deep:Edu-ResBlock", {}, {"tensor": r8, "time_emb": te1},
         resblock(r8, time_emb=te1))
    case("resblock_no_time_layer", "deep:Edu-ResBlock", {"in_channels": 4, "out_channels": 4, "groups": 1,
                                                        "time_emb_dim": 0},
         {"tensor": r}, resblock(r, 4, 4, 1, 0))


# ----------------------------------------------------------------------------- the lesson graphs

def example(name, path, outputs):
    CASES.append({"name": name, "node": "example", "params": {"path": path}, "inputs": {},
                  "outputs": {k: tensor_json(v) for k, v in outputs.items()}})


def examples():
    # examples/edu-deep-conv-pool: TensorInput [1,1,6,6] seed 0 -> Edu-Conv2d (2 channels, 3x3, padding 1,
    # seed 0) -> Edu-MaxPool2d 2x2.
    img = rand(1, 1, 6, 6, seed=0)
    conv = conv2d(img, out_channels=2, kernel_size=3, padding=1, seed=0)
    pool = maxpool2d(conv["y"])
    example("example_conv_pool", "edu-deep-conv-pool",
            {"conv.y": conv["y"], "conv.cols": conv["cols"], "pool.y": pool["y"], "pool.argmax": pool["argmax"]})
    # examples/edu-deep-self-attention: TensorInput [6,8] seed 3 -> Edu-LayerNorm -> Edu-SelfAttention
    # (causal, seed 42) and Edu-MultiHeadAttention (2 heads, seed 42).
    tokens = rand(6, 8, seed=3)
    ln = layer_norm(tokens)["y"]
    attn = self_attention(ln, causal=True)
    mha = multi_head(ln, ln, num_heads=2)
    example("example_self_attention", "edu-deep-self-attention",
            {"norm.y": ln, "attn.output": attn["output"], "attn.weights": attn["weights"],
             "heads.weights": mha["weights"], "heads.output": mha["output"]})
    # examples/edu-deep-unet-step: TensorInput [1,4,8,8] seed 5 -> Edu-ResBlock (4 -> 8, groups 4, no time) ->
    # Edu-Resample down (avgpool) -> Edu-Resample up (nearest) with the ResBlock output as skip.
    feat = rand(1, 4, 8, 8, seed=5)
    block = resblock(feat, 4, 8, 4, 0, 42)["tensor"]
    down = resample(block, "down", 2, "avgpool")["y"]
    up = resample(down, "up", 2, "nearest", skip=block)["y"]
    example("example_unet_step", "edu-deep-unet-step", {"block.tensor": block, "down.y": down, "up.y": up})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"))
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    cnn()
    attention()
    transformer()
    recurrent()
    diffusion()
    examples()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "edu_deep.json")
    with open(path, "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": CASES}, f, indent=1)
        f.write("\n")
    print(f"{len(CASES)} cases -> {path}")


if __name__ == "__main__":
    main()
