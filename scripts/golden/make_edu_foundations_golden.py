#!/usr/bin/env python3
"""Golden values for the foundations:Edu-* and rl:Edu-* teaching nodes, from PyTorch.

tests/engine/edu_foundations_test.cpp runs each case through the node of the
same name (src/nodes/edu_foundations_nodes.cpp) and compares every output
with the JSON this writes, so CI needs no Python.

Rerun (Debian's PyTorch is visible to the system interpreter only):

    /usr/bin/python3 scripts/golden/make_edu_foundations_golden.py            # tests/golden/edu_foundations.json
    /usr/bin/python3 scripts/golden/make_edu_foundations_golden.py --out DIR  # elsewhere

Each case is {name, node, params, inputs, outputs, verbose?, steps?}. What
each node computes is written here with plain torch calls, following the
definitions of CodefyUI's plugin nodes (plugins/foundations/nodes/,
plugins/rl/nodes/): their parameter defaults, their order of operations,
their tie-breaking (the tree's lowest feature then threshold, k-NN's nearest
label), their seeded tables and weights. A verbose case also lists the steps
the node records ({name, tensors}) and has each step tensor among its
outputs as `__step__{i}__{tensor}`, the name Codefy's executor gives it.
"""

import argparse
import json
import math
import os
from collections import Counter

import torch
import torch.nn.functional as F

from golden_common import ROOT, tensor_json





def encode(v):
    return tensor_json(v) if isinstance(v, torch.Tensor) else v


CASES = []


class Steps:
    """Collects (name, {tensor name: tensor}) as a verbose node run records them."""

    def __init__(self):
        self.steps = []

    def __call__(self, name, **tensors):
        self.steps.append((name, tensors))


def case(name, node, params, inputs, outputs, steps=None):
    c = {"name": name, "node": node, "params": params,
         "inputs": {k: encode(v) for k, v in inputs.items()},
         "outputs": {k: encode(v) for k, v in outputs.items()}}
    if steps is not None:
        c["verbose"] = True
        c["steps"] = [{"name": n, "tensors": list(t)} for n, t in steps.steps]
        for i, (_, tensors) in enumerate(steps.steps):
            for k, v in tensors.items():
                c["outputs"][f"__step__{i}__{k}"] = tensor_json(v)
    CASES.append(c)


def rand(*shape, seed, scale=1.0, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) * scale + offset


# ============================================================================ foundations

def column_stats(x, unbiased=False, rec=None):
    rec = rec or Steps()
    rows = x.shape[0]
    rec("input", table=x)
    col_sum = x.sum(dim=0)
    rec("col_sum", col_sum=col_sum)
    counts = torch.full_like(col_sum, float(rows))
    means = col_sum / counts
    rec("means", means=means, counts=counts)
    deviations = x - means.unsqueeze(0)
    rec("deviations", deviations=deviations)
    squared = deviations * deviations
    denom = float(rows - 1) if unbiased and rows > 1 else float(rows)
    variances = squared.sum(dim=0) / denom
    stds = variances.sqrt()
    rec("stds", squared=squared, variances=variances, stds=stds)
    mins, maxs = x.min(dim=0).values, x.max(dim=0).values
    rec("range", mins=mins, maxs=maxs)
    return {"means": means, "stds": stds, "mins": mins, "maxs": maxs, "counts": counts}


def column_stats_cases():
    x = rand(7, 3, seed=1, scale=2.0, offset=0.5)
    case("column_stats_population", "foundations:Edu-ColumnStats", {}, {"table": x}, column_stats(x))
    case("column_stats_unbiased", "foundations:Edu-ColumnStats", {"unbiased": True}, {"table": x},
         column_stats(x, unbiased=True))
    one = torch.tensor([[1.0, -2.0, 3.5]])
    case("column_stats_one_row_unbiased", "foundations:Edu-ColumnStats", {"unbiased": True}, {"table": one},
         column_stats(one, unbiased=True))
    rec = Steps()
    out = column_stats(x, rec=rec)
    case("column_stats_verbose", "foundations:Edu-ColumnStats", {}, {"table": x}, out, rec)


# ---------------------------------------------------------------------------- decision tree

def impurity(y, criterion):
    n = y.shape[0]
    if n == 0:
        return 0.0
    counts = torch.bincount(y)
    p = counts[counts > 0].float() / float(n)
    if criterion == "entropy":
        return float(-(p * torch.log2(p)).sum().item())
    return float((1.0 - (p * p).sum()).item())


