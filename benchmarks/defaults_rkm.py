"""Defaults of the shallow RKMs on the bundled datasets (issue 18, item 7).

* LS-SVM classifier on the bundled MNIST sample (5,000 digits): train on 2,000
  stratified digits, test on the other 3,000. Default (``kernel="rbf"`` =
  ``RBF(bandwidth="scale")``, resolved at fit) against the old fixed ``RBF(1.0)``, a grid of
  ``ridge`` (only ``ridge * eta`` enters the predictions, so ``eta`` is not varied:
  with ``H' = H / eta`` the dual system is ``(K + eta ridge I) H' = Y - 1 b^T``), and
  scikit-learn's ``SVC()`` with its defaults.
* KernelPCARKM: share of the centred Gram trace carried by the default 2 components
  on 2,000 digits, default width vs ``RBF(1.0)``.
* NARForecaster: 100-step forecast MSE of the defaults (lags=10, n_components=4,
  linear views) on the Santa Fe laser and the sum of sines, against a few
  alternatives.

Usage: python benchmarks/defaults_rkm.py   (about 1.5 minutes on 2 cores)

Results (2 cores, 2026-11-24): LS-SVM test error 5.0 % with the default (width 6.10),
59.7 % with RBF(1.0), 4.8-4.9 % with ridge 1e-2/1e-3, 6.1 % with ridge 1, SVC() 6.1 %;
KernelPCARKM top-2 share 0.096 (default) vs 0.001 (RBF(1.0)); NAR defaults: normalised
MSE 1.12 on Santa Fe (0.98 with lags=20), 0.000 on the sum of sines.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
import torch
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from kppca.datasets import load_mnist, load_santafe, sum_of_sines
from kppca.kernels import RBF
from kppca.rkm import KernelPCARKM, LSSVMClassifier, NARForecaster


def lssvm_mnist() -> None:
    X, y = load_mnist()
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=2000, stratify=y, random_state=0)
    print(f"MNIST bundled: train {len(Xtr)}, test {len(Xte)}")
    rows = []
    for label, est in [
        ("LSSVMClassifier() [default]", LSSVMClassifier()),
        ("LSSVMClassifier(RBF(1.0)) [old default]", LSSVMClassifier(RBF(1.0))),
        *[(f"LSSVMClassifier(ridge={r:g})", LSSVMClassifier(ridge=r)) for r in (1e-3, 1e-2, 1.0)],
    ]:
        t = time.perf_counter()
        est.fit(Xtr, ytr)
        err = 1 - est.score(Xte, yte)
        loo = float((est.loo_residuals_ ** 2).mean())
        width = getattr(est.kernel_, "bandwidth", None)
        rows.append((label, err, loo, width, time.perf_counter() - t))
    t = time.perf_counter()
    svc = SVC().fit(Xtr, ytr)
    rows.append(("sklearn SVC()", 1 - svc.score(Xte, yte), float("nan"), None, time.perf_counter() - t))
    print(f"{'model':42s} {'test error':>10s} {'LOO MSE':>8s} {'width':>6s} {'s':>5s}")
    for label, err, loo, width, sec in rows:
        w = "" if width is None else f"{width:.2f}"
        print(f"{label:42s} {100 * err:9.1f}% {loo:8.3f} {w:>6s} {sec:5.1f}")


def kpca_share() -> None:
    X, _ = load_mnist(n_samples=2000, random_state=0)
    for label, kernel in [("default 'rbf'", "rbf"), ("RBF(1.0)", RBF(1.0))]:
        m = KernelPCARKM(kernel=kernel).fit(X)
        K = m.kernel_.gram(m.X_fit_, m.X_fit_)
        M = torch.eye(len(X), dtype=K.dtype) - 1.0 / len(X)
        trace = float(torch.trace(M @ K @ M))
        share = float(m.eigenvalues_.sum()) * float(m.eta) / trace
        print(f"KernelPCARKM {label:14s} width {m.kernel_.bandwidth:6.2f}: top-2 share of the centred trace {share:.3f}")


def nar() -> None:
    train, test = load_santafe()
    series = {"santafe": (train, test)}
    s = sum_of_sines()  # 501 points: 400 to train, 100 to test (the paper's split)
    series["sum_of_sines"] = (s[:400], s[400:500])
    configs = {
        "default (lags=10, s=4, linear)": dict(),
        "lags=20": dict(lags=20),
        "n_components=8": dict(n_components=8),
        "kernel_x=RBF(3.0), s=8": dict(kernel_x=RBF(3.0), n_components=8),
        "kernel_x=RBF() ('scale'), s=8": dict(kernel_x=RBF(), n_components=8),
    }
    for name, (tr, te) in series.items():
        for label, kw in configs.items():
            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    f = NARForecaster(**kw).fit(tr).forecast(len(te))
                mse = float(np.mean((np.asarray(f) - te) ** 2) / np.var(te))
                print(f"NAR {name:13s} {label:32s} normalised MSE {mse:.3f}")
            except ValueError as exc:
                print(f"NAR {name:13s} {label:32s} {exc}")


if __name__ == "__main__":
    lssvm_mnist()
    kpca_share()
    nar()
