"""``kppca sample``: fit (or load) a model, draw digits, write a picture and/or the raw samples."""

from __future__ import annotations

import argparse
import contextlib
import math
from typing import Any

import numpy as np

from ..common import OptionError, Stages, UserError, image_shape, prepare
from ..options import (
    LATENTS, add_model_options, add_preimage_option, add_run_options, digit_class, latent_name, positive_int,
)

NAME = "sample"
STAGES = ["load data", "fit model", "generate", "train judge", "report", "write image", "write samples"]

#: Default latent distribution (what "auto" picks for a DualPPCA): the exact prior's digits are much further
#: from real ones by the Fréchet feature distance, and less balanced.
DEFAULT_LATENT = "mixture"

#: Latent codes from a scrambled Sobol sequence (``sample(qmc=True)``): on the bundled default the Fréchet distance
#: of 2,000 digits varied between seeds 0-39 by 2.7 % (standard deviation) instead of 9.3 %, and its mean fell from
#: 5.99 to 5.79 (``benchmarks/mnist_data_size.py``; benchmarks/README.md, "Quasi-random latent codes").
DEFAULT_QMC = True


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        NAME, help="fit (or load) a model and write a PNG grid of generated digits (or the raw samples, .npy)",
        description="Fit the dual PPCA model on MNIST digits (or load one), draw latent codes from a Gaussian "
        "mixture fitted on the training codes (--latent mixture, default) or from the model's own prior "
        "(--latent prior: the exact sample k_c ~ N(0, S)), map them back to pixels with a pre-image, and "
        "write them as a grid (.png) or as an array of shape (n, 784) (.npy). Prints explained variance, "
        "sigma2, q, rank and timings; --report adds a quality report.",
    )
    add_model_options(p, loadable=True)
    g = p.add_argument_group("generation")
    g.add_argument("--n-samples", type=positive_int, default=64, metavar="N",
                   help="number of digits to generate (default: 64)")
    g.add_argument("--latent", type=latent_name, default=DEFAULT_LATENT, metavar="DIST",
                   help=f"latent distribution: {', '.join(LATENTS)} (default: {DEFAULT_LATENT}; 'prior' is the "
                   "exact model sample, noise included)")
    g.add_argument("--qmc", action=argparse.BooleanOptionalAction, default=DEFAULT_QMC,
                   help="draw the latent codes from a scrambled Sobol sequence (quasi-Monte Carlo, the default): "
                   "each is a draw from the mixture, and together they follow its components' weights, so the "
                   "classes are balanced and the digits' quality varies less with --seed; --no-qmc draws them "
                   "independently (no effect with --latent prior, the exact sample)")
    g.add_argument("--digit-class", type=digit_class, metavar="K",
                   help="generate only digits of class K (codes from that class's mixture, pre-images from its "
                   "training digits)")
    add_preimage_option(g)
    g.add_argument("--n-cols", type=positive_int, metavar="C",
                   help="images per row of the grid (default: ceil(sqrt(n-samples)))")
    g.add_argument("--out", action="append", metavar="FILE",
                   help="output file, repeatable: an image (PNG unless the extension names another matplotlib "
                   "format) or FILE.npy for the raw samples, shape (n, 784), pixels in [0, 1] "
                   "(default: kppca_samples.png)")
    g.add_argument("--report", action="store_true",
                   help="print a quality report: classifier confidence, class histogram, distance to the "
                   "training digits, MMD and Fréchet feature distance to held-out digits (needs digits not used "
                   "for training)")
    add_run_options(p)


def check(args: argparse.Namespace) -> None:
    """Option combinations that cannot work, and samples that cannot fit in memory, found before any data is read."""
    from ..._resources import InsufficientMemoryError, check_memory

    # Per sample at least its pixels and, with --n-train N, its kernel vector and dual coefficients (2N).
    n_train = args.n_train if isinstance(args.n_train, int) and not args.model else 0
    try:
        check_memory(args.n_samples * (784 + 2 * n_train) * (4 if args.dtype == "float32" else 8),
                     f"{args.n_samples} samples", "ask for fewer (run the command several times with other --seed)")
    except InsufficientMemoryError as exc:
        raise OptionError("--n-samples", str(exc)) from None
    if args.digit_class is not None and args.digits is not None and args.digit_class not in args.digits \
            and not args.model:
        raise OptionError("--digit-class", f"class {args.digit_class} is not among --digits "
                          f"{' '.join(map(str, args.digits))}; add it to --digits or choose one of those")


def outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    outs = args.out or ["kppca_samples.png"]
    images = [(out, "image") for out in outs if not out.lower().endswith(".npy")]
    return images + [(out, "samples") for out in outs if out.lower().endswith(".npy")]


def _save_array(path: str, array: np.ndarray) -> None:
    # Through a file object: np.save(path) appends ".npy" to a name ending in ".NPY".
    with open(path, "wb") as f:
        np.save(f, array)


#: At most this many held-out digits train the report's judges (classifier and feature network), and at most this
#: many of the generated classes are their reference (a random subset of each). The cost grows with the rows (82 s
#: + 25 s on 50,000 digits, for an 11 s run); the classifier is right on 87.6 % of MNIST digits instead of 91.2 %.
REPORT_ROWS = 5000


def _subset(n: int, rows: int, seed: Any) -> np.ndarray:
    """Indices of a random subset of ``min(n, rows)`` of ``range(n)``, in order (all of them when ``n <= rows``)."""
    if n <= rows:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, rows, replace=False))


def _train_judge(args: argparse.Namespace, model: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The report's judges ``(X_ref, y_ref, X_fit, classifier, network)``, trained on :data:`REPORT_ROWS` of ``X_ref``.

    With two threads the feature network trains in a worker thread beside the rest, and ``network`` is its future;
    otherwise it is trained (and cached) here, and None.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..._linalg.threads import section_threads
    from ...datasets import load_mnist
    from ...metrics.digit_features import digit_features
    from ...metrics.sample_quality import _fit_default_classifier

    X_fit = np.asarray(model.X_fit_.cpu())
    X_all, y_all = load_mnist(path=args.mnist_dir)
    # Held-out real digits: those not among the training inputs (compared by value).
    train_rows = {row.tobytes() for row in X_fit.astype(X_all.dtype)}
    held = np.array([row.tobytes() not in train_rows for row in X_all])
    if held.sum() < 20:
        raise UserError("--report needs real digits not used for training; fewer than 20 are left.")
    X_ref, y_ref = X_all[held], y_all[held]
    unseen = sorted(set(y_all[~held].tolist()) - set(y_ref.tolist()))  # trained on, none held out
    if unseen:
        raise UserError(f"--report needs held-out digits of every class trained on; class(es) {unseen} were all "
                        "used for training, so its classifier would never see them. Lower --n-train.")
    rows = _subset(len(y_ref), REPORT_ROWS, getattr(args, "seed", None))
    X_judge, y_judge = (X_ref, y_ref) if len(rows) == len(y_ref) else (X_ref[rows], y_ref[rows])
    network = None
    if (section_threads() or 1) >= 2:
        # The network goes to the worker thread: torch's thread count is the worker's own there, while a BLAS
        # limit set in a worker thread is not reliably the worker's (threadpoolctl inside an outer limit, measured).
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kppca-judge")
        network = pool.submit(digit_features, X_judge, y_judge)  # sample_quality's default extractor, cached
        pool.shutdown(wait=False)  # the worker ends with the training
    classifier = _fit_default_classifier(X_judge, y_judge)
    if network is None:
        digit_features(X_judge, y_judge)
    return X_ref, y_ref, X_fit, classifier, network


def _training_labels(model: Any) -> np.ndarray | None:
    """The class of each training input (rows of ``X_fit_``), or None for a model fitted without labels."""
    if not model._has_state("sample_classes_"):
        return None
    return np.asarray(model.sample_classes_)[np.asarray(model._label_index.cpu())]


def _report(args: argparse.Namespace, S: np.ndarray, judge: tuple[Any, Any, Any, Any, Any],
            train_labels: np.ndarray | None = None) -> None:
    """Print :func:`~kppca.metrics.sample_quality`'s report, on one thread while the network still trains.

    The samples are compared with held-out and training digits of the classes generated only (7s are not expected
    to look like all ten digits); the judges know every class.
    """
    from ..._linalg.threads import blas_threads
    from ...metrics import sample_quality
    from ...metrics.digit_features import _one_thread

    X_ref, y_ref, X_fit, classifier, network = judge
    classes = np.unique(train_labels) if train_labels is not None else np.unique(y_ref)
    if args.digit_class is not None:
        classes = np.array([args.digit_class])
    rows = np.flatnonzero(np.isin(y_ref, classes))
    rows = rows[_subset(len(rows), REPORT_ROWS, args.seed)]
    train = X_fit if train_labels is None else X_fit[np.isin(train_labels, classes)]
    # The network trained beside the classifier (its future), or the cached one of the judges' training digits.
    extractor = (lambda X: network.result()(X)) if network is not None else None
    if extractor is None:
        from ...metrics.digit_features import digit_features

        judge_rows = _subset(len(y_ref), REPORT_ROWS, args.seed)
        extractor = digit_features(X_ref[judge_rows], y_ref[judge_rows])  # the judge's, from the cache
    with contextlib.ExitStack() as stack:
        if network is not None and not network.done():  # it trains on the other core: leave that core to it
            stack.enter_context(_one_thread())
            stack.enter_context(blas_threads(1))
        q = sample_quality(S, X_ref[rows], y_ref[rows], train=train, target=args.digit_class, classifier=classifier,
                           feature_extractor=extractor, random_state=args.seed)
    names = " ".join(str(c) for c in classes)
    n_judge = min(len(y_ref), REPORT_ROWS)
    print(f"quality report: compared with {len(rows)} held-out and {len(train)} training digits of class(es) {names} "
          "(the classes generated); classifier and feature network trained on "
          + (f"{n_judge} of the {len(y_ref)} held-out digits of all classes (capped at {REPORT_ROWS} to keep --report "
             "fast)" if n_judge < len(y_ref) else f"the {len(y_ref)} held-out digits of all classes") + ":")
    print(q.summary())


def run(args: argparse.Namespace, stages: Stages) -> None:
    images = [out for out, what in outputs(args) if what == "image"]
    arrays = [out for out, what in outputs(args) if what == "samples"]
    model = prepare(args, stages)
    if images:
        shape = image_shape(model)
    y = args.digit_class
    if y is not None and not model._has_state("sample_classes_"):
        raise UserError("--digit-class needs a model fitted with labels; a model file saved without them cannot "
                        "do it (fit again without --model).")
    if y is not None and y not in {int(c) for c in model.sample_classes_}:  # said in the option's words
        known = ", ".join(str(int(c)) for c in model.sample_classes_)
        raise UserError(f"--digit-class {y}: class not seen in fit; the model was fitted on digits {known} "
                        "(choose one of them, or fit with --digits including it).")
    S = stages.run("generate", model.sample, args.n_samples, random_state=args.seed, preimage=args.preimage,
                   latent=args.latent, y=y, qmc=args.qmc)
    S = np.asarray(S)
    if args.report:
        judge = stages.run("train judge", _train_judge, args, model)
        stages.run("report", _report, args, S, judge, _training_labels(model))
    # A class label samples from that class's latent mixture (see DualPPCA.sample).
    what = f"latent 'mixture' of class {y}" if y is not None else f"latent '{args.latent}'"
    if args.qmc and (y is not None or args.latent != "prior"):
        what += ", quasi-random"
    what += f", pre-image '{args.preimage}'"

    for out in images:
        def draw(out: str = out) -> None:
            import matplotlib.pyplot as plt

            from ...plotting import plot_image_grid, save_figure

            n_cols = args.n_cols or math.ceil(math.sqrt(args.n_samples))
            n_rows = math.ceil(args.n_samples / n_cols)
            fig, ax = plt.subplots(figsize=(0.45 * n_cols + 0.2, 0.45 * n_rows + 0.5))
            plot_image_grid(S, shape, n_cols, ax=ax, vmin=0.0, vmax=max(1e-12, float(S.max())),
                            title=f"{args.n_samples} samples, q = {model.n_components_}, {what}")
            save_figure(fig, out)

        stages.run("write image", draw)
    for out in arrays:
        stages.run("write samples", _save_array, out, np.clip(S, 0.0, 1.0))
    print(f"generated {args.n_samples} digits with {what}")
    for out in images + arrays:
        print(f"wrote {out}")
    if args.report:  # after the outputs: the report's own lines stay free of timings (compared in tests)
        report_time = stages.timings["train judge"] + stages.timings["report"]
        print(f"--report took {report_time:.1f} s (training its judges included)")