def tree_leaf(y):
    counts = Counter(int(v) for v in y.tolist())
    top = max(counts.values())
    return {"leaf": True, "prediction": min(c for c, k in counts.items() if k == top), "n_samples": int(y.shape[0]),
            "class_counts": {str(c): counts[c] for c in sorted(counts)}}


def grow(x, y, depth, max_depth, min_split, criterion, splits):
    n = x.shape[0]
    imp = impurity(y, criterion)
    if depth >= max_depth or n < min_split or imp == 0.0:
        return tree_leaf(y)
    best = None
    best_gain = 0.0
    for f in range(x.shape[1]):
        col = x[:, f]
        u = torch.unique(col, sorted=True)
        if u.numel() < 2:
            continue
        for thr in ((u[:-1] + u[1:]) / 2.0).tolist():
            left = col <= thr
            nl = int(left.sum())
            nr = n - nl
            if nl == 0 or nr == 0:
                continue
            gain = imp - ((nl / n) * impurity(y[left], criterion) + (nr / n) * impurity(y[~left], criterion))
            if gain > best_gain:
                best_gain, best = gain, (f, float(thr))
    if best is None:
        return tree_leaf(y)
    f, thr = best
    splits.append((depth, f, thr, imp, best_gain, n))
    left = x[:, f] <= thr
    return {"feature": f, "threshold": thr, "impurity": imp, "gain": best_gain, "n_samples": n,
            "left": grow(x[left], y[left], depth + 1, max_depth, min_split, criterion, splits),
            "right": grow(x[~left], y[~left], depth + 1, max_depth, min_split, criterion, splits)}


def count_nodes(t):
    return 1 if t.get("leaf") else 1 + count_nodes(t["left"]) + count_nodes(t["right"])


def predict_tree(t, row):
    while not t.get("leaf"):
        t = t["left"] if float(row[t["feature"]]) <= t["threshold"] else t["right"]
    return t["prediction"]


def decision_tree(x, y, xq, max_depth=3, min_split=2, criterion="gini"):
    splits = []
    tree = grow(x, y, 0, max_depth, min_split, criterion, splits)
    preds = torch.tensor([predict_tree(tree, xq[i]) for i in range(xq.shape[0])], dtype=torch.long)
    return {"predictions": preds, "tree": tree, "node_count": torch.tensor(count_nodes(tree), dtype=torch.long)}, splits


def three_blobs(n_per, seed, features=4):
    g = torch.Generator().manual_seed(seed)
    xs, ys = [], []
    for c in range(3):
        centre = torch.randn(features, generator=g) * 2.5
        xs.append(torch.randn(n_per, features, generator=g) + centre)
        ys += [c] * n_per
    # Rounded to one decimal, as measurements are: repeated values make equal-gain ties.
    return torch.round(torch.cat(xs) * 10) / 10, torch.tensor(ys)


def decision_tree_cases():
    x, y = three_blobs(20, seed=3)
    xq, _ = three_blobs(5, seed=4)
    out, _ = decision_tree(x, y, xq)
    case("decision_tree_gini_depth3", "foundations:Edu-DecisionTree", {}, {"x_train": x, "y_train": y, "x_query": xq},
         out)
    out, _ = decision_tree(x, y, xq, max_depth=2, criterion="entropy")
    case("decision_tree_entropy_depth2", "foundations:Edu-DecisionTree", {"max_depth": 2, "criterion": "entropy"},
         {"x_train": x, "y_train": y, "x_query": xq}, out)
    out, _ = decision_tree(x, y, xq, max_depth=8, min_split=10)
    case("decision_tree_min_samples_split", "foundations:Edu-DecisionTree", {"max_depth": 8, "min_samples_split": 10},
         {"x_train": x, "y_train": y, "x_query": xq}, out)
    # Ties everywhere: XOR-like points on a grid, labels 0 and 2 (class 1 absent).
    xg = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 0.0], [2.0, 1.0]])
    yg = torch.tensor([0, 2, 2, 0, 0, 2])
    out, splits = decision_tree(xg, yg, xg, max_depth=3)
    rec = Steps()
    for d, *_ in splits:
        rec(f"split_d{d}")
    rec("tree")
    case("decision_tree_ties_verbose", "foundations:Edu-DecisionTree", {}, {"x_train": xg, "y_train": yg, "x_query": xg},
         out, rec)


# ---------------------------------------------------------------------------- FFN

