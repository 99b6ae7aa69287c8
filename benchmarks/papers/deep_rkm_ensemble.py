"""Deep RKM paper (Suykens 2017) §6.2.3: the subset ensemble on MNIST (paper: 1.28 % test error).

Submodels: :class:`~kppca.rkm.DeepLSSVMClassifier` (LS-SVM + KPCA + KPCA; RBF level 1 with the paper's
sigma^2 = 49, i.e. ``RBF(sqrt(49 / 2))`` for pixels in [0, 1]; linear levels 2 and 3 with s2 = s3 = 1;
2 forward-backward passes) on disjoint subsets of 50 digits (5 per class) of the training digits plus
as many copies with N(0, 0.5^2) noise clipped to [0, 1]; their tanh outputs combined by ridge regression
on all training digits, as the paper's overdetermined system (:class:`~kppca.rkm.SubsetEnsembleClassifier`
with ``validation_fraction=None``; its ridge chosen on a tenth of the digits left out of the combiner while
it chooses; ``--validation-fraction 0.2`` holds a part out of the submodels instead). ``--sub-ridge`` (lambda1) and ``--eta-levels`` were chosen on training digits only (docs/papers.md).

Usage::

    python benchmarks/papers/deep_rkm_ensemble.py --mnist-dir DIR [--n-train 50000] [--n-jobs 2]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import Report, add_data_arguments, load_split

from kppca.kernels import RBF
from kppca.rkm import DeepLSSVMClassifier, SubsetEnsembleClassifier

#: The paper's sigma^2 = 49 in exp(-|x - y|^2 / sigma^2) is our RBF(sqrt(49 / 2)) = exp(-|x - y|^2 / (2 bw^2)).
PAPER_KERNEL = RBF(np.sqrt(49 / 2))
PAPER_ERROR = 1.28


def build(args: argparse.Namespace) -> SubsetEnsembleClassifier:
    sub = DeepLSSVMClassifier(PAPER_KERNEL, n_components=(1, 1), ridge=args.sub_ridge,
                              eta_levels=tuple(args.eta_levels), n_passes=2)
    return SubsetEnsembleClassifier(sub, subset_size=args.subset_size, noise=args.noise, clip=(0.0, 1.0),
                                    validation_fraction=args.validation_fraction, n_jobs=args.n_jobs,
                                    batch_size=args.batch_size, progress=args.progress, random_state=args.seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_arguments(ap)
    ap.add_argument("--n-train", type=int, default=50_000, help="training digits (paper: 50,000)")
    ap.add_argument("--subset-size", type=int, default=50)
    ap.add_argument("--noise", type=float, default=0.5)
    ap.add_argument("--sub-ridge", type=float, default=1e-3, help="submodels' lambda1")
    ap.add_argument("--eta-levels", type=float, nargs=2, default=(1.0, 1.0))
    ap.add_argument("--validation-fraction", type=lambda v: None if v.lower() == "none" else float(v), default=None,
                    help="training part held out from the submodels for the combiner (default none: the combiner "
                         "fits all training digits, the submodels' own, the paper's overdetermined system)")
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    Xp, yp, Xte, yte = load_split(args)
    Xtr, ytr = Xp[: args.n_train], yp[: args.n_train]
    report = Report("deep-rkm-ensemble", args)
    t = time.perf_counter()
    model = build(args).fit(Xtr, ytr)
    fit_s = time.perf_counter() - t
    t = time.perf_counter()
    error = 100.0 * float((model.predict(Xte) != yte).mean())
    predict_s = time.perf_counter() - t
    n_sub = len(Xtr) if args.validation_fraction is None else len(Xtr) - len(model.holdout_indices_)
    print(f"{len(Xtr)} training digits ({n_sub} for the submodels + as many noisy copies), "
          f"{len(model.estimators_)} submodels, combiner ridge {model.ridge_}; fit {fit_s:.0f} s, "
          f"test {len(yte)} digits {predict_s:.0f} s")
    report.line(f"test error % (N = {len(Xtr)})", f"{PAPER_ERROR:.2f}", f"{error:.2f}", test_error=error / 100)
    report.close(test_error=round(error / 100, 5), n_submodels=len(model.estimators_), n_train=len(Xtr),
                 n_test=len(yte), fit_seconds=round(fit_s, 1), predict_seconds=round(predict_s, 1),
                 combiner_ridge=model.ridge_)


if __name__ == "__main__":
    main()
