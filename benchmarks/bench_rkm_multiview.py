"""Multi-view KPCA training cost: primal vs dual, eig vs Stiefel, as n and d_f vary (the paper's Fig. 1, measured).

Data: two views of ``n`` points -- view X (10 columns, three latent factors plus noise) mapped
by ``d_f`` random Fourier features (RBF bandwidth 3), view Y (2 columns) linear -- and
``s`` components. For each (n, d_f) the four training routes are timed side by side:

* primal eig: top-``s`` eigenvectors of ``C`` (``(d_f + 2) x (d_f + 2)``),
* dual eig: top-``s`` eigenvectors of ``K`` (``n x n``),
* primal / dual Stiefel: geoopt on ``St(d_f + 2, s)`` / ``St(n, s)`` (``stiefel_method``,
  relative gradient tolerance ``--tol``, at most ``--max-iter`` steps; the iterations and whether
  they converged are printed).

The cheaper form follows the paper's rule (primal when ``n >> d_f``, dual when ``d_f >> n``);
the Stiefel route pays off only when one sweep of ``A @ H`` (``O(m^2 s)``) times the number of
iterations beats a dense eigendecomposition (``O(m^3)``): large ``m``, small ``s`` and a loose
tolerance.

Run (from the repository root)::

    python benchmarks/bench_rkm_multiview.py            # n in {500, 1000, 2000}, d_f in {100, 500, 2000}
    python benchmarks/bench_rkm_multiview.py --quick    # smoke test, meaningless timings
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kppca.features import RandomFourierFeatures
from kppca.rkm import MultiViewKPCA


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    Z = gen.normal(size=(n, 3))
    X = Z @ gen.normal(size=(3, 10)) + 0.2 * gen.normal(size=(n, 10))
    Y = Z[:, :2] + 0.1 * gen.normal(size=(n, 2))
    return X, Y


def timed(model: MultiViewKPCA, views: list[np.ndarray]) -> tuple[float, MultiViewKPCA]:
    start = time.perf_counter()
    model.fit(views)
    return time.perf_counter() - start, model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--df", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--s", type=int, default=10)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--stiefel-method", default="sgd")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.df, args.max_iter = [200], [50], 50

    print(f"s = {args.s}, Stiefel: {args.stiefel_method}, tol {args.tol:g}, max_iter {args.max_iter}")
    header = "| n | d_f | primal eig (s) | dual eig (s) | primal Stiefel (s, iters) | dual Stiefel (s, iters) | faster | max abs H diff primal/dual |"
    print(header)
    print("|" + "---|" * 8)
    for n in args.n:
        views = list(data(n))
        for d_f in args.df:
            fmap = RandomFourierFeatures(3.0, d_f, random_state=0)
            common = dict(feature_maps=[fmap, None], random_state=0)
            st = dict(solver="stiefel", tol=args.tol, max_iter=args.max_iter, stiefel_method=args.stiefel_method)
            t_pe, pe = timed(MultiViewKPCA(args.s, form="primal", **common), views)
            t_de, de = timed(MultiViewKPCA(args.s, form="dual", **common), views)
            t_ps, ps = timed(MultiViewKPCA(args.s, form="primal", **common, **st), views)
            t_ds, ds = timed(MultiViewKPCA(args.s, form="dual", **common, **st), views)
            diff = float((pe.hidden_features_ - de.hidden_features_).abs().max())
            faster = "primal" if t_pe < t_de else "dual"
            rp, rd = ps.solver_result_, ds.solver_result_
            print(
                f"| {n} | {d_f} | {t_pe:.3f} | {t_de:.3f} | {t_ps:.2f} ({rp.n_iter}{'' if rp.converged else '*'}) "
                f"| {t_ds:.2f} ({rd.n_iter}{'' if rd.converged else '*'}) | {faster} | {diff:.1e} |",
                flush=True,
            )
    print("* = stopped at max_iter before the tolerance")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