def ffn(x, embed_dim=8, hidden_dim=16, activation="relu", seed=42, rec=None):
    rec = rec or Steps()
    g = torch.Generator()
    g.manual_seed(seed)
    w1 = torch.randn((hidden_dim, embed_dim), generator=g) * (1.0 / max(1, embed_dim) ** 0.5)
    w2 = torch.randn((embed_dim, hidden_dim), generator=g) * (1.0 / max(1, hidden_dim) ** 0.5)
    h = F.linear(x, w1, torch.zeros(hidden_dim))
    a = F.relu(h) if activation == "relu" else F.gelu(h)
    out = F.linear(a, w2, torch.zeros(embed_dim))
    rec("input", tensor=x)
    rec("linear1", hidden=h)
    rec("activation", activations=a)
    rec("linear2", output=out)
    return {"tensor": out, "activations": a}


def ffn_cases():
    x = rand(2, 3, 8, seed=5)
    case("ffn_relu_default", "foundations:Edu-FFN", {}, {"tensor": x}, ffn(x))
    x2 = rand(4, 6, seed=6)
    case("ffn_gelu_seed7", "foundations:Edu-FFN", {"embed_dim": 6, "hidden_dim": 24, "activation": "gelu", "seed": 7},
         {"tensor": x2}, ffn(x2, 6, 24, "gelu", 7))
    rec = Steps()
    out = ffn(x[0], rec=rec)
    case("ffn_verbose", "foundations:Edu-FFN", {}, {"tensor": x[0]}, out, rec)


# ---------------------------------------------------------------------------- KNN

def knn(xt, labels, xq, k=5, metric="euclidean", rec=None):
    rec = rec or Steps()
    k = max(1, min(k, xt.shape[0]))
    if metric == "euclidean":
        d = torch.linalg.vector_norm(xq.unsqueeze(1) - xt.unsqueeze(0), dim=-1)
    elif metric == "manhattan":
        d = (xq.unsqueeze(1) - xt.unsqueeze(0)).abs().sum(dim=-1)
    else:
        d = 1.0 - F.normalize(xq, dim=-1, eps=1e-12) @ F.normalize(xt, dim=-1, eps=1e-12).T
    td, ti = torch.topk(d, k=k, dim=1, largest=False)
    preds, neigh = [], []
    for row in ti.tolist():
        neigh.append(row)
        votes = Counter(str(labels[j]) for j in row)
        preds.append(votes.most_common(1)[0][0])
    rec("compute_distances", distances=d)
    rec("topk", topk_distances=td, topk_indices=ti)
    rec("vote")
    return {"predictions": preds, "distances": td, "neighbor_indices": neigh, "train_coords": xt, "query_coords": xq,
            "train_labels": labels}


def knn_cases():
    xt = rand(24, 2, seed=8, scale=1.5)
    labels = ["cat" if float(r[0]) + 0.3 * float(r[1]) > 0 else "dog" for r in xt]
    labels[3] = "bird"
    xq = rand(6, 2, seed=9)
    for metric in ("euclidean", "manhattan", "cosine"):
        case(f"knn_{metric}", "foundations:Edu-KNN", {"metric": metric}, {"x_train": xt, "y_train": labels, "x_query": xq},
             knn(xt, labels, xq, metric=metric))
    numeric = [i % 3 for i in range(24)]
    case("knn_k_clamped_numeric_labels", "foundations:Edu-KNN", {"k": 50},
         {"x_train": xt, "y_train": numeric, "x_query": xq}, knn(xt, numeric, xq, k=50))
    case("knn_k1", "foundations:Edu-KNN", {"k": 1}, {"x_train": xt, "y_train": labels, "x_query": xq},
         knn(xt, labels, xq, k=1))
    rec = Steps()
    out = knn(xt, labels, xq, k=3, rec=rec)
    case("knn_verbose", "foundations:Edu-KNN", {"k": 3}, {"x_train": xt, "y_train": labels, "x_query": xq}, out, rec)


# ---------------------------------------------------------------------------- linear regression

def linear_regression(x, y, xq, method="closed_form", lr=0.01, epochs=100, lam=0.0, rec=None):
    rec = rec or Steps()
    y = y.float().squeeze()
    f = x.shape[1]
    if method == "closed_form":
        xa = torch.cat([x, torch.ones(x.shape[0], 1)], dim=1)
        reg = lam * torch.eye(f + 1)
        reg[-1, -1] = 0.0
        theta = torch.linalg.solve(xa.T @ xa + reg, xa.T @ y)
        w, b = theta[:f], theta[f]
    else:
        w, b = torch.zeros(f), torch.zeros(())
        n = x.shape[0]
        for _ in range(max(1, epochs)):
            err = x @ w + b - y
            gw = (2 / n) * x.T @ err + 2 * lam * w
            gb = (2 / n) * err.sum()
            w = w - lr * gw
            b = b - lr * gb
    p = xq @ w + b
    rec("fit", weights=w, bias=b)
    rec("predict", predictions=p)
    return {"predictions": p, "weights": w, "bias": b}


