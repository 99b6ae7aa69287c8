"""Digits from landmark models fitted on a Dask array: landmark rules against the exact dual default.

Set-up (bundled 5,000 MNIST digits, as ``generation_defaults.py``): a stratified split
into 2,000 held-out digits (1,000 train the Fréchet feature network, 1,000 are the
reference; all 2,000 train the judge's classifier) and a pool of 3,000 training digits.

* The exact dual default (the ``kppca sample`` model): ``DualPPCA(30, RBF(5))`` on 2,000
  pool digits, 2,000 samples with the default latent and pre-image.
* Landmark models: ``PrimalPPCA(30, feature_map=Nystroem(RBF(5), m, rule))`` fitted on
  the whole pool as a Dask array *sorted by class* (blocks of 300: the first block holds
  only zeros, the worst case for landmarks from one block) on a ``LocalCluster`` with
  in-process workers; landmarks drawn from all blocks by the uniform reservoir or by
  k-means++ over a uniform pool of 4 m. They keep no training inputs: pre-images and the
  latent mixture use the landmarks.

Reported per model: FD (Fréchet feature distance of 2,000 samples to the reference;
two sets of real digits give the floor), classifier confidence, effective classes,
smallest class share, novelty (distance to the nearest training digit over that of
held-out digits), the classes the landmarks cover, held-out reconstruction error
(mean squared pixel error of ``reconstruct`` on the 1,000 reference digits, default
pre-image) and the fit time.

Run:  python benchmarks/landmark_generation.py [--landmarks 1000 2000] [--seeds 0 1 2] [--threads 1]
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
from generation_defaults import Judge  # noqa: E402  (the same judge as the defaults' benchmark)

from kppca import DualPPCA, PrimalPPCA  # noqa: E402
from kppca.datasets import load_mnist  # noqa: E402
from kppca.features import Nystroem  # noqa: E402
from kppca.kernels import RBF  # noqa: E402
from kppca.preimage import PreimageConvergenceWarning  # noqa: E402


def report(label, model, judge, X_train, X_ref, n_samples, seed, t_fit, covered="") -> tuple[float, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreimageConvergenceWarning)
        S = model.sample(n_samples, random_state=seed)
        R = model.reconstruct(X_ref)
    fd, q = judge(S, X_train)
    mse = float(((np.asarray(R) - X_ref) ** 2).mean())
    print(f"| {label} | {fd:.2f} | {q.confidence:.3f} | {q.effective_classes:.2f} | "
          f"{100 * q.min_class_fraction:.1f} | {q.novelty_ratio:.2f} | {covered} | {mse:.4f} | {t_fit:.1f} |",
          flush=True)
    return fd, q


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--landmarks", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--rules", nargs="+", default=["uniform", "kmeans++"])
    parser.add_argument("--n-samples", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="splits, landmark draws and samples")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    import dask.array as da
    from dask.distributed import Client, LocalCluster

    ratios: dict[str, list[float]] = {}
    conf: dict[str, list[float]] = {}
    print("| seed | model | FD | conf | eff | min % | novelty | landmark classes | held-out recon. MSE | fit (s) |\n"
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        for seed in args.seeds:
            X, y = load_mnist(random_state=seed)
            X_pool, X_ho, y_pool, y_ho = train_test_split(X, y, test_size=2000, stratify=y, random_state=seed)
            X_net, X_ref, y_net, y_ref = train_test_split(X_ho, y_ho, test_size=1000, stratify=y_ho,
                                                          random_state=seed)
            judge = Judge(X_net, y_net, X_ref, y_ref, X_pool)
            print(f"<!-- seed {seed}: floor FD {judge.floor:.2f}; load {open('/proc/loadavg').read().split()[:3]} -->")
            t0 = time.perf_counter()
            dual = DualPPCA(30, kernel=RBF(5.0)).fit(X_pool[:2000], y_pool[:2000])
            fd_dual, _ = report(f"{seed} | exact dual default: DualPPCA(30, RBF(5)), N = 2,000", dual, judge,
                                X_pool[:2000], X_ref, args.n_samples, seed + 1, time.perf_counter() - t0)
            order = np.argsort(y_pool, kind="stable")  # class-sorted, as the bundled file
            Xs, ys = X_pool[order], y_pool[order]
            Xd, yd = da.from_array(Xs, chunks=(300, Xs.shape[1])), da.from_array(ys, chunks=300)
            for m in args.landmarks:
                for rule in args.rules:
                    t0 = time.perf_counter()
                    fmap = Nystroem(RBF(5.0), n_landmarks=m, landmark_selection=rule, random_state=seed)
                    model = PrimalPPCA(30, feature_map=fmap).fit(Xd, yd)
                    t_fit = time.perf_counter() - t0
                    covered = len(set(model.sample_classes_[model._label_index.numpy()[: model.feature_map_.landmarks_.shape[0]]]))
                    label = f"landmarks: Dask, N = 3,000, m = {m}, {rule}"
                    fd, q = report(f"{seed} | {label}", model, judge, Xs, X_ref, args.n_samples, seed + 1, t_fit,
                                   str(covered))
                    ratios.setdefault(label, []).append(fd / fd_dual)
                    conf.setdefault(label, []).append(q.confidence)
    print("\n| model | FD / exact dual FD, per seed | mean | min confidence |\n|---|---|---:|---:|")
    for label, r in ratios.items():
        print(f"| {label} | {', '.join(f'{v:.2f}' for v in r)} | {np.mean(r):.2f} | {min(conf[label]):.3f} |")


if __name__ == "__main__":
    main()
