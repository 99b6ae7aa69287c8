"""The first ``sample(64)`` of Nyström models, before and after a change, side by side in one run.

Two models, fitted once (by the code under test) and pickled, so that both codes start from the same
fitted state with empty caches:

* ``landmark``: ``PrimalPPCA(30, feature_map=Nystroem(RBF(5), n_landmarks=2000))`` by ``partial_fit`` on the
  5,000 bundled digits: no training inputs, so pre-images and the latent mixture work over the landmarks;
* ``numpy``: the same with ``n_landmarks=500`` by ``fit`` on 3,000 digits (it keeps ``X_fit_``; the default
  pre-image reads the training Gram matrix in row blocks).

Each code times, in fresh subprocesses taking turns (``--repeats`` each), the first and the second
``sample(64, random_state=0)`` and writes the samples, which are compared bit for bit.

Run:  python benchmarks/bench_landmark_first_sample.py --before PATH [--repeats 1] [--threads 1]
      (PATH: a tree holding the previous ``kppca`` package, e.g. from ``git archive HEAD~1 kppca``)
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fit(path: str) -> None:
    from kppca import PrimalPPCA
    from kppca.datasets import load_mnist
    from kppca.features import Nystroem
    from kppca.kernels import RBF

    X, _ = load_mnist(random_state=0)
    t = time.perf_counter()
    models = {
        "landmark": PrimalPPCA(30, feature_map=Nystroem(RBF(5.0), n_landmarks=2000, random_state=0),
                               random_state=0).partial_fit(X),
        "numpy": PrimalPPCA(30, feature_map=Nystroem(RBF(5.0), n_landmarks=500, random_state=0),
                            random_state=0).fit(X[:3000]),
    }
    print(f"fits: {time.perf_counter() - t:.1f} s", flush=True)
    with open(path, "wb") as f:
        pickle.dump(models, f)


def child(path: str, which: str, out: str) -> None:
    import numpy as np

    with open(path, "rb") as f:
        model = pickle.load(f)[which]
    times = []
    for _ in range(2):
        t = time.perf_counter()
        S = model.sample(64, random_state=0)
        times.append(time.perf_counter() - t)
    np.save(out, np.asarray(S))
    print(f"{times[0]:.2f} {times[1]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", nargs=3)
    parser.add_argument("--fit")
    args = parser.parse_args()
    if args.fit:
        return fit(args.fit)
    if args.child:
        return child(*args.child)
    import numpy as np

    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    tmp = tempfile.mkdtemp()
    pickled = os.path.join(tmp, "models.pkl")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--before", args.before, "--fit", pickled],
                   env={**env, "PYTHONPATH": HERE}, check=True)
    trees = {"before": os.path.abspath(args.before), "after": HERE}
    for which in ("landmark", "numpy"):
        for r in range(args.repeats):
            for label, tree in trees.items():
                out = os.path.join(tmp, f"{which}-{label}.npy")
                res = subprocess.run([sys.executable, os.path.abspath(__file__), "--before", args.before,
                                      "--child", pickled, which, out], env={**env, "PYTHONPATH": tree},
                                     check=True, capture_output=True, text=True)
                first, second = res.stdout.split()[-2:]
                print(f"| {which} | {label} | {first} s | {second} s |", flush=True)
        A, B = (np.load(os.path.join(tmp, f"{which}-{x}.npy")) for x in trees)
        print(f"{which}: samples bitwise equal before/after: {np.array_equal(A, B)}", flush=True)


if __name__ == "__main__":
    main()