def linear_regression_cases():
    x = rand(30, 3, seed=10)
    y = x @ torch.tensor([1.5, -2.0, 0.5]) + 0.7 + 0.1 * rand(30, seed=11)
    xq = rand(5, 3, seed=12)
    case("linreg_closed_form", "foundations:Edu-LinearRegression", {}, {"x_train": x, "y_train": y, "x_query": xq},
         linear_regression(x, y, xq))
    case("linreg_ridge_column_targets", "foundations:Edu-LinearRegression", {"regularization": 2.5},
         {"x_train": x, "y_train": y.unsqueeze(1), "x_query": xq}, linear_regression(x, y.unsqueeze(1), xq, lam=2.5))
    params = {"method": "gradient_descent", "lr": 0.05, "epochs": 150, "regularization": 0.1}
    case("linreg_gradient_descent", "foundations:Edu-LinearRegression", params,
         {"x_train": x, "y_train": y, "x_query": xq},
         linear_regression(x, y, xq, "gradient_descent", 0.05, 150, 0.1))
    rec = Steps()
    out = linear_regression(x, y, xq, rec=rec)
    case("linreg_verbose", "foundations:Edu-LinearRegression", {}, {"x_train": x, "y_train": y, "x_query": xq}, out, rec)


# ---------------------------------------------------------------------------- logistic regression

def softmax_rows(z):
    e = torch.exp(z - z.max(dim=1, keepdim=True).values)
    return e / e.sum(dim=1, keepdim=True)


def logistic_regression(x, labels, xq, lr=0.1, epochs=200, lam=0.0, rec=None):
    rec = rec or Steps()
    labels = [str(v) for v in labels]
    classes = sorted(set(labels))
    yi = torch.tensor([classes.index(v) for v in labels])
    w = torch.zeros(x.shape[1], len(classes))
    b = torch.zeros(len(classes))
    n = x.shape[0]
    for _ in range(max(1, epochs)):
        p = softmax_rows(x @ w + b)
        err = p - F.one_hot(yi, len(classes)).float()
        gw = (1 / n) * x.T @ err + 2 * lam * w
        gb = (1 / n) * err.sum(dim=0)
        w = w - lr * gw
        b = b - lr * gb
    logits = xq @ w + b
    probs = softmax_rows(logits)
    rec("fit", weights=w, bias=b)
    rec("predict", logits=logits, probabilities=probs)
    return {"predictions": [classes[i] for i in probs.argmax(dim=1).tolist()], "probabilities": probs, "weights": w,
            "bias": b, "classes": classes}


def logistic_regression_cases():
    x, y = three_blobs(15, seed=13, features=2)
    names = ["setosa", "versicolor", "virginica"]
    labels = [names[i] for i in y.tolist()]
    xq = rand(6, 2, seed=14, scale=3.0)
    case("logreg_three_classes", "foundations:Edu-LogisticRegression", {}, {"x_train": x, "y_train": labels, "x_query": xq},
         logistic_regression(x, labels, xq))
    binary = [int(v > 0) for v in y.tolist()]
    case("logreg_binary_tensor_labels_l2", "foundations:Edu-LogisticRegression",
         {"lr": 0.05, "epochs": 120, "regularization": 0.01},
         {"x_train": x, "y_train": torch.tensor(binary), "x_query": xq},
         logistic_regression(x, binary, xq, 0.05, 120, 0.01))
    rec = Steps()
    out = logistic_regression(x, labels, xq, epochs=20, rec=rec)
    case("logreg_verbose", "foundations:Edu-LogisticRegression", {"epochs": 20},
         {"x_train": x, "y_train": labels, "x_query": xq}, out, rec)


# ---------------------------------------------------------------------------- sliding window

PRESETS = {
    "identity": [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
    "edge": [[0.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 0.0]],
    "sharpen": [[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]],
    "blur": [[1.0 / 9.0] * 3 for _ in range(3)],
    "sobel_x": [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]],
    "sobel_y": [[-1.0, -2.0, -1.0], [0.0, 0.0, 0.0], [1.0, 2.0, 1.0]],
}


