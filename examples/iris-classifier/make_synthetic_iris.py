#!/usr/bin/python3
"""Writes synthetic_iris.csv: a stand-in for Fisher's Iris data, NOT the real measurements.

No copy of the Iris data set exists on the build machine (scikit-learn is not
installable on Debian 12 here and nothing is downloaded), so this draws 50
flowers per species from independent Gaussians with the published per-species
means and standard deviations of Iris's four measurements (cm), rounded to
0.1 cm as the original is. It has Iris's shape (150 rows, 4 features, 3
balanced classes, setosa separable, versicolor and virginica overlapping) but
not its rows. Run: /usr/bin/python3 make_synthetic_iris.py
"""
import os

import numpy as np

# species: (means, standard deviations) of sepal length, sepal width, petal length, petal width
STATS = {
    "setosa": ([5.006, 3.428, 1.462, 0.246], [0.352, 0.379, 0.174, 0.105]),
    "versicolor": ([5.936, 2.770, 4.260, 1.326], [0.516, 0.314, 0.470, 0.198]),
    "virginica": ([6.588, 2.974, 5.552, 2.026], [0.636, 0.322, 0.552, 0.275]),
}

rng = np.random.RandomState(1936)  # the year Fisher published the data
rows = []
for species, (mean, std) in STATS.items():
    x = rng.normal(mean, std, size=(50, 4)).clip(0.1, None)
    rows += [[f"{v:.1f}" for v in r] + [species] for r in x]
order = rng.permutation(len(rows))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "synthetic_iris.csv")
with open(path, "w") as f:
    f.write("sepal_length,sepal_width,petal_length,petal_width,species\n")
    for i in order:
        f.write(",".join(rows[i]) + "\n")
print("wrote", path)
