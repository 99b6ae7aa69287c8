"""Deep RKM classifier paper, Table 2 trend (and Table 3 pattern) on the bundled MNIST (5,000 digits).

Train on N stratified digits, test on the rest; 1 level (s = 6) vs 2 levels (3+3)
vs 3 levels (2+2+2), linear LS-SVM head (p binary deep models), eta = 1,
lambda = 0.5, at most 100 iterations, smoother width by leave-one-out. Baselines
on the same splits: an RBF LS-SVM (median-heuristic width, lambda chosen by its
closed-form LOO error) and scikit-learn's MLPClassifier (one hidden layer of 10
ReLU units, as in the paper). ``--uci`` adds breast cancer, wine and digits.

Jobs (one per split and model) run in parallel processes (``--jobs``).

On the full MNIST files, ``benchmarks/papers/drkm_table2.py`` and ``drkm_table3.py`` run the paper's
protocol (held-out test digits, paired depth test); docs/papers.md quotes them.

Usage: python benchmarks/drkm_classifier_mnist.py --sizes 50 100 250 500 1000 --seeds 10 --jobs 16
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd

PAPER_T2 = {  # N -> (1 level, 2 levels, 3 levels) mean (std) accuracy %
    50: ("57.27 (5.75)", "61.05 (1.24)", "61.02 (1.23)"),
    100: ("59.76 (4.51)", "65.97 (1.03)", "65.64 (1.70)"),
    250: ("71.24 (5.74)", "75.74 (0.50)", "75.69 (0.49)"),
    500: ("75.15 (7.47)", "81.11 (1.22)", "81.35 (0.43)"),
    1000: ("80.59 (7.64)", "85.29 (0.45)", "85.29 (0.69)"),
}
DEPTHS = {"1 level (6)": (6,), "2 levels (3+3)": (3, 3), "3 levels (2+2+2)": (2, 2, 2)}


def _split(X, y, N, seed):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, train_size=N, stratify=y, random_state=seed)


def _lssvm(Xtr, ytr):
    import torch

    from kppca.kernels import RBF
    from kppca.preimage import median_heuristic_bandwidth
    from kppca.rkm import LSSVMClassifier

    bw = median_heuristic_bandwidth(torch.as_tensor(Xtr))
    best = None
    for lam in (1e-3, 1e-2, 0.1, 0.5, 1.0):
        m = LSSVMClassifier(RBF(bw), ridge=lam).fit(Xtr, ytr)
        loo = float((m.loo_residuals_ ** 2).mean())
        if best is None or loo < best[0]:
            best = (loo, m)
    return best[1]


def job(args):
    dataset, N, seed, model = args
    X, y = load(dataset)
    Xtr, Xte, ytr, yte = _split(X, y, N, seed)
    t = time.perf_counter()
    if model in DEPTHS:
        from kppca.rkm import DeepRKMClassifier

        m = DeepRKMClassifier(DEPTHS[model], eta=1.0, ridge=0.5, max_iter=100, random_state=seed).fit(Xtr, ytr)
    elif model == "LS-SVM (RBF)":
        m = _lssvm(Xtr, ytr)
    else:
        from sklearn.neural_network import MLPClassifier

        m = MLPClassifier(hidden_layer_sizes=(10,), max_iter=2000, random_state=seed).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    return {"dataset": dataset, "N": N, "seed": seed, "model": model,
            "accuracy": float((m.predict(Xte) == yte).mean()), "fit_s": fit_s}


def load(dataset):
    if dataset == "mnist":
        from kppca.datasets import load_mnist

        return load_mnist()
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    X, y = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
            "digits": datasets.load_digits}[dataset](return_X_y=True)
    return StandardScaler().fit_transform(X), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 250, 500, 1000])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--uci", action="store_true")
    ap.add_argument("--uci-size", type=int, default=100)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    models = list(DEPTHS) + ["LS-SVM (RBF)", "MLP (10)"]
    tasks = [("mnist", N, s, m) for N in args.sizes for s in range(args.seeds) for m in models]
    if args.uci:
        tasks += [(d, args.uci_size, s, m) for d in ("breast_cancer", "wine", "digits")
                  for s in range(args.seeds) for m in models]
    tasks.sort(key=lambda t: -t[1])  # largest first for load balance
    with ProcessPoolExecutor(args.jobs) as ex:
        rows = list(ex.map(job, tasks))
    df = pd.DataFrame(rows)
    if args.out:
        df.to_csv(args.out, index=False)
    g = df.groupby(["dataset", "N", "model"]).agg(mean=("accuracy", "mean"), std=("accuracy", "std"),
                                                   fit_s=("fit_s", "mean")).reset_index()
    g["acc % (std)"] = [f"{100 * m:.2f} ({100 * s:.2f})" for m, s in zip(g["mean"], g["std"])]
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(g.pivot_table(index=["dataset", "N"], columns="model", values="acc % (std)", aggfunc="first").to_string())
        print(g.pivot_table(index=["dataset", "N"], columns="model", values="fit_s").round(2).to_string())
        print("paper Table 2 (MNIST, 1 / 2 / 3 levels):")
        for N, v in PAPER_T2.items():
            print(f"  N={N}: " + " | ".join(v))


if __name__ == "__main__":
    main()