def sliding_window(image, kernel=None, preset="edge", stride=1, padding=0, rec=None):
    rec = rec or Steps()
    if image.ndim == 3:
        image = image[0]
    k = kernel if kernel is not None else torch.tensor(PRESETS[preset])
    kh, kw = k.shape
    padded = F.pad(image, (padding,) * 4) if padding else image
    hout = (padded.shape[0] - kh) // stride + 1
    wout = (padded.shape[1] - kw) // stride + 1
    fmap = torch.empty(hout, wout)
    windows = torch.empty(hout * wout, kh, kw)
    rec("kernel", kernel=k)
    total = hout * wout
    sampled = set(range(total)) if total <= 9 else {(i * (total - 1)) // 8 for i in range(9)}
    flat = 0
    for r in range(hout):
        for c in range(wout):
            field = padded[r * stride:r * stride + kh, c * stride:c * stride + kw]
            prod = field * k
            v = prod.sum()
            fmap[r, c] = v
            windows[flat] = field
            if flat in sampled:
                rec(f"pos_r{r}_c{c}", receptive_field=field, product=prod, value=v)
            flat += 1
    rec("feature_map", feature_map=fmap)
    return {"feature_map": fmap, "kernel": k, "windows": windows}


def sliding_window_cases():
    img = rand(5, 6, seed=15)
    case("sliding_window_edge", "foundations:Edu-SlidingWindow", {}, {"image": img}, sliding_window(img))
    for preset in ("identity", "sharpen", "blur", "sobel_x", "sobel_y"):
        case(f"sliding_window_{preset}", "foundations:Edu-SlidingWindow", {"kernel_preset": preset}, {"image": img},
             sliding_window(img, preset=preset))
    k = torch.tensor([[1.0, -0.5], [0.25, 2.0]])
    case("sliding_window_kernel_input_stride2_pad1", "foundations:Edu-SlidingWindow", {"stride": 2, "padding": 1},
         {"image": img, "kernel": k}, sliding_window(img, kernel=k, stride=2, padding=1))
    img3 = rand(3, 4, 4, seed=16)
    rec = Steps()
    out = sliding_window(img3, preset="sobel_x", padding=1, rec=rec)
    case("sliding_window_channels_verbose", "foundations:Edu-SlidingWindow", {"kernel_preset": "sobel_x", "padding": 1},
         {"image": img3}, out, rec)
    small = rand(4, 4, seed=17)
    rec = Steps()
    out = sliding_window(small, rec=rec)
    case("sliding_window_all_positions_verbose", "foundations:Edu-SlidingWindow", {}, {"image": small}, out, rec)


# ---------------------------------------------------------------------------- SVM

def svm(x, y, xq, C=1.0, lr=0.01, epochs=100, rec=None):
    rec = rec or Steps()
    y = y.flatten()
    neg, pos = torch.unique(y, sorted=True)
    n = x.shape[0]
    ypm = torch.where(y == pos, torch.ones(n), -torch.ones(n))
    w, b = torch.zeros(x.shape[1]), torch.zeros(())
    rec("init", w=w)
    n_snap = min(8, epochs)
    snaps = {max(1, min(epochs, round((s + 1) * epochs / n_snap))) for s in range(n_snap)}
    for epoch in range(1, epochs + 1):
        m = ypm * (x @ w + b)
        viol = m < 1.0
        vy = viol.float() * ypm
        dw = w - C * (vy.unsqueeze(1) * x).mean(dim=0)
        db = -C * vy.mean()
        w = w - lr * dw
        b = b - lr * db
        if epoch in snaps:
            rec(f"epoch_{epoch}", w=w)
    sv = ypm * (x @ w + b) < 1.0
    dv = xq @ w + b
    pred = torch.where(dv >= 0, pos.to(dv.dtype), neg.to(dv.dtype))
    rec("decision", weights=w, support_vectors=sv, decision_values=dv)
    return {"predictions": pred, "weights": w, "bias": b, "support_vectors": sv, "decision_values": dv}


def svm_cases():
    x = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0], [4.0, 5.0], [5.0, 4.0]])
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    xq = torch.tensor([[0.5, 0.5], [4.5, 4.5]])
    params = {"C": 1.0, "lr": 0.1, "epochs": 200}
    case("svm_lesson_blobs", "foundations:Edu-SVM", params, {"x_train": x, "y_train": y, "x_query": xq},
         svm(x, y, xq, 1.0, 0.1, 200))
    xr = rand(40, 3, seed=18)
    yr = torch.where(xr[:, 0] - 0.5 * xr[:, 2] > 0.1, torch.tensor(7.0), torch.tensor(-2.0))
    xqr = rand(8, 3, seed=19)
    case("svm_float_labels_defaults", "foundations:Edu-SVM", {}, {"x_train": xr, "y_train": yr, "x_query": xqr},
         svm(xr, yr, xqr))
    rec = Steps()
    out = svm(xr, yr, xqr, C=0.5, lr=0.05, epochs=13, rec=rec)
    case("svm_verbose_snapshots", "foundations:Edu-SVM", {"C": 0.5, "lr": 0.05, "epochs": 13},
         {"x_train": xr, "y_train": yr, "x_query": xqr}, out, rec)
    rec = Steps()
    out = svm(x, y, xq, epochs=3, rec=rec)
    case("svm_verbose_few_epochs", "foundations:Edu-SVM", {"epochs": 3}, {"x_train": x, "y_train": y, "x_query": xq},
         out, rec)


