"""Dual probabilistic PCA tends to kernel PCA as sigma2 -> 0 (paper §4.3–4.4).

Two moons (N = 50), RBF kernel with bandwidth 2, as in the paper. For each
q and each sigma2 (fixed, not estimated) the dual model's MAP reconstruction
``K_c A h_MAP`` is compared with the KPCA projection ``E_q E_q^T k_c`` and its
latent codes with scikit-learn's KernelPCA scores rescaled by ``sqrt(N / lam)``.
Both differences shrink linearly in sigma2; the posterior sd of ``h`` (the
model's uncertainty) vanishes with them.

Run::

    python examples/kpca_limit.py --out kpca_limit.png
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
from kppca.datasets import make_moons  # noqa: E402
from kppca.inference import kpca_limit_sweep  # noqa: E402
from kppca.kernels import RBF  # noqa: E402
from kppca.plotting import plot_latent_uncertainty, save_figure  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="kpca_limit.png", help="where to save the figure (default: %(default)s)")
    parser.add_argument("--n-samples", type=int, default=50)
    parser.add_argument("--bandwidth", type=float, default=2.0)
    parser.add_argument("--components", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    X, labels = make_moons(args.n_samples, noise=0.1, random_state=args.seed)
    kernel = RBF(args.bandwidth)
    sigma2_values = 10.0 ** -np.arange(2, 13, 2)  # 1e-2 ... 1e-12, all below lam_q / N for q <= 3 here
    table = kpca_limit_sweep(X, kernel, args.components, sigma2_values, include_ml=True)

    shown = table.assign(
        **{
            "rec_err/sigma2": table["reconstruction_error"] / table["sigma2"],
            "lat_err/sigma2": table["latent_error"] / table["sigma2"],
        }
    )
    cols = ["n_components", "sigma2", "ml", "noise_fraction", "reconstruction_error", "latent_error",
            "rec_err/sigma2", "lat_err/sigma2", "posterior_sd", "explained_variance"]
    print(f"two moons, N = {args.n_samples}, RBF bandwidth {args.bandwidth}")
    print(shown[cols].to_string(index=False, float_format=lambda v: f"{v:.3e}"))

    fig, (ax_err, ax_lat) = plt.subplots(1, 2, figsize=(11, 4.5))
    for q, block in table.groupby("n_components"):
        sweep = block[~block["ml"]]
        (line,) = ax_err.loglog(sweep["sigma2"], sweep["reconstruction_error"], "o-", label=f"reconstruction, q={q}")
        ax_err.loglog(sweep["sigma2"], sweep["latent_error"], "s--", color=line.get_color(), alpha=0.7,
                      label=f"latent codes, q={q}")
        ml = block[block["ml"]]
        ax_err.loglog(ml["sigma2"], ml["reconstruction_error"], "*", color=line.get_color(), markersize=14)
    s = np.asarray(sigma2_values)
    ax_err.loglog(s, s, ":", color="0.5", label=r"$\sigma^2$ (slope 1)")
    ax_err.set_xlabel(r"$\sigma^2$ (fixed; $\star$ = ML estimate)")
    ax_err.set_ylabel("relative distance to kernel PCA")
    ax_err.set_title("dual PPCA -> KPCA as $\\sigma^2 \\to 0$")
    ax_err.legend(fontsize="x-small")

    # Latent codes at the ML sigma2 with their 94 % credible ellipses, against the KPCA limit.
    model = DualPPCA(2, kernel=kernel).fit(X)
    plot_latent_uncertainty(model, X, c=labels, ax=ax_lat, scatter_kwargs={"cmap": "coolwarm", "s": 14})
    limit = DualPPCA(2, sigma2=1e-12, kernel=kernel).fit(X).transform(X)
    ax_lat.scatter(limit[:, 0], limit[:, 1], marker="+", color="k", s=40, linewidths=0.8, zorder=4,
                   label=r"$\sqrt{N/\lambda}\,z$ (KPCA)")
    ax_lat.legend(fontsize="x-small", loc="best")
    ax_lat.set_title(f"ML $\\sigma^2$ = {model.sigma2_:.2e}: posterior of $h$ vs KPCA")
    fig.tight_layout()
    save_figure(fig, args.out, dpi=120)
    print(f"figure saved to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
