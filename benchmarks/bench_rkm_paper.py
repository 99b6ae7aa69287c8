"""Deep RKM paper (Suykens 2017), the parts of issue 19: §6.2.2 classification, §6.2.3 ensemble, Table 1.

Parts (``--part``):

* ``mnist``: the LS-SVM-first deep RKM classifier (LS-SVM + KPCA + KPCA, §6.2.2) against the basic
  one-vs-all LS-SVM with the same RBF kernel and ridge, 2,000 bundled MNIST digits for training and
  the other 3,000 for testing, ``--splits`` random splits; the paper's USPS numbers (N = 2000):
  3.18 % (deep) vs 3.26 % (basic).
* ``ensemble``: :class:`~kppca.rkm.SubsetEnsembleClassifier` of small deep RKMs (subsets of 50,
  5 per class; tanh outputs, ridge combiner on a 20 % hold-out; with and without the paper's
  noisy copies N(0, 0.5^2) clipped to [0, 1]) against single models on the same 2,000/3,000
  split. With ``KPPCA_MNIST_DIR`` set the full MNIST files are used (``--n-train``/``--n-test``);
  ``benchmarks/papers/deep_rkm_ensemble.py`` runs it at the paper's scale.
* ``table1``: Table 1's model families on scikit-learn's breast cancer, wine and digits (the UCI
  pid/bld/ion/adu sets are not bundled by any package we can install offline): reduced-set deep
  RKM in the primal (1,A / 1,B / 1,C), feed-forward networks in the deep RKM objective (2,A / 2,B /
  2,C and Toeplitz 2,B,T; A: variance reward c0 = 0.1 with c_stab = 1, C: regression objective only),
  beside LSSVMClassifier, DeepLSSVMClassifier, KernelPMF and scikit-learn's MLPClassifier.
  KPCA levels of max(4, C) and max(2, C) components (C classes). Standardised features, 60/40 stratified splits, fixed hyper-parameters (no validation search:
  CPU budget), test error in % as mean (std) over ``--splits`` splits.

Usage: python benchmarks/bench_rkm_paper.py --part mnist [--splits 3]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from kppca.datasets import load_mnist
from kppca.kernels import RBF
from kppca.rkm import (
    DeepLSSVMClassifier,
    DeepRKM,
    KernelPMF,
    KPCALevel,
    LSSVMClassifier,
    LSSVMLevel,
    SubsetEnsembleClassifier,
)

# MNIST in [0, 1]: the paper's sigma^2 = 49 in exp(-|x - y|^2 / sigma^2) is our RBF(sqrt(49 / 2)).
MNIST_KERNEL = RBF(np.sqrt(49 / 2))
RIDGE_NAME = "ridge" if "ridge" in LSSVMClassifier().get_params() else "lambda_"


def _lssvm(kernel, ridge):
    return LSSVMClassifier(kernel, **{RIDGE_NAME: ridge})


def _err(model, X, y) -> float:
    return 100.0 * (1.0 - model.score(X, y))


def _timed_fit(model, X, y):
    t = time.perf_counter()
    model.fit(X, y)
    return model, time.perf_counter() - t


def _mnist(n_train: int, n_test: int, seed: int):
    if os.environ.get("KPPCA_MNIST_DIR"):
        Xtr, ytr = load_mnist(n_samples=n_train, random_state=seed, subset="train")
        Xte, yte = load_mnist(n_samples=n_test, random_state=seed, subset="test")
        return Xtr, Xte, ytr, yte
    X, y = load_mnist()
    return train_test_split(X, y, train_size=n_train, test_size=n_test, stratify=y, random_state=seed)


def part_mnist(splits: int, n_train: int, n_test: int, ridge: float, s: tuple[int, int]) -> pd.DataFrame:
    rows = []
    for k in range(splits):
        Xtr, Xte, ytr, yte = _mnist(n_train, n_test, k)
        basic, tb = _timed_fit(_lssvm(MNIST_KERNEL, ridge), Xtr, ytr)
        deep, td = _timed_fit(DeepLSSVMClassifier(MNIST_KERNEL, n_components=s, ridge=ridge, eta_levels=(1e-6, 1e-6),
                                                  n_passes=2, random_state=k), Xtr, ytr)
        rows.append(dict(split=k, basic=_err(basic, Xte, yte), deep=_err(deep, Xte, yte), t_basic=tb, t_deep=td))
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df["deep - basic"] = df["deep"] - df["basic"]
    return df


def part_ensemble(n_train: int, n_test: int, ridge: float, seed: int = 0, n_jobs: int | None = None) -> pd.DataFrame:
    Xtr, Xte, ytr, yte = _mnist(n_train, n_test, seed)
    sub = DeepLSSVMClassifier(MNIST_KERNEL, n_components=(1, 1), ridge=ridge, eta_levels=(1e-6, 1e-6), n_passes=2)
    models = {
        "LSSVMClassifier (all N)": _lssvm(MNIST_KERNEL, ridge),
        "DeepLSSVMClassifier (all N)": DeepLSSVMClassifier(MNIST_KERNEL, n_components=(10, 1), ridge=ridge,
                                                           eta_levels=(1e-6, 1e-6), random_state=0),
        "ensemble of deep RKMs (50 each)": SubsetEnsembleClassifier(sub, subset_size=50, ridge=1.0, n_jobs=n_jobs,
                                                                    random_state=0),
        "ensemble + noisy copies": SubsetEnsembleClassifier(sub, subset_size=50, ridge=1.0, noise=0.5, n_jobs=n_jobs,
                                                            random_state=0),
    }
    rows = []
    for name, model in models.items():
        model, t = _timed_fit(model, Xtr, ytr)
        n_sub = len(getattr(model, "estimators_", [])) or 1
        rows.append(dict(model=name, test_error=_err(model, Xte, yte), fit_seconds=t, submodels=n_sub))
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def _pm_targets(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    return np.where(y[:, None] == classes[None, :], 1.0, -1.0)


class _RegressionAsClassifier:
    """A DeepRKM regression on one-vs-all ±1 targets, classified by the argmax (Table 1 models 1,* and 2,*)."""

    def __init__(self, make):
        self.make = make

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.model_ = self.make().fit(X, _pm_targets(y, self.classes_))
        return self

    def score(self, X, y):
        return float(np.mean(self.classes_[np.asarray(self.model_.predict(X)).argmax(1)] == y))


#: Table 1's objectives (DeepRKM(objective=...)): B stabilised, A with the variance reward -c0 sum ||e_l||^2, C the
#: regression level alone; C0 is the smallest of the paper's tuned c0 values (0.1, 10, 1000). A is unbounded below
#: (Lam absorbs the growth of the scores): with B's c_stab = 0.01 its fits diverge (60-80 % error, some refused), so
#: A runs with the larger A_CSTAB, the stabilisation outweighing the reward (c0 / c_stab = 0.1).
VARIANTS = {"A": "variance", "B": "stabilized", "C": "regression"}
C0, CSTAB, A_CSTAB = 0.1, 0.01, 1.0


def part_table1(splits: int, max_iter: int) -> pd.DataFrame:
    data = {"breast cancer": load_breast_cancer(return_X_y=True), "wine": load_wine(return_X_y=True),
            "digits": load_digits(return_X_y=True)}
    rows = []
    for name, (X, y) in data.items():
        D, C = X.shape[1], len(np.unique(y))
        rbf = RBF(np.sqrt(D))  # standardised inputs: |x - y|^2 ~ 2 D
        s1, s2 = max(4, C), max(2, C)  # the KPCA levels must not be a bottleneck narrower than the classes
        models = {
            "LSSVMClassifier": lambda: _lssvm(rbf, 0.1),
            "DeepLSSVMClassifier": lambda: DeepLSSVMClassifier(rbf, n_components=(2, 1), ridge=0.1,
                                                               eta_levels=(1e-2, 1e-2), random_state=0),
            "KernelPMF (class rule)": lambda: KernelPMF(RBF(np.sqrt(D) / 2)),
            "MLPClassifier (20)": lambda: MLPClassifier((20,), max_iter=max_iter, random_state=0),
            **{f"1,{v} reduced set (M=100)": (lambda v=v, obj=obj: _RegressionAsClassifier(lambda: DeepRKM(
                [KPCALevel(s1, 1.0, kernel=rbf), KPCALevel(s2, 1.0), LSSVMLevel("linear", 0.1, 1.0)],
                solver="primal", n_prototypes=100, c_stab=A_CSTAB if v == "A" else CSTAB, objective=obj, c0=C0,
                max_iter=max_iter, random_state=0))) for v, obj in VARIANTS.items()},
            **{f"2,{v} feed-forward": (lambda v=v, obj=obj: _RegressionAsClassifier(lambda: DeepRKM(
                [KPCALevel(s1, 1.0), KPCALevel(s2, 1.0), LSSVMLevel("linear", 0.1, 1e-3)], solver="feedforward",
                hidden_units=(20, 10, 10), c_stab=A_CSTAB if v == "A" else CSTAB, objective=obj, c0=C0,
                max_iter=max_iter, random_state=0))) for v, obj in VARIANTS.items()},
            "2,B,T feed-forward Toeplitz": lambda: _RegressionAsClassifier(lambda: DeepRKM(
                [KPCALevel(s1, 1.0), KPCALevel(s2, 1.0), LSSVMLevel("linear", 0.1, 1e-3)], solver="feedforward",
                hidden_units=(20, 10, 10), toeplitz=True, c_stab=0.01, max_iter=max_iter, random_state=0)),
        }
        for k in range(splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=0.6, stratify=y, random_state=k)
            sc = StandardScaler().fit(Xtr)
            Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
            for mname, make in models.items():
                try:
                    model, t = _timed_fit(make(), Xtr, ytr)
                    err = _err(model, Xte, yte)
                except ValueError as exc:  # objective A is unbounded below: a diverged fit is refused
                    print(f"{name} split {k} {mname}: {exc}", flush=True)
                    t, err = float("nan"), float("nan")
                rows.append(dict(data=name, model=mname, split=k, test_error=err, seconds=t))
        print(name, "done", flush=True)
    df = pd.DataFrame(rows)
    return df.groupby(["data", "model"]).agg(error_mean=("test_error", "mean"), error_std=("test_error", "std"),
                                             seconds=("seconds", "mean")).round(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=["mnist", "ensemble", "table1"], required=True)
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=3000)
    ap.add_argument("--ridge", type=float, default=1e-3)
    ap.add_argument("--s", type=int, nargs=2, default=(10, 1))
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--n-jobs", type=int, default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    if args.part == "mnist":
        df = part_mnist(args.splits, args.n_train, args.n_test, args.ridge, tuple(args.s))
        print(df.round(3).to_markdown(index=False))
        d = df["deep - basic"]
        print(f"\ndeep - basic: {d.mean():+.3f} % (std {d.std(ddof=1):.3f}, {len(d)} splits); "
              f"basic {df['basic'].mean():.2f} %, deep {df['deep'].mean():.2f} %")
    elif args.part == "ensemble":
        print(part_ensemble(args.n_train, args.n_test, args.ridge, n_jobs=args.n_jobs).round(3).to_markdown(index=False))
    else:
        print(part_table1(args.splits, args.max_iter).to_markdown())


if __name__ == "__main__":
    main()