# ---------------------------------------------------------------------------- token embedding

def fnv1a(s, mod):
    h = 0x811C9DC5
    for byte in s.encode("utf-8"):
        h ^= byte
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h % mod


def token_embedding(tokens=None, token_ids=None, embed_dim=8, vocab_size=32, seed=42, mode="hash", rec=None):
    rec = rec or Steps()
    g = torch.Generator()
    g.manual_seed(seed)
    table = torch.randn(vocab_size, embed_dim, generator=g) * (1.0 / math.sqrt(embed_dim))
    if tokens is not None and token_ids is not None:
        seq = [(str(t), int(i)) for t, i in zip(tokens, token_ids)]
    elif tokens is not None:
        seq = [(str(t), None) for t in tokens]
    else:
        seq = [(f"<id:{int(i)}>", int(i)) for i in token_ids]
    ids, vocab, order = [], [], {}
    for label, raw in seq:
        if mode == "hash":
            ids.append(raw % vocab_size if raw is not None else fnv1a(label, vocab_size))
            if label not in vocab:
                vocab.append(label)
        else:
            if label not in order:
                order[label] = len(order) % vocab_size
                vocab.append(label)
            ids.append(order[label])
    emb = table[torch.tensor(ids, dtype=torch.long)] if ids else torch.zeros(0, embed_dim)
    rec("input_tokens")
    rec("embedding_table", table=table)
    rec("lookup", embeddings=emb)
    return {"embeddings": emb, "vocab": vocab}


def token_embedding_cases():
    words = ["the", "cat", "sat", "on", "the", "mat", "café", "猫"]
    case("token_embedding_hash_tokens", "foundations:Edu-TokenEmbedding", {}, {"tokens": words},
         token_embedding(tokens=words))
    case("token_embedding_ordinal_small_vocab", "foundations:Edu-TokenEmbedding",
         {"mode": "ordinal", "vocab_size": 4, "embed_dim": 5, "seed": 3}, {"tokens": words},
         token_embedding(tokens=words, mode="ordinal", vocab_size=4, embed_dim=5, seed=3))
    ids = [5, 40, -3, 5, 31]
    case("token_embedding_ids_only", "foundations:Edu-TokenEmbedding", {}, {"token_ids": ids},
         token_embedding(token_ids=ids))
    case("token_embedding_tokens_and_ids", "foundations:Edu-TokenEmbedding", {"vocab_size": 16},
         {"tokens": words, "token_ids": ids}, token_embedding(tokens=words, token_ids=ids, vocab_size=16))
    case("token_embedding_empty", "foundations:Edu-TokenEmbedding", {}, {"tokens": []}, token_embedding(tokens=[]))
    rec = Steps()
    out = token_embedding(tokens=words[:4], mode="ordinal", rec=rec)
    case("token_embedding_verbose", "foundations:Edu-TokenEmbedding", {"mode": "ordinal"}, {"tokens": words[:4]}, out,
         rec)


# ---------------------------------------------------------------------------- vector similarity

def vector_similarity(q, k, metric="cosine", rec=None):
    rec = rec or Steps()
    if q.ndim == 1:
        q = q.unsqueeze(0)
    raw = q @ k.transpose(0, 1)
    rec("dot_products", query=q, keys=k, raw_dot=raw)
    qn = torch.linalg.vector_norm(q, dim=-1)
    kn = torch.linalg.vector_norm(k, dim=-1)
    rec("norms", query_norms=qn, key_norms=kn)
    sim = raw / (qn.unsqueeze(1) * kn.unsqueeze(0) + 1e-12) if metric == "cosine" else raw
    rec("similarity", similarity=sim)
    return {"similarity": sim, "query_norms": qn, "key_norms": kn}


