"""``kppca sample``'s training size by measurement: FD of the exact dual model against N and dtype, and landmarks.

Same split and judge as ``generation_defaults.py`` (2,000 held-out digits; the other 3,000
bundled digits are the pool). For each seed: ``DualPPCA(30, RBF(5))`` on N = 1,000 / 2,000 (today's
default) / 3,000 (all the bundled digits not held out) pool digits in float64 and float32, and
the landmark model ``PrimalPPCA(30, feature_map=Nystroem(RBF(5), 2,000))`` fitted with
``partial_fit`` on all 3,000; 2,000 samples each (default latent and pre-image), and the end-to-end
time of ``fit`` + 64 digits (what ``kppca sample`` does; least of 2 runs).

Run:  python benchmarks/sample_data_size.py [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    models = {
        **{f"dual, N = {n:,}, {dt}": (lambda n=n, dt=dt: DualPPCA(30, kernel=RBF(5.0), dtype=dt), n)
           for n in (1000, 2000, 3000) for dt in ("float64", "float32")},
        "landmarks m = 2,000 (partial_fit), N = 3,000": (
            lambda: PrimalPPCA(30, feature_map=Nystroem(RBF(5.0), n_landmarks=2000, random_state=0)), 3000),
    }
    fds: dict[str, list[float]] = {}
    print("| seed | model | FD | conf | eff | novelty | fit + 64 digits (s) |\n|---:|---|---:|---:|---:|---:|---:|")
    for seed in args.seeds:
        X, y = load_mnist(random_state=seed)
        X_pool, X_ho, y_pool, y_ho = train_test_split(X, y, test_size=2000, stratify=y, random_state=seed)
        X_net, X_ref, y_net, y_ref = train_test_split(X_ho, y_ho, test_size=1000, stratify=y_ho, random_state=seed)
        judge = Judge(X_net, y_net, X_ref, y_ref, X_pool)
        for label, (make, n) in models.items():
            Xt = X_pool[:n]
            fit = (lambda m: m.partial_fit(Xt)) if "partial_fit" in label else (lambda m: m.fit(Xt))
            t_e2e = np.inf
            for _ in range(2):
                t0 = time.perf_counter()
                model = fit(make())
                model.sample(64, random_state=7)
                t_e2e = min(t_e2e, time.perf_counter() - t0)
            S = np.asarray(model.sample(2000, random_state=seed + 1), dtype=np.float64)
            fd, q = judge(S, Xt)
            fds.setdefault(label, []).append(fd)
            print(f"| {seed} | {label} | {fd:.2f} | {q.confidence:.3f} | {q.effective_classes:.2f} | "
                  f"{q.novelty_ratio:.2f} | {t_e2e:.1f} |", flush=True)
    print(f"\nload {open('/proc/loadavg').read().split()[:3]}\n\n| model | mean FD |\n|---|---:|")
    for label, v in fds.items():
        print(f"| {label} | {np.mean(v):.2f} |")


if __name__ == "__main__":
    main()
