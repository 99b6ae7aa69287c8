"""SubsetEnsembleClassifier on the bundled digits: test error against N and subset size, per combiner ridge.

For each training size N (a stratified random subset of the 5,000 bundled digits)
and subset size, the ensemble of ``LSSVMClassifier`` submodels is fitted with the
old fixed ridge (1e-3) and with the default (``ridge="loo"``: the ridge with the
fewest closed-form leave-one-out errors on the held-out part, or the members'
mean output when that errs no more; "vote" in the last column); the table gives the test error on 1,000
other digits, and the median and best submodel's test error for comparison
(the issue's target: the ensemble never worse than its median member).

Usage::

    python benchmarks/ensemble_combiner.py [--sizes 500 1000 2000 3500] [--subsets 50]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.model_selection import train_test_split

from kppca.datasets import load_mnist
from kppca.rkm import LSSVMClassifier, SubsetEnsembleClassifier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 3500])
    parser.add_argument("--subsets", type=int, nargs="+", default=[50])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    X, y = load_mnist()
    X_pool, X_test, y_pool, y_test = train_test_split(X, y, test_size=1000, stratify=y, random_state=args.seed)
    print(f"{'N':>5s} {'subset':>6s} {'members':>7s} {'median member':>13s} {'best member':>11s} "
          f"{'ridge 1e-3':>10s} {'ridge loo':>9s} {'chosen ridge':>12s} {'fit s':>6s}")
    for n in args.sizes:
        Xn, _, yn, _ = train_test_split(X_pool, y_pool, train_size=n, stratify=y_pool, random_state=args.seed)
        for size in args.subsets:
            start = time.perf_counter()
            new = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=size, random_state=args.seed).fit(Xn, yn)
            seconds = time.perf_counter() - start
            old = SubsetEnsembleClassifier(LSSVMClassifier(), subset_size=size, ridge=1e-3,
                                           random_state=args.seed).fit(Xn, yn)
            members = [1 - e.score(X_test, y_test) for e in new.estimators_]
            print(f"{n:5d} {size:6d} {len(members):7d} {np.median(members):13.3f} {min(members):11.3f} "
                  f"{1 - old.score(X_test, y_test):10.3f} {1 - new.score(X_test, y_test):9.3f} "
                  f"{'vote' if new.ridge_ is None else format(new.ridge_, '.3g'):>12s} {seconds:6.1f}", flush=True)


if __name__ == "__main__":
    main()
