"""``kppca sample``'s training size by measurement: FD of the exact dual model against N and dtype, and landmarks.

Same split and judge as ``generation_defaults.py`` (per seed a stratified split: 2,000 digits held
out for the judge, the other 3,000 bundled digits are the pool; the CLI's own protocol with
``--report`` also holds out every bundled digit it did not train on). Each candidate is fitted on
the first N pool digits (a stratified shuffle) with labels, as ``kppca sample`` fits, and draws
2,000 samples with the default latent and pre-image (``random_state = seed + 1``); the model's own
``random_state`` is the seed, as the CLI's ``--seed``. Reported per candidate: FD (Fréchet
feature distance to the 1,000 reference digits), confidence, effective classes, smallest class,
novelty, and over the seeds the mean FD with its standard error and the mean of the paired
differences to today's default (same split, same sample seed) with its standard error.

Candidates (``--candidates``; default: the first run's, ``dual-N{1000,2000,3000}-{f64,f32}`` and
``nys-m2000-pfit``):

* ``dual-N{1000,2000,3000}-{f64,f32}``: ``DualPPCA(30, RBF(5))`` on N digits, float64 / float32
  (``dual-N2000-f64`` is today's default of ``kppca sample``);
* ``dual-N{N}-q{Q}-bw{BW}``: the exact dual with other q and widths (``bw6.1`` is the RBF's
  "scale" rule on these digits, ``bw4.1`` 0.4x the median distance), ``-f32`` for float32;
* suffixes ``-nb{K}`` (smoother over K neighbours for samples; the default is 3) and ``-mix{K}``
  (K latent mixture components; the default is 10);
* ``nys-m{M}-fit`` / ``nys-m{M}-pfit`` (optionally ``-q{Q}-bw{BW}``): ``PrimalPPCA(30,
  feature_map=Nystroem(RBF(5), M))`` on all pool digits, with ``fit`` (keeps the inputs:
  pre-images over all of them) or with ``partial_fit`` (keeps only the landmarks and a latent
  sample: landmark pre-images).

Selection and reporting use different splits: choose with ``--seeds 10 11 12 13 14``, report
the chosen candidates and today's with ``--seeds 0 1 2 3 4 5 6 7`` (the selection splits never
decide from the reporting splits' noise). ``--held-out 1000`` holds out 1,000 digits per split
(500 train the feature network, 500 are the reference) so that N = 4,000 can be fitted: FD on
that weaker judge is comparable only between its own candidates. ``--time`` adds the
in-process time of fit + 64 digits (least of 2 runs); the command's end-to-end time is measured
from outside (``python -m kppca sample --out x.png`` A/B against today's).

Run:  python benchmarks/sample_data_size.py [--candidates ...] [--seeds 0 1 2] [--time]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings

import numpy as np
import torch
from sklearn.model_selection import train_test_split

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generation_defaults import Judge  # noqa: E402

from kppca import DualPPCA, PrimalPPCA  # noqa: E402
from kppca.datasets import load_mnist  # noqa: E402
from kppca.features import Nystroem  # noqa: E402
from kppca.kernels import RBF  # noqa: E402
from kppca.models.generation import base as generation_base  # noqa: E402
from kppca.models.generation.latent import MIXTURE_COMPONENTS  # noqa: E402

TODAY = "dual-N2000-f64"
FIRST_SET = [f"dual-N{n}-{dt}" for n in (1000, 2000, 3000) for dt in ("f64", "f32")] + ["nys-m2000-pfit"]


def options(name: str) -> tuple[str, dict, int]:
    """Split the generation suffixes off a candidate name: ``(base name, sample options, mixture components)``.

    ``-nb{K}``: the default pre-image with the smoother over K neighbours for sampled points
    (the hub correction stays at 0.1 N); ``-mix{K}``: K components of the latent mixture
    (:data:`kppca.models.generation.latent.MIXTURE_COMPONENTS`, "auto": 10 at N = 2,000).
    """
    opts, mix = {}, MIXTURE_COMPONENTS
    while (m := re.search(r"-(nb|mix)(\d+)$", name)):
        if m[1] == "nb":
            opts["n_neighbors"] = int(m[2])
        else:
            mix = int(m[2])
        name = name[: m.start()]
    return name, opts, mix


def candidate(name: str, seed: int):
    """``(model, N, fit)`` of a candidate's base name (see the module docstring)."""
    m = re.fullmatch(r"dual-N(\d+)-(f64|f32)", name)
    if m:
        dt = {"f64": "float64", "f32": "float32"}[m[2]]
        return DualPPCA(30, kernel=RBF(5.0), dtype=dt, random_state=seed), int(m[1]), "fit"
    m = re.fullmatch(r"dual-N(\d+)-q(\d+)-bw([\d.]+)(-f32)?", name)
    if m:
        dt = "float32" if m[4] else "float64"
        return DualPPCA(int(m[2]), kernel=RBF(float(m[3])), dtype=dt, random_state=seed), int(m[1]), "fit"
    m = re.fullmatch(r"nys-m(\d+)-(fit|pfit)(?:-q(\d+))?(?:-bw([\d.]+))?", name)
    if m:
        fmap = Nystroem(RBF(float(m[4] or 5.0)), n_landmarks=int(m[1]), random_state=seed)
        fit = "partial_fit" if m[2] == "pfit" else "fit"
        return PrimalPPCA(int(m[3] or 30), feature_map=fmap, random_state=seed), None, fit
    raise SystemExit(f"unknown candidate {name!r}")


