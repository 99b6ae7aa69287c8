"""Decision regions of the deep RKM classifier on two moons (1 vs 2 KPCA levels) next to an RBF LS-SVM.

The one-level model converges (projected gradient, 200 iterations at most; it stops earlier). The two-level
model does not reach the gradient criterion ``|grad| <= tol max(1, |f|)`` in any affordable number of steps:
its objective creeps along a flat valley (20.1623 after 300 iterations, still falling by about 1e-6 of itself
per step; no convergence in 1,000 iterations at tol 1e-6, nor in 300 at tol 1e-4), while its test accuracy
stays 0.988 from 40 to 1,000 iterations (measured). So it stops at ``max_iter=40`` on purpose, the script says
so, and the ConvergenceWarning that DeepRKMClassifier rightly gives for that fit is caught.

Run:  python examples/deep_rkm_two_moons.py [--out deep_rkm_two_moons.png]
"""

from __future__ import annotations

import argparse
import os

import matplotlib

if not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning

from kppca.kernels import RBF
from kppca.rkm import DeepRKMClassifier, LSSVMClassifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="deep_rkm_two_moons.png")
    args = parser.parse_args()
    X, y = make_moons(200, noise=0.15, random_state=0)
    Xtr, ytr, Xte, yte = X[:120], y[:120], X[120:], y[120:]
    models = {
        "deep RKM, 1 level (s=4)": DeepRKMClassifier((4,), kernel=RBF(0.5), max_iter=200, random_state=0),
        "deep RKM, 2 levels (2+2)": DeepRKMClassifier((2, 2), kernel=RBF(0.5), max_iter=40, random_state=0),
        "LS-SVM (RBF 0.5)": LSSVMClassifier(RBF(0.5), ridge=0.1),
    }
    g = np.linspace(-1.7, 2.7, 120), np.linspace(-1.2, 1.7, 90)
    G = np.column_stack([a.ravel() for a in np.meshgrid(*g)])
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, (name, m) in zip(axes, models.items()):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            m.fit(Xtr, ytr)
        if any(issubclass(w.category, ConvergenceWarning) for w in caught):  # the two-level model (docstring)
            print(f"{name}: stopped at max_iter={m.max_iter} before the gradient criterion, on purpose (a flat "
                  "valley: up to 1,000 iterations leave the test accuracy as it is)")
        for w in caught:  # anything else is shown as usual
            if not issubclass(w.category, ConvergenceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        Z = m.decision_function(G).reshape(len(g[1]), len(g[0]))
        ax.contourf(g[0], g[1], Z, levels=20, cmap="RdBu", alpha=0.6)
        ax.contour(g[0], g[1], Z, levels=[0], colors="k")
        ax.scatter(*Xtr.T, c=ytr, cmap="RdBu", edgecolor="k", s=18)
        acc = m.score(Xte, yte)
        ax.set_title(f"{name}\ntest accuracy {acc:.2f}")
        print(f"{name}: test accuracy {acc:.3f}")
    fig.tight_layout()
    fig.savefig(args.out, dpi=80)


if __name__ == "__main__":
    main()