def vector_similarity_cases():
    q = rand(3, 4, seed=20)
    k = rand(5, 4, seed=21)
    case("vector_similarity_cosine", "foundations:Edu-VectorSimilarity", {}, {"query": q, "keys": k},
         vector_similarity(q, k))
    case("vector_similarity_dot_1d_query", "foundations:Edu-VectorSimilarity", {"metric": "dot"},
         {"query": q[0], "keys": k}, vector_similarity(q[0], k, "dot"))
    kz = torch.cat([k, torch.zeros(1, 4)])
    rec = Steps()
    out = vector_similarity(q, kz, rec=rec)
    case("vector_similarity_zero_key_verbose", "foundations:Edu-VectorSimilarity", {}, {"query": q, "keys": kz}, out,
         rec)


# ============================================================================ rl

def policy_gradient(logits, actions, rewards, baseline="mean", temperature=1.0, rec=None):
    rec = rec or Steps()
    scaled = logits / temperature
    probs = F.softmax(scaled, dim=-1)
    rec("softmax", logits=logits, scaled=scaled, probs=probs)
    ap = probs.gather(1, actions.unsqueeze(1)).squeeze(1)
    rec("gather", actions=actions, action_probs=ap)
    lp = ap.clamp_min(1e-12).log()
    rec("log", log_probs=lp)
    adv = rewards - rewards.mean() if baseline == "mean" else rewards
    rec("advantages", rewards=rewards, advantages=adv)
    loss = -(lp * adv).mean()
    rec("loss", loss=loss)
    return {"log_probs": lp, "advantages": adv, "loss": loss, "probs": probs}


def grpo(logits, actions, rewards, temperature=1.0, std_eps=1e-6, rec=None):
    rec = rec or Steps()
    scaled = logits / temperature
    probs = F.softmax(scaled, dim=-1)
    rec("softmax", logits=logits, scaled=scaled, probs=probs)
    ap = probs.gather(1, actions.unsqueeze(1)).squeeze(1)
    lp = ap.clamp_min(1e-12).log()
    rec("log_probs", actions=actions, action_probs=ap, log_probs=lp)
    mean = rewards.mean()
    std = rewards.std(unbiased=False)
    rec("group_stats", rewards=rewards, group_mean=mean, group_std=std)
    adv = (rewards - mean) / (std + std_eps)
    rec("advantages", rewards=rewards, advantages=adv)
    loss = -(lp * adv).mean()
    rec("loss", loss=loss)
    return {"loss": loss, "advantages": adv, "log_probs": lp, "group_mean": mean, "group_std": std}


def ppo_clip(logits_new, logits_old, actions, advantages, eps=0.2, temperature=1.0, rec=None):
    new, old, adv = logits_new, logits_old, advantages
    rec = rec or Steps()
    idx = actions.unsqueeze(1)
    lpn = F.log_softmax(new / temperature, dim=-1).gather(1, idx).squeeze(1)
    lpo = F.log_softmax(old / temperature, dim=-1).gather(1, idx).squeeze(1)
    rec("log_probs", logp_new=lpn, logp_old=lpo)
    ratio = torch.exp(lpn - lpo)
    rec("ratio", ratio=ratio)
    clipped = torch.clamp(ratio, 1.0 - eps, 1.0 + eps)
    rec("clip", clipped=clipped)
    s1, s2 = ratio * adv, clipped * adv
    rec("surrogates", surr1=s1, surr2=s2)
    obj = torch.min(s1, s2)
    rec("objective", objective=obj)
    loss = -obj.mean()
    rec("loss", loss=loss)
    return {"loss": loss, "ratio": ratio, "clipped_ratio": clipped, "objective": obj}


def preference_loss(chosen, rejected, beta=1.0, rec=None):
    rec = rec or Steps()
    margin = chosen - rejected
    rec("margin", reward_chosen=chosen, reward_rejected=rejected, margin=margin)
    scaled = beta * margin
    rec("scaled", margin=margin, scaled=scaled)
    prob = torch.sigmoid(scaled)
    rec("sigmoid", scaled=scaled, prob_preferred=prob)
    loss = -F.logsigmoid(scaled).mean()
    acc = (chosen > rejected).float().mean()
    rec("loss", loss=loss, accuracy=acc)
    return {"loss": loss, "prob_preferred": prob, "margin": margin, "accuracy": acc}


