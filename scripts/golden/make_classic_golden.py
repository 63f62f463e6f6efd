#!/usr/bin/python3
"""Reference values for the data and classical-ML nodes -> tests/golden/classic.json.

scikit-learn is not installable on Debian 12 here (python3-sklearn's
dependencies are broken), so the references are computed another way:

* Toy data and splits: scikit-learn's algorithms (make_moons, make_circles,
  make_blobs, make_classification, train_test_split with and without
  stratify), restated below line for line on numpy's own legacy RandomState.
  The C++ code reimplements MT19937 and numpy's draws; these values come from
  numpy itself, so they check that the two agree draw for draw.
* KNN: brute force in numpy (all distances, stable sort, vote).
* LogisticRegression: the same objective (C * summed log loss + half the
  squared weights, intercepts free) solved by Newton's method on the exact
  Hessian (torch.autograd), not by L-BFGS as the C++ code does.
* DecisionTreeClassifier: a plain recursive CART in Python (gini, columns in
  order, thresholds halfway between distinct values).

Run with Debian's interpreter: /usr/bin/python3 scripts/golden/make_classic_golden.py
"""
import json
import math
import os

import numpy as np
import torch

torch.set_default_dtype(torch.float64)


# --- scikit-learn's generators, restated on numpy.random.RandomState ---------

def util_shuffle(rng, *arrays):
    idx = np.arange(arrays[0].shape[0])
    rng.shuffle(idx)
    return [a[idx] for a in arrays]


def make_moons(n, noise, seed):
    rng = np.random.RandomState(seed)
    n_out = n // 2
    n_in = n - n_out
    ox = np.cos(np.linspace(0, np.pi, n_out))
    oy = np.sin(np.linspace(0, np.pi, n_out))
    ix = 1 - np.cos(np.linspace(0, np.pi, n_in))
    iy = 1 - np.sin(np.linspace(0, np.pi, n_in)) - 0.5
    X = np.vstack([np.append(ox, ix), np.append(oy, iy)]).T
    y = np.hstack([np.zeros(n_out, dtype=np.intp), np.ones(n_in, dtype=np.intp)])
    X, y = util_shuffle(rng, X, y)
    X += rng.normal(scale=noise, size=X.shape)
    return X, y


def make_circles(n, noise, factor, seed):
    rng = np.random.RandomState(seed)
    n_out = n // 2
    n_in = n - n_out
    lo = np.linspace(0, 2 * np.pi, n_out, endpoint=False)
    li = np.linspace(0, 2 * np.pi, n_in, endpoint=False)
    X = np.vstack([np.append(np.cos(lo), np.cos(li) * factor), np.append(np.sin(lo), np.sin(li) * factor)]).T
    y = np.hstack([np.zeros(n_out, dtype=np.intp), np.ones(n_in, dtype=np.intp)])
    X, y = util_shuffle(rng, X, y)
    X += rng.normal(scale=noise, size=X.shape)
    return X, y


