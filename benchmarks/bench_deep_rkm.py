"""Training time of the deep RKM classifier vs N and number of levels (bundled MNIST), and of DeepRKM vs N
(level-wise and primal reduced-set solvers, on a noisy sine).

Usage: python benchmarks/bench_deep_rkm.py [--sizes 100 250 500] [--max-iter 100] [--device cpu]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.rkm import DeepRKM, DeepRKMClassifier

LEVELS = {"1 level (6)": (6,), "2 levels (3+3)": (3, 3), "3 levels (2+2+2)": (2, 2, 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 250, 500])
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    X, y = load_mnist()
    perm = np.random.default_rng(0).permutation(len(y))
    rows = []
    for N in args.sizes:
        Xtr, ytr = X[perm[:N]], y[perm[:N]]
        for name, comps in LEVELS.items():
            t = time.perf_counter()
            m = DeepRKMClassifier(comps, max_iter=args.max_iter, random_state=0, device=args.device).fit(Xtr, ytr)
            rows.append({"model": f"DRKM classifier {name}", "N": N, "fit_s": time.perf_counter() - t,
                         "iterations": sum(mm.n_iter for mm in m.models_)})
        x = np.linspace(-10, 10, N)[:, None]
        yy = np.sin(x[:, 0]) + 0.1 * np.random.default_rng(0).normal(size=N)
        for name, kw in {"DeepRKM (7+2), level-wise, 10 passes": {},
                         "DeepRKM (7+2), primal, 50 prototypes": {"solver": "primal", "n_prototypes": 50}}.items():
            t = time.perf_counter()
            DeepRKM(kernel=RBF(0.7), n_components=(7, 2), random_state=0, device=args.device, **kw).fit(x, yy)
            rows.append({"model": name, "N": N, "fit_s": time.perf_counter() - t})
    df = pd.DataFrame(rows)
    print(df.pivot(index="model", columns="N", values="fit_s").round(2).to_string())


if __name__ == "__main__":
    main()