PPO_LESSON = {"logits_new": torch.tensor([[2.0, 1.0, 0.0], [0.0, 1.0, 2.0]]),
              "logits_old": torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]),
              "actions": torch.tensor([0, 2]), "advantages": torch.tensor([1.0, -1.0])}


def rl_cases():
    logits = rand(6, 4, seed=22, scale=1.5)
    actions = torch.tensor([0, 3, 1, 1, 2, 0])
    rewards = torch.tensor([1.0, -0.5, 2.0, 0.0, 0.25, -1.0])
    inputs = {"logits": logits, "actions": actions, "rewards": rewards}
    case("policy_gradient_mean", "rl:Edu-PolicyGradient", {}, inputs, policy_gradient(logits, actions, rewards))
    case("policy_gradient_none_t05", "rl:Edu-PolicyGradient", {"baseline": "none", "temperature": 0.5}, inputs,
         policy_gradient(logits, actions, rewards, "none", 0.5))
    rec = Steps()
    out = policy_gradient(logits, actions, rewards, rec=rec)
    case("policy_gradient_verbose", "rl:Edu-PolicyGradient", {}, inputs, out, rec)

    case("grpo_default", "rl:Edu-GRPO", {}, inputs, grpo(logits, actions, rewards))
    case("grpo_t2_eps", "rl:Edu-GRPO", {"temperature": 2.0, "std_eps": 0.1}, inputs,
         grpo(logits, actions, rewards, 2.0, 0.1))
    same = torch.full((6,), 0.5)
    case("grpo_equal_rewards", "rl:Edu-GRPO", {}, {"logits": logits, "actions": actions, "rewards": same},
         grpo(logits, actions, same))
    rec = Steps()
    out = grpo(logits, actions, rewards, rec=rec)
    case("grpo_verbose", "rl:Edu-GRPO", {}, inputs, out, rec)

    case("ppo_clip_lesson", "rl:Edu-PPOClip", {}, PPO_LESSON, ppo_clip(**PPO_LESSON))
    old = logits + 0.4 * rand(6, 4, seed=23)
    adv = rand(6, seed=24)
    pin = {"logits_new": logits, "logits_old": old, "actions": actions, "advantages": adv}
    case("ppo_clip_eps01_t07", "rl:Edu-PPOClip", {"clip_epsilon": 0.1, "temperature": 0.7}, pin,
         ppo_clip(logits, old, actions, adv, 0.1, 0.7))
    case("ppo_clip_eps0", "rl:Edu-PPOClip", {"clip_epsilon": 0.0}, pin, ppo_clip(logits, old, actions, adv, 0.0))
    rec = Steps()
    out = ppo_clip(logits, old, actions, adv, rec=rec)
    case("ppo_clip_verbose", "rl:Edu-PPOClip", {}, pin, out, rec)

    chosen = rand(5, seed=25)
    rejected = rand(5, seed=26)
    prefs = {"reward_chosen": chosen, "reward_rejected": rejected}
    case("preference_loss_default", "rl:Edu-PreferenceLoss", {}, prefs, preference_loss(chosen, rejected))
    big = {"reward_chosen": chosen * 40, "reward_rejected": rejected * 40}
    case("preference_loss_beta3_large_margins", "rl:Edu-PreferenceLoss", {"beta": 3.0}, big,
         preference_loss(chosen * 40, rejected * 40, 3.0))
    case("preference_loss_beta0", "rl:Edu-PreferenceLoss", {"beta": 0.0}, prefs, preference_loss(chosen, rejected, 0.0))
    rec = Steps()
    out = preference_loss(chosen, rejected, rec=rec)
    case("preference_loss_verbose", "rl:Edu-PreferenceLoss", {}, prefs, out, rec)


def examples():
    # examples/edu-rl-ppo-clip: the lesson's two states, wired from TensorInput nodes.
    out = ppo_clip(**PPO_LESSON)
    CASES.append({"name": "example_edu_rl_ppo_clip", "node": "example", "params": {"path": "edu-rl-ppo-clip"},
                  "inputs": {}, "outputs": {f"ppo.{k}": tensor_json(v) for k, v in out.items()}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"))
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    column_stats_cases()
    decision_tree_cases()
    ffn_cases()
    knn_cases()
    linear_regression_cases()
    logistic_regression_cases()
    sliding_window_cases()
    svm_cases()
    token_embedding_cases()
    vector_similarity_cases()
    rl_cases()
    examples()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "edu_foundations.json")
    with open(path, "w") as f:
        json.dump({"torch_version": torch.__version__, "cases": CASES}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(CASES)} cases -> {path}")


if __name__ == "__main__":
    main()
