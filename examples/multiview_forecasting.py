"""Multi-view kernel PCA forecasting (RKM): sum of sines and the Santa Fe laser.

Two-view non-linear auto-regression (view X: lag window, view Y: next value),
100-step recursive forecasts:

* sum of two sines, p = 40, s = 4, linear kernels: primal and dual, eig and
  Stiefel, all exact; without the rescaling ``U = U~ Lam^{1/2}`` the forecast fails
  (the multi-view paper's Fig. 7 ablation);
* Santa Fe laser (train 1,000 / test 100), p = 70, s = 144: dual with the exact RBF
  kernel (bandwidth 2.1856) and primal with random Fourier features.

Needs the ``rkm`` extra (reservoirpy bundles the Santa Fe series; geoopt for the Stiefel solver):
from the source tree, ``pip install ".[rkm]"``.

Prints the forecast MSE (standardized and raw scale) and saves a figure. Run::

    python examples/multiview_forecasting.py --out multiview_forecasting.png   # --rff-features 1000: faster
"""

from __future__ import annotations

import argparse
import os
import sys

import matplotlib

if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    matplotlib.use("Agg")  # headless: render to a file only

import matplotlib.pyplot as plt
import numpy as np

from kppca.datasets import load_santafe, sum_of_sines
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF
from kppca.plotting import save_figure
from kppca.rkm import NARForecaster, plot_forecasts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="multiview_forecasting.png", help="figure path (default: %(default)s)")
    parser.add_argument("--rff-features", type=int, default=5000,
                        help="random Fourier features for the primal SantaFe model (the paper's; default %(default)s)")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)

    x = sum_of_sines()
    train, test = x[:400], x[400 : 400 + args.steps]
    sines = {}
    for label, kw in {
        "primal eig": dict(form="primal"),
        "dual eig": dict(form="dual"),
        "dual Stiefel": dict(form="dual", solver="stiefel", random_state=0),
        "primal, no rescaling": dict(form="primal", rescale=False),
    }.items():
        sines[label] = NARForecaster(40, 4, **kw).fit(train).forecast(args.steps)
    print("sum of sines, p = 40, s = 4, linear kernels: 100-step MSE")
    for label, f in sines.items():
        print(f"  {label:22s} {np.mean((f - test) ** 2):.3g}")

    s_train, s_test = load_santafe(1000, args.steps)
    sd = s_train.std(ddof=1)
    santafe = {
        "dual, exact RBF": NARForecaster(70, 144, kernel_x=RBF(2.1856), form="dual").fit(s_train).forecast(args.steps),
        f"primal, {args.rff_features} RFF": NARForecaster(
            70, 144, kernel_x=RandomFourierFeatures(2.1856, args.rff_features, random_state=0), form="primal"
        ).fit(s_train).forecast(args.steps),
    }
    print("Santa Fe laser, p = 70, s = 144: 100-step MSE (standardized / raw)")
    for label, f in santafe.items():
        print(f"  {label:22s} {np.mean(((f - s_test) / sd) ** 2):.4f} / {np.mean((f - s_test) ** 2):.1f}")

    fig, axes = plt.subplots(2, 1, figsize=(9, 6))
    plot_forecasts(train, test, sines, ax=axes[0], title="Sum of sines (linear kernels)")
    plot_forecasts(s_train, s_test, santafe, ax=axes[1], title="Santa Fe laser")
    fig.tight_layout()
    save_figure(fig, args.out)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