def make_blobs(n, centers, std, seed):
    rng = np.random.RandomState(seed)
    c = rng.uniform(-10.0, 10.0, size=(centers, 2))
    per = [n // centers] * centers
    for i in range(n % centers):
        per[i] += 1
    X = np.empty((n, 2))
    y = np.empty((n,), dtype=int)
    start = 0
    for i, k in enumerate(per):
        X[start:start + k] = rng.normal(loc=c[i], scale=std, size=(k, 2))
        y[start:start + k] = i
        start += k
    X, y = util_shuffle(rng, X, y)
    return X, y


def make_classification(n, flip_y, seed):
    # n_features=2, n_informative=2, n_redundant=0, n_repeated=0, n_classes=2,
    # n_clusters_per_class=1, class_sep=1, hypercube=True, shift=0, scale=1.
    rng = np.random.RandomState(seed)
    n_clusters = 2
    per = [int(n * 0.5) for _ in range(n_clusters)]
    for i in range(n - sum(per)):
        per[i % n_clusters] += 1
    X = np.zeros((n, 2))
    y = np.zeros(n, dtype=int)
    # _generate_hypercube: sample_without_replacement(4, 2) is permutation(4)[:2] for this ratio.
    out = rng.permutation(4)[:2].astype(">u4")
    centroids = np.unpackbits(out.view(">u1")).reshape((-1, 32))[:, -2:].astype(float)
    centroids *= 2.0
    centroids -= 1.0
    X[:, :2] = rng.standard_normal(size=(n, 2))
    stop = 0
    for k, centroid in enumerate(centroids):
        start, stop = stop, stop + per[k]
        y[start:stop] = k % 2
        X_k = X[start:stop, :2]
        A = 2 * rng.uniform(size=(2, 2)) - 1
        X_k[...] = np.dot(X_k, A)
        X_k += centroid
    flip_mask = rng.uniform(size=n) < flip_y
    y[flip_mask] = rng.randint(2, size=flip_mask.sum())
    X += 0.0
    X *= 1.0
    X, y = util_shuffle(rng, X, y)
    indices = np.arange(2)
    rng.shuffle(indices)
    X[:, :] = X[:, indices]
    return X, y


# --- splits -------------------------------------------------------------------

def train_test_split(n, test_size, seed):
    n_test = math.ceil(test_size * n)
    n_train = n - n_test
    perm = np.random.RandomState(seed).permutation(n)
    return perm[n_test:n_test + n_train].tolist(), perm[:n_test].tolist()


def approximate_mode(class_counts, n_draws, rng):
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        values = np.sort(np.unique(remainder))[::-1]
        for value in values:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            inds = rng.choice(inds, size=add_now, replace=False)
            floored[inds] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


def stratified_split(labels, test_size, seed):
    n = len(labels)
    n_test = math.ceil(test_size * n)
    n_train = n - n_test
    classes, y_indices = np.unique(np.array(labels), return_inverse=True)
    class_counts = np.bincount(y_indices)
    class_indices = np.split(np.argsort(y_indices, kind="mergesort"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = approximate_mode(class_counts, n_train, rng)
    t_i = approximate_mode(class_counts - n_i, n_test, rng)
    train, test = [], []
    for i in range(len(classes)):
        perm = rng.permutation(class_counts[i])
        idx = class_indices[i].take(perm, mode="clip")
        train.extend(idx[:n_i[i]])
        test.extend(idx[n_i[i]:n_i[i] + t_i[i]])
    return rng.permutation(train).tolist(), rng.permutation(test).tolist()


# --- models -------------------------------------------------------------------

def knn(x_train, y_train, x_query, k, weights, metric, n_classes):
    a = x_query[:, None, :] - x_train[None, :, :]
    d = np.abs(a).sum(-1) if metric == "manhattan" else np.sqrt((a * a).sum(-1))
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    nd = np.take_along_axis(d, order, 1)
    proba = np.zeros((x_query.shape[0], n_classes))
    for i in range(x_query.shape[0]):
        if weights == "distance":
            w = (nd[i] == 0).astype(float) if (nd[i] == 0).any() else 1.0 / nd[i]
        else:
            w = np.ones(k)
        for j in range(k):
            proba[i, y_train[order[i, j]]] += w[j]
    proba /= proba.sum(1, keepdims=True)
    return proba


def logistic_newton(x, y, n_classes, C):
    x = torch.tensor(x)
    y = torch.tensor(y)
    n, f = x.shape
    rows = 1 if n_classes == 2 else n_classes

    def objective(theta):
        w = theta[:rows * f].reshape(rows, f)
        b = theta[rows * f:]
        z = x @ w.T + b
        if n_classes == 2:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z[:, 0], y.double(), reduction="sum")
        else:
            loss = torch.nn.functional.cross_entropy(z, y, reduction="sum")
        return C * loss + 0.5 * (w * w).sum()

    theta = torch.zeros(rows * f + rows)
    for _ in range(100):
        g = torch.autograd.functional.jacobian(objective, theta)
        h = torch.autograd.functional.hessian(objective, theta)
        step = torch.linalg.pinv(h) @ g
        theta = theta - step
        if step.abs().max() < 1e-13:
            break
    w = theta[:rows * f].reshape(rows, f)
    b = theta[rows * f:]
    return w, b


def gini(counts):
    n = counts.sum()
    return 1.0 - ((counts / n) ** 2).sum()


def cart(x, y, n_classes, max_depth, depth=0):
    x32 = x.astype(np.float32)
    counts = np.bincount(y, minlength=n_classes).astype(float)
    node = {"counts": counts}
    if depth >= max_depth or len(y) < 2 or gini(counts) <= 1e-7:
        return node
    best = None
    for feat in range(x.shape[1]):
        order = np.argsort(x32[:, feat], kind="stable")
        v = x32[order, feat]
        for p in range(len(y) - 1):
            if v[p + 1] <= v[p] + 1e-7:
                continue
            left = np.bincount(y[order[:p + 1]], minlength=n_classes).astype(float)
            right = counts - left
            proxy = (left ** 2).sum() / (p + 1) + (right ** 2).sum() / (len(y) - p - 1)
            if best is None or proxy > best[0]:
                t = float(v[p]) / 2.0 + float(v[p + 1]) / 2.0
                if t == float(v[p + 1]):
                    t = float(v[p])
                best = (proxy, feat, t)
    if best is None:
        return node
    _, feat, t = best
    m = x32[:, feat] <= t
    node.update(feature=feat, threshold=t, left=cart(x[m], y[m], n_classes, max_depth, depth + 1),
                right=cart(x[~m], y[~m], n_classes, max_depth, depth + 1))
    return node


def cart_predict(node, row):
    while "feature" in node:
        node = node["left"] if np.float32(row[node["feature"]]) <= node["threshold"] else node["right"]
    return int(np.argmax(node["counts"]))


def main():
    out = {}
    data = {
        "moons": make_moons(200, 0.1, 42),
        "moons_odd": make_moons(101, 0.3, 7),
        "circles": make_circles(200, 0.1, 0.5, 42),
        "circles_odd": make_circles(77, 0.05, 0.3, 123),
        "blobs": make_blobs(200, 3, 0.5, 42),
        "blobs_odd": make_blobs(101, 4, 1.5, 9),
        "classification": make_classification(200, 0.1, 42),
        "classification_odd": make_classification(75, 0.3, 3),
    }
    params = {
        "moons": {"kind": "moons", "n_samples": 200, "noise": 0.1, "seed": 42},
        "moons_odd": {"kind": "moons", "n_samples": 101, "noise": 0.3, "seed": 7},
        "circles": {"kind": "circles", "n_samples": 200, "noise": 0.1, "factor": 0.5, "seed": 42},
        "circles_odd": {"kind": "circles", "n_samples": 77, "noise": 0.05, "factor": 0.3, "seed": 123},
        # SyntheticDataset's blobs use cluster_std = max(0.1, 5 * noise).
        "blobs": {"kind": "blobs", "n_samples": 200, "noise": 0.1, "centers": 3, "seed": 42},
        "blobs_odd": {"kind": "blobs", "n_samples": 101, "noise": 0.3, "centers": 4, "seed": 9},
        "classification": {"kind": "classification", "n_samples": 200, "noise": 0.1, "seed": 42},
        "classification_odd": {"kind": "classification", "n_samples": 75, "noise": 0.3, "seed": 3},
    }
    out["datasets"] = {k: {"params": params[k], "x": X.tolist(), "y": y.tolist()} for k, (X, y) in data.items()}

    strat_labels = ["a"] * 30 + ["b"] * 12 + ["c"] * 7
    np.random.RandomState(0).shuffle(strat_labels)
    out["splits"] = [
        {"n": 200, "test_size": 0.2, "seed": 42, "split": train_test_split(200, 0.2, 42)},
        {"n": 101, "test_size": 0.25, "seed": 3, "split": train_test_split(101, 0.25, 3)},
    ]
    out["stratified"] = [
        {"labels": strat_labels, "test_size": 0.3, "seed": 5, "split": stratified_split(strat_labels, 0.3, 5)},
        {"labels": [str(v) for v in data["blobs"][1].tolist()], "test_size": 0.2, "seed": 42,
         "split": stratified_split([str(v) for v in data["blobs"][1].tolist()], 0.2, 42)},
    ]

    # Models on splits of the generated data (features as the nodes hand them on: float32).
    def split_of(name, seed=42):
        X, y = data[name]
        X = X.astype(np.float32).astype(np.float64)
        tr, te = train_test_split(len(y), 0.2, seed)
        return X[tr], y[tr], X[te], y[te]

    knn_cases = []
    for name, k, weights, metric in [("moons", 5, "uniform", "minkowski"), ("blobs_odd", 7, "distance", "euclidean"),
                                     ("circles", 4, "uniform", "manhattan")]:
        xtr, ytr, xte, yte = split_of(name)
        n_classes = int(data[name][1].max()) + 1
        proba = knn(xtr, ytr, xte, k, weights, "manhattan" if metric == "manhattan" else "euclidean", n_classes)
        knn_cases.append({"dataset": name, "n_neighbors": k, "weights": weights, "metric": metric,
                          "probabilities": proba.tolist(), "predictions": np.argmax(proba, 1).tolist()})
    out["knn"] = knn_cases

    logistic_cases = []
    for name, C in [("moons", 1.0), ("blobs", 1.0), ("classification_odd", 0.1)]:
        xtr, ytr, xte, yte = split_of(name)
        n_classes = int(data[name][1].max()) + 1
        w, b = logistic_newton(xtr, ytr, n_classes, C)
        z = torch.tensor(xte) @ w.T + b
        if n_classes == 2:
            p1 = torch.sigmoid(z[:, 0])
            proba = torch.stack([1 - p1, p1], 1)
        else:
            proba = torch.softmax(z, 1)
        logistic_cases.append({"dataset": name, "C": C, "coef": w.tolist(), "intercept": b.tolist(),
                               "probabilities": proba.tolist()})
    out["logistic"] = logistic_cases

    tree_cases = []
    for name, depth in [("moons", 3), ("blobs_odd", 4)]:
        xtr, ytr, xte, yte = split_of(name)
        n_classes = int(data[name][1].max()) + 1
        tree = cart(xtr, ytr, n_classes, depth)
        tree_cases.append({"dataset": name, "max_depth": depth,
                           "predictions": [cart_predict(tree, r) for r in xte]})
    out["tree"] = tree_cases

    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "classic.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
