"""Which data-derived default width: the median heuristic or scikit-learn's ``gamma="scale"``?

Held-out error of the estimators whose default kernel is RBF, with the width from each
rule (:mod:`kppca.kernels.bandwidth`) and the old fixed default 1.0, on the bundled data:

* MNIST (5,000 bundled digits): ``LSSVMClassifier`` trained on 2,000, tested on the 3,000 others;
* two moons (noise 0.2): ``LSSVMClassifier``, 300 train / 1,000 test;
* a noisy sine in 3-D: ``LSSVMRegressor``, 200 train / 1,000 test (R^2).

Usage::

    python benchmarks/kernel_width_rules.py
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.datasets import make_moons
from sklearn.metrics import r2_score

from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.rkm import LSSVMClassifier, LSSVMRegressor


def _widths(X: np.ndarray) -> dict[str, float]:
    return {"median": RBF("median").resolve(X).bandwidth, "scale": RBF("scale").resolve(X).bandwidth, "fixed 1.0": 1.0}


def main() -> None:
    rows = []
    X, y = load_mnist()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(X))
    tr, te = order[:2000], order[2000:]
    for rule, bw in _widths(X[tr]).items():
        start = time.perf_counter()
        clf = LSSVMClassifier(kernel=RBF(bw)).fit(X[tr], y[tr])
        err = float(np.mean(clf.predict(X[te]) != y[te]))
        rows.append(("MNIST LSSVMClassifier", rule, bw, f"error {100 * err:.1f} %", time.perf_counter() - start))
    Xm, ym = make_moons(1300, noise=0.2, random_state=0)
    for rule, bw in _widths(Xm[:300]).items():
        start = time.perf_counter()
        clf = LSSVMClassifier(kernel=RBF(bw)).fit(Xm[:300], ym[:300])
        err = float(np.mean(clf.predict(Xm[300:]) != ym[300:]))
        rows.append(("moons LSSVMClassifier", rule, bw, f"error {100 * err:.1f} %", time.perf_counter() - start))
    Xs = rng.uniform(-3, 3, size=(1200, 3))
    ys = np.sin(Xs[:, 0]) + 0.1 * Xs[:, 1] + 0.1 * rng.normal(size=1200)
    for rule, bw in _widths(Xs[:200]).items():
        start = time.perf_counter()
        reg = LSSVMRegressor(kernel=RBF(bw)).fit(Xs[:200], ys[:200])
        r2 = r2_score(ys[200:], np.asarray(reg.predict(Xs[200:])))
        rows.append(("sine LSSVMRegressor", rule, bw, f"R^2 {r2:.3f}", time.perf_counter() - start))
    for task, rule, bw, result, seconds in rows:
        print(f"{task:24s} {rule:10s} bandwidth {bw:8.3g}  {result:14s} ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
