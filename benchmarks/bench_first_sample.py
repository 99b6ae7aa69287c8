"""The first ``sample(64)`` after a default fit: its time and the quality of the mixture's samples.

``kppca sample`` fits ``DualPPCA(30, kernel=RBF(5))`` on 2,000 stratified MNIST digits and draws from a
Gaussian mixture fitted on the training codes (``latent="mixture"``); the mixture is fitted by the
first ``sample`` after a fit. Two mixture fits, side by side in one run:

* ``sklearn``: the previous one, scikit-learn's ``GaussianMixture`` (full covariances, k-means init,
  ``tol=1e-2``), reproduced below, which also imports ``sklearn.mixture`` on first use;
* ``torch``: :func:`kppca.models.generation.latent.fit_latent_mixture` (the same EM in torch).

Time: each variant in fresh subprocesses (so the import is counted, as a user meets it): fit, first
``sample(64)``, second ``sample(64)``; best and all of ``--repeats`` processes. Also the first
``sample(64)`` after a ``sample_kernel(64)`` (whose Cholesky factor takes the memory of the cached
``K_c``): ``sample`` must cost the same whatever ran before it. ``--before PATH`` times the previous
code too, in the same run (a tree holding its ``kppca`` package). Quality: the Fréchet
feature distance (FD) to held-out digits of ``--n-samples`` samples, for the mixture fitted with
each of ``--n-inits`` seeds of its own (0 is the one the library uses; the others measure how much
FD varies with the local optimum that EM reaches), with classifier confidence and effective
classes (the judge of ``generation_defaults.py``: nothing held out is seen by a generative model).

Run:  python benchmarks/bench_first_sample.py [--repeats 3] [--n-samples 1000] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

N_TRAIN, Q, BANDWIDTH = 2000, 30, 5.0


def sklearn_mixture(codes, n_components, random_state=0):
    """The previous fit: scikit-learn's GaussianMixture, factored in float64."""
    import numpy as np
    import torch
    from sklearn.mixture import GaussianMixture

    from kppca.models.generation.latent import LatentMixture

    M, q = codes.shape
    k = int(max(1, min(n_components, M // (5 * (q + 1)))))
    H = codes.detach().cpu().numpy().astype(np.float64)
    gm = GaussianMixture(k, covariance_type="full", reg_covar=1e-6, tol=1e-2, random_state=random_state).fit(H)
    like = dict(dtype=codes.dtype, device=codes.device)
    return LatentMixture(torch.as_tensor(gm.weights_, **like), torch.as_tensor(gm.means_, **like),
                         torch.as_tensor(np.linalg.cholesky(gm.covariances_), **like))


def use(variant: str) -> None:
    if variant == "sklearn":
        import kppca.models.generation.base as base

        base.fit_latent_mixture = sklearn_mixture


def split(seed: int = 0):
    from sklearn.model_selection import train_test_split

    from kppca.datasets import load_mnist

    X, y = load_mnist(random_state=seed)
    X_pool, X_ho, y_pool, y_ho = train_test_split(X, y, test_size=2000, stratify=y, random_state=seed)
    X_tr, _, y_tr, _ = train_test_split(X_pool, y_pool, train_size=N_TRAIN, stratify=y_pool, random_state=seed)
    return X_tr, y_tr, X_pool, X_ho, y_ho


def time_child(variant: str, kernel_first: bool) -> dict:
    X_tr, y_tr, *_ = split()  # loaded before the clock starts; sklearn.model_selection is not sklearn.mixture
    t0 = time.perf_counter()
    from kppca import DualPPCA
    from kppca.kernels import RBF

    use(variant)
    t1 = time.perf_counter()
    model = DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=0).fit(X_tr)
    t2 = time.perf_counter()
    if kernel_first:  # the exact kernel-space sample first: its factor takes K_c's memory
        model.sample_kernel(64, random_state=0)
    t3 = time.perf_counter()
    model.sample(64, random_state=0)
    t4 = time.perf_counter()
    model.sample(64, random_state=1)
    t5 = time.perf_counter()
    return {"import": t1 - t0, "fit": t2 - t1, "kernel": t3 - t2, "first": t4 - t3, "second": t5 - t4}


def quality(n_samples: int, n_inits: int) -> dict:
    from sklearn.model_selection import train_test_split

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from generation_defaults import Judge, draw

    import kppca.models.generation.base as base
    from kppca import DualPPCA
    from kppca.kernels import RBF

    X_tr, y_tr, X_pool, X_ho, y_ho = split()
    X_net, X_ref, y_net, y_ref = train_test_split(X_ho, y_ho, test_size=1000, stratify=y_ho, random_state=0)
    judge = Judge(X_net, y_net, X_ref, y_ref, X_pool)
    model = DualPPCA(Q, kernel=RBF(BANDWIDTH), random_state=0).fit(X_tr)
    torch_fit = base.fit_latent_mixture
    rows = {"floor": judge.floor}
    for variant, fit in (("sklearn", sklearn_mixture), ("torch", torch_fit)):
        for init in range(n_inits):  # the mixture's own seed: 0 is the shipped one, the others show the spread
            base.fit_latent_mixture = lambda codes, k, fit=fit, init=init: fit(codes, k, random_state=init)
            model._gen_cache().clear()  # a new mixture
            S = draw(model, n_samples, 1, {"latent": "mixture"}, ("auto", {}))
            fd, q = judge(S, X_tr)
            rows[f"{variant}, mixture seed {init}"] = {"fd": fd, "conf": q.confidence, "eff": q.effective_classes,
                                                       "min": q.min_class_fraction, "novelty": q.novelty_ratio}
    base.fit_latent_mixture = torch_fit
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-samples", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-inits", type=int, default=8,
                        help="mixture seeds scored per fit (0 is the shipped one)")
    parser.add_argument("--before", metavar="PATH", default=None,
                        help="a tree of the previous kppca (e.g. `git archive <commit> kppca | tar -x -C PATH`): "
                        "also time it, in the same run")
    parser.add_argument("--child", choices=("sklearn", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--kernel-first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child:
        print(json.dumps(time_child(args.child, args.kernel_first)))
        return
    load0 = os.getloadavg()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    # (label, mixture fit, sample_kernel first, PYTHONPATH)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [("sklearn", "sklearn", False, here), ("torch", "torch", False, here),
             ("torch, after sample_kernel(64)", "torch", True, here)]
    if args.before:
        cases += [("before (sklearn)", "sklearn", False, args.before),
                  ("before, after sample_kernel(64)", "sklearn", True, args.before)]
    times: dict[str, list[dict]] = {label: [] for label, *_ in cases}
    for r in range(args.repeats):
        for label, variant, kernel_first, path in cases:  # interleaved, so all meet the same load
            print(f"timing {label} ({r + 1}/{args.repeats}) ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, os.path.abspath(__file__), "--child", variant, "--threads", str(args.threads)]
            cmd += ["--kernel-first"] if kernel_first else []
            out = subprocess.run(cmd, env=dict(env, PYTHONPATH=path), check=True, capture_output=True, text=True)
            times[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("scoring samples ...", file=sys.stderr, flush=True)
    rows = quality(args.n_samples, args.n_inits)
    load1 = os.getloadavg()
    print(f"\nDualPPCA({Q}, RBF({BANDWIDTH})) on {N_TRAIN} MNIST digits (the `kppca sample` defaults), "
          f"torch threads {args.threads}, CPUs {os.cpu_count()}, load average {load0[0]:.2f} -> {load1[0]:.2f}\n")
    print("| code, mixture fit | fit (s) | `sample_kernel(64)` first (s) | first `sample(64)` (s) | second (s) | "
          "first, all runs (s) |")
    print("|---|---:|---:|---:|---:|---|")
    for label, runs in times.items():
        firsts = [t["first"] for t in runs]
        kernel = f"{min(t['kernel'] for t in runs):.3f}" if runs[0]["kernel"] > 1e-4 else ""
        print(f"| {label} | {min(t['fit'] for t in runs):.2f} | {kernel} | {min(firsts):.3f} | "
              f"{min(t['second'] for t in runs):.3f} | {', '.join(f'{t:.3f}' for t in firsts)} |")
    ratio = min(t["first"] for t in times["torch"]) / min(t["first"] for t in times["sklearn"])
    print(f"\nfirst sample(64), torch / sklearn: {ratio:.2f}x (target: first sample(64) <= 0.3 s)\n")
    print(f"{args.n_samples} samples per row; floor (1,000 real digits against the reference): FD {rows['floor']:.2f}\n")
    for variant in ("sklearn", "torch"):
        fds = [v["fd"] for label, v in rows.items() if label.startswith(variant)]
        mean = sum(fds) / len(fds)
        sd = (sum((f - mean) ** 2 for f in fds) / max(1, len(fds) - 1)) ** 0.5
        print(f"FD over {len(fds)} mixture seeds, {variant}: mean {mean:.2f}, sd {sd:.2f}, min {min(fds):.2f}, "
              f"max {max(fds):.2f}; shipped seed 0: {fds[0]:.2f}")
    print()
    print("| mixture fit | FD | conf | eff | min % | novelty |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, v in rows.items():
        if label != "floor":
            print(f"| {label} | {v['fd']:.2f} | {v['conf']:.3f} | {v['eff']:.2f} | {100 * v['min']:.1f} | "
                  f"{v['novelty']:.2f} |")


if __name__ == "__main__":
    main()