def mean_se(v) -> tuple[float, float]:
    v = np.asarray(v, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", nargs="+", default=FIRST_SET)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-samples", type=int, default=2000)
    parser.add_argument("--held-out", type=int, default=2000,
                        help="digits held out per split (half train the feature network, half are the reference); "
                        "1000 leaves a pool of 4,000 for N = 4,000, with a weaker judge")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--time", action="store_true", help="also time fit + 64 digits in process (least of 2)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    names = list(dict.fromkeys([TODAY] + args.candidates))  # today's first: the paired differences need it
    res: dict[str, list[tuple[float, object]]] = {n: [] for n in names}
    print("| seed | candidate | FD | conf | eff | min % | novelty | fit (s) | fit + 64 (s) |\n"
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for seed in args.seeds:
        X, y = load_mnist(random_state=seed)
        X_pool, X_ho, y_pool, y_ho = train_test_split(X, y, test_size=args.held_out, stratify=y, random_state=seed)
        X_net, X_ref, y_net, y_ref = train_test_split(X_ho, y_ho, test_size=args.held_out // 2, stratify=y_ho,
                                                      random_state=seed)
        judge = Judge(X_net, y_net, X_ref, y_ref, X_pool)
        for name in names:
            base_name, sample_options, generation_base.MIXTURE_COMPONENTS = options(name)
            model, n, how = candidate(base_name, seed)
            Xt, yt = X_pool[:n], y_pool[:n]
            t0 = time.perf_counter()
            getattr(model, how)(Xt, yt)
            t_fit = time.perf_counter() - t0
            t_e2e = np.inf
            if args.time:
                for _ in range(2):
                    t0 = time.perf_counter()
                    m2, _, _ = candidate(base_name, seed)
                    getattr(m2, how)(Xt, yt)
                    m2.sample(64, random_state=7, **sample_options)
                    t_e2e = min(t_e2e, time.perf_counter() - t0)
            S = np.asarray(model.sample(args.n_samples, random_state=seed + 1, **sample_options), dtype=np.float64)
            fd, q = judge(S, Xt)
            res[name].append((fd, q))
            e2e = f"{t_e2e:.2f}" if args.time else ""
            print(f"| {seed} | {name} | {fd:.2f} | {q.confidence:.3f} | {q.effective_classes:.2f} | "
                  f"{100 * q.min_class_fraction:.1f} | {q.novelty_ratio:.3f} | {t_fit:.2f} | {e2e} |", flush=True)
    print(f"\nload {open('/proc/loadavg').read().split()[:3]}; seeds {' '.join(map(str, args.seeds))}\n")
    print("| candidate | mean FD ± s.e. | FD / today's | paired diff. to today's ± s.e. | conf (min) | eff (min) "
          "| min % (min) | novelty (min) |\n|---|---:|---:|---:|---:|---:|---:|---:|")
    base = np.array([fd for fd, _ in res[TODAY]])
    for name in names:
        fds = np.array([fd for fd, _ in res[name]])
        qs = [q for _, q in res[name]]
        m, se = mean_se(fds)
        d, dse = mean_se(fds - base)
        cells = [f"{np.mean(v):{f}} ({min(v):{f}})" for v, f in (
            ([q.confidence for q in qs], ".3f"), ([q.effective_classes for q in qs], ".2f"),
            ([100 * q.min_class_fraction for q in qs], ".1f"), ([q.novelty_ratio for q in qs], ".3f"))]
        print(f"| {name} | {m:.2f} ± {se:.2f} | {m / base.mean():.2f} | {d:+.2f} ± {dse:.2f} | {' | '.join(cells)} |")

if __name__ == "__main__":
    main()
