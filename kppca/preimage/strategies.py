"""Pre-image strategies: objects that map a batch of feature-space points back to inputs (M, D).

Strategies store options only (like scikit-learn estimators); what they fit once per training set
(the learned map, hub scores) lives in the ``cache`` their caller owns (a model's LazyCache, or a dict).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable, ClassVar

import numpy as np
import torch

from .._cache import LazyCache
from .._linalg import block_rows as default_block_rows
from .._param_validation import Integral, Interval, Real, StrOptions, validate_parameter_constraints
from .._validation import as_tensor
from ..kernels import RBF
from .context import FeaturePoints, TrainingContext, take_columns
from .fixed_point import PreimageConvergenceWarning, dual_coefficients_to_expansion, fixed_point_preimage
from .learned import RIDGES, LearnedPreimage, median_heuristic_bandwidth, select_bandwidth_and_ridge
from .smoother import ESTIMATE_CONSTRAINTS, _smooth, _smooth_selected, knn_preimage, uncenter_kernel_vectors

__all__ = [
    "Preimage", "SmootherPreimage", "KNNPreimage", "FixedPointPreimage", "LearnedMapPreimage", "AutoPreimage",
    "make_preimage", "resolve_preimage", "PREIMAGE_METHODS", "PREIMAGE_OPTIONS", "DEFAULT_PREIMAGE",
    "SAMPLE_SMOOTHER_OPTIONS", "SELECTIONS", "hub_window",
]

_COUNT = Interval(Integral, 1, None, closed="left")
_POSITIVE = Interval(Real, 0, None, closed="neither")
_NONNEGATIVE = Interval(Real, 0, None, closed="left")


#: The rule of :func:`hub_window`: a fraction of N up to ``HUB_WINDOW_KNEE`` training points, then growing as
#: ``N ** HUB_WINDOW_POWER`` (``benchmarks/mnist_data_size.py``: on MNIST, 0.1 N was best up to 5,000 digits; at
#: 20,000 and 50,000 windows of 0.05-0.07 N gave closer digits than 0.1 N, and below 0.03 N the correction fails).
HUB_WINDOW_FRACTION, HUB_WINDOW_KNEE, HUB_WINDOW_POWER = 0.1, 5_000, 0.8


def hub_window(n_samples: int) -> int:
    """The default hub window of sampled points for ``n_samples`` training points (``hub_neighbors="auto"``).

    ``0.1 N`` up to N = 5,000, then ``500 (N / 5000) ** 0.8`` (a slowly falling fraction: 0.061 N at 60,000).
    """
    N = int(n_samples)
    if N <= HUB_WINDOW_KNEE:
        return int(round(HUB_WINDOW_FRACTION * N))
    return int(round(HUB_WINDOW_FRACTION * HUB_WINDOW_KNEE * (N / HUB_WINDOW_KNEE) ** HUB_WINDOW_POWER))


def _at_most(n_neighbors: int | None, N: int) -> int | None:
    """A validated ``n_neighbors`` clamped to the training-set size (None, all points, stays None)."""
    return None if n_neighbors is None else min(int(n_neighbors), N)


class Preimage:
    """Base class of the pre-image strategies, called with :class:`FeaturePoints` and a :class:`TrainingContext`.

    Subclasses declare ``name``, ``_defaults``, ``_constraints`` and implement ``_map(points, context, cache, start)``.
    """

    name: ClassVar[str]
    _defaults: ClassVar[dict[str, Any]]
    _constraints: ClassVar[dict[str, list[Any]]]
    #: Whether the strategy works on rows independently (so callers may split a batch in blocks).
    rowwise: ClassVar[bool] = True

    def __init__(self, **options: Any):
        unknown = sorted(set(options) - set(self._defaults))
        if unknown:
            raise ValueError(
                f"unknown option(s) {', '.join(unknown)} for preimage={self.name!r}; it accepts: "
                f"{', '.join(self._defaults)}."
            )
        opts = {**self._defaults, **options}
        validate_parameter_constraints(self._constraints, opts, f"preimage={self.name!r}")
        self.options = opts

    def get_params(self) -> dict[str, Any]:
        """The options of this strategy (defaults filled in)."""
        return dict(self.options)

    def __repr__(self) -> str:
        arrays = (np.ndarray, torch.Tensor)
        shown = ", ".join(f"{k}={v!r}" for k, v in self.options.items() if not isinstance(v, arrays))
        return f"{type(self).__name__}({shown})"

    def prepare(self, context: TrainingContext, cache: LazyCache | dict, sampled: bool = True) -> None:
        """Compute into ``cache`` what this strategy derives from the training set alone (before it is released)."""

    def __call__(
        self,
        points: FeaturePoints,
        context: TrainingContext,
        cache: LazyCache | dict | None = None,
        *,
        block_rows: int | None = None,
    ) -> torch.Tensor:
        """Inputs (M, D) for ``points``; ``cache`` keeps what is fitted once per training set, ``block_rows``
        bounds the rows processed at once."""
        cache = LazyCache.wrap(cache)
        M = len(points)
        if M == 0:
            return context.X.new_zeros((0, context.X.shape[1]))
        if not self.rowwise or block_rows is None or block_rows >= M:
            return self._map(points, context, cache, 0)
        return torch.cat([
            self._map(points.select(slice(i, i + block_rows)), context, cache, i) for i in range(0, M, block_rows)
        ])

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache, start: int) -> torch.Tensor:
        raise NotImplementedError


#: How :class:`SmootherPreimage` ranks training points (see its docstring).
SELECTIONS: tuple[str, ...] = ("auto", "local", "centered", "raw")


class KNNPreimage(Preimage):
    """Mean of the ``n_neighbors`` nearest training inputs in feature space (:func:`knn_preimage`)."""

    name = "knn"
    _defaults = {"n_neighbors": 5, "weighting": "distance"}
    _constraints = {"n_neighbors": [_COUNT], "weighting": [StrOptions(("uniform", "distance"))]}

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache, start: int) -> torch.Tensor:
        D2 = context.sq_distances(points.k_c, points.dual_coefficients())
        if points.candidates is not None:
            # Largest finite value (knn_preimage refuses inf): never chosen while enough candidates remain.
            D2 = D2.masked_fill(~points.candidates, torch.finfo(D2.dtype).max)
        k = _at_most(self.options["n_neighbors"], context.n_samples)
        return knn_preimage(D2, context.X, n_neighbors=k, weighting=self.options["weighting"])


class SmootherPreimage(Preimage):
    """Kernel smoother (paper eq. 19) over the ``n_neighbors`` (None: all) training points chosen by ``selection``.

    The weights are the raw kernel values, un-centered by ``estimate`` (``"span"``, exact for model points,
    or as in :func:`uncenter_kernel_vectors`); ``clip_negative`` and ``epsilon`` as in :func:`kernel_smoother`.
    Rows without positive total weight fall back to :class:`KNNPreimage` (``weighting="distance"``).

    ``selection`` corrects the ranking for *hubs*, training points similar to everything (thin 1s on
    MNIST) that would dominate the pre-images: ``"raw"`` ranks by ``<phi_i, psi>``; ``"centered"`` by
    ``k_c``, which removes each point's mean similarity ``(K 1 / N)_i`` (a global correction, free);
    ``"local"`` subtracts each point's mean similarity to its ``hub_neighbors`` nearest training points
    (an int, a fraction of N, or ``"auto"``: :func:`hub_window` of N; CSLS, Lample et al. 2018), one cached
    pass over the Gram matrix.
    ``"auto"`` is ``"local"`` for sampled points (``FeaturePoints.sampled``) and ``"raw"`` for maps of
    given inputs or codes, whose small, shrunk similarities hub corrections would swamp.
    """

    name = "smoother"
    _defaults = {
        "n_neighbors": 10,
        "selection": "auto",
        "hub_neighbors": 0.2,
        "estimate": "span",
        "clip_negative": True,
        "epsilon": 0.0,
    }
    _constraints = {
        "n_neighbors": [_COUNT, None],
        "selection": [StrOptions(SELECTIONS)],
        "hub_neighbors": [_COUNT, Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "estimate": ESTIMATE_CONSTRAINTS,
        "clip_negative": ["boolean"],
        "epsilon": [_NONNEGATIVE],
    }

    def prepare(self, context: TrainingContext, cache: LazyCache | dict, sampled: bool = True) -> None:
        self.hub_scores(context, cache, sampled)  # one pass over the Gram matrix, kept as (N,)

    def hub_scores(
        self, context: TrainingContext, cache: LazyCache | dict, sampled: bool = True
    ) -> torch.Tensor | None:
        """What ``selection`` subtracts from the raw similarities, (N,) or None; ``sampled`` resolves ``"auto"``."""
        selection = self.options["selection"]
        if selection == "auto":
            selection = "local" if sampled else "raw"
        if selection == "raw":
            return None
        if selection == "centered":
            # <phi_i, m> = (K 1/N)_i; subtracting it (and the row constant) ranks by k_c.
            return context.centerer.column_means_ if context.center else None
        X, N, h = context.X, context.n_samples, self.options["hub_neighbors"]
        if isinstance(h, str):  # "auto": the rule of N
            k = hub_window(N)
        elif isinstance(h, numbers.Integral):
            k = int(h)
        else:  # a fraction of N
            k = int(round(h * N))
        k = max(1, min(k, N - 1))

        def compute() -> torch.Tensor:
            # From the fit's buffer while it is alive (its lower triangle, without a topk), else kernel values.
            scores = context.gram.raw_top_means(k) if context.gram is not None else None
            if scores is not None:
                return scores
            # One pass over the kernel values in row blocks (memory O(block_rows N)).
            block_rows = default_block_rows(None, N, X.dtype)
            scores = X.new_empty(N)
            for i in range(0, N, block_rows):
                G = context.gram_rows(i, i + block_rows)
                rows = torch.arange(i, min(i + block_rows, N), device=X.device)
                G[rows - i, rows] = -torch.inf  # not its own neighbour
                scores[i : i + block_rows] = torch.topk(G, k, dim=1, sorted=False).values.mean(1)  # a mean: no sort
            return scores

        return LazyCache.wrap(cache).get(("local-hub-scores", k), compute)

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache, start: int) -> torch.Tensor:
        N = context.n_samples
        estimate = self.options["estimate"]
        if isinstance(estimate, str) and estimate == "span":
            # computed where needed (each entry is the same wherever it is computed), the row means once
            row_means = context.row_means(points.alpha)

            def raw(columns: slice | torch.Tensor | None = None) -> torch.Tensor:
                return context.raw_weights(points.k_c, points.alpha, columns, row_means=row_means)
        else:
            W = uncenter_kernel_vectors(points.k_c, context.centerer, estimate)

            def raw(columns: slice | torch.Tensor | None = None) -> torch.Tensor:
                return take_columns(W, columns)
        n_neighbors = _at_most(self.options["n_neighbors"], N)
        clip, eps = bool(self.options["clip_negative"]), float(self.options["epsilon"])
        hubs = self.hub_scores(context, cache, points.sampled)
        cand = points.candidates
        if n_neighbors is None or n_neighbors >= N or (hubs is None and cand is None):
            W = raw()
            if cand is not None:  # then every training point is kept: the others must weigh nothing
                W = W.masked_fill(~cand, 0.0)
            out, bad = _smooth(W, context.X, n_neighbors, clip, eps)
        else:
            # Choose the neighbours by the hub-corrected score, weigh them by the raw kernel values.
            def score(c: slice) -> torch.Tensor:
                S = raw(c) if hubs is None else raw(c) - hubs[c]
                return S if cand is None else S.masked_fill(~cand[:, c], -torch.inf)

            idx = _largest_by_column_blocks(score, len(points), N, n_neighbors)
            Wk = raw(idx)
            if cand is not None:  # fewer candidates than n_neighbors: the rest must not count
                Wk = Wk.masked_fill(~torch.gather(cand, 1, idx), 0.0)
            out, bad = _smooth_selected(Wk, idx, context.X, clip, eps, N)
        if bool(bad.any()):
            # No positive similarity to the kept training points (e.g. samples of the uncentered model):
            # the weighted mean is undefined, the nearest training points in feature space are not.
            k = n_neighbors if n_neighbors is not None else KNNPreimage._defaults["n_neighbors"]
            fallback = KNNPreimage(n_neighbors=k, weighting="distance")
            out[bad] = fallback._map(points.select(bad), context, cache, start)
        return out


#: Entries of a block of scores in :func:`_largest_by_column_blocks` (16 MiB in float32).
SCORE_BLOCK_ENTRIES = 1 << 22


def _largest_by_column_blocks(score: Callable[[slice], torch.Tensor], M: int, N: int, k: int) -> torch.Tensor:
    """Column indices (M, k) of each row's k largest ``score`` values, in descending order, from ``score(columns)``
    (M, c) over blocks of columns: no (M, N) temporaries (at N = 60,000 their first touch cost more than the work).
    The same indices as one ``topk`` over whole rows, but for the order among exactly equal scores."""
    step = max(k, SCORE_BLOCK_ENTRIES // max(1, M))
    values = indices = None
    for c0 in range(0, N, step):
        block = slice(c0, min(c0 + step, N))
        v, i = torch.topk(score(block), min(k, block.stop - c0), dim=1)
        i += c0
        if values is not None:
            v, j = torch.topk(torch.cat([values, v], 1), min(k, values.shape[1] + v.shape[1]), dim=1)
            i = torch.gather(torch.cat([indices, i], 1), 1, j)
        values, indices = v, i
    return indices


class FixedPointPreimage(Preimage):
    """Mika et al.'s fixed-point iteration (RBF kernels only), see :func:`~kppca.preimage.fixed_point_preimage`."""

    name = "fixed-point"
    _defaults = {"init": "smoother", "max_iter": 100, "tol": 1e-6}
    _constraints = {
        "init": [StrOptions(("best", "smoother")), np.ndarray, torch.Tensor, list],
        "max_iter": [_COUNT],
        "tol": [_NONNEGATIVE],
    }

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache, start: int) -> torch.Tensor:
        if not isinstance(context.kernel, RBF):
            raise NotImplementedError(
                f"preimage='fixed-point' is derived for the RBF (Gaussian) kernel only; this model's kernel is "
                f"{type(context.kernel).__name__}. Use 'smoother', 'knn' or 'learned'."
            )
        alpha = points.dual_coefficients()
        gamma = dual_coefficients_to_expansion(alpha) if context.center else alpha
        init = self.options["init"]
        if not isinstance(init, str):
            init = as_tensor(init, "init", dtype=alpha.dtype, device=alpha.device)[start : start + alpha.shape[0]]
        return fixed_point_preimage(
            gamma, context.X, context.kernel, init=init, max_iter=self.options["max_iter"], tol=self.options["tol"]
        )


class LearnedMapPreimage(Preimage):
    """Kernel ridge regression from principal coordinates to inputs (:class:`LearnedPreimage`), fitted once per cache.

    ``bandwidth`` and ``alpha`` may be ``"cv"`` (:func:`select_bandwidth_and_ridge`); ``bandwidth=None`` is the
    median heuristic; ``refine`` > 0 runs that many fixed-point steps (RBF only).
    """

    name = "learned"
    rowwise = False
    _defaults = {"n_coordinates": None, "bandwidth": None, "alpha": 0.1, "refine": 0}
    _constraints = {
        "n_coordinates": [_COUNT, None],
        "bandwidth": [_POSITIVE, None, StrOptions(("cv",))],
        "alpha": [_POSITIVE, StrOptions(("cv",))],
        "refine": [Interval(Integral, 0, None, closed="left")],
    }

    def _map(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache, start: int) -> torch.Tensor:
        if points.coordinates is None:
            raise ValueError(
                "preimage='learned' needs principal coordinates of the points (FeaturePoints.coordinates); "
                "models provide them, a bare TrainingContext does not."
            )
        refine = self.options["refine"]
        if refine and not isinstance(context.kernel, RBF):
            raise NotImplementedError(
                f"preimage='learned' with refine={refine} takes fixed-point steps, derived for the RBF kernel "
                f"only; this model's kernel is {type(context.kernel).__name__}. Use refine=0."
            )
        train, new, key = points.coordinates(self.options["n_coordinates"])
        bandwidth, alpha = self.options["bandwidth"], self.options["alpha"]

        def fit() -> LearnedPreimage:
            width, ridge = bandwidth, alpha
            if "cv" in (width, ridge):
                widths = None if width == "cv" else (width or median_heuristic_bandwidth(train),)
                width, ridge, _ = select_bandwidth_and_ridge(
                    train, context.X, bandwidths=widths, alphas=RIDGES if ridge == "cv" else (ridge,)
                )
            return LearnedPreimage(bandwidth=width, alpha=ridge).fit(train, context.X)

        out = cache.get(("learned", key, bandwidth, alpha), fit).predict(new)
        if refine:
            alpha = points.dual_coefficients()
            gamma = dual_coefficients_to_expansion(alpha) if context.center else alpha
            with warnings.catch_warnings():
                # A fixed number of steps, not a solve to convergence: the warning does not apply.
                warnings.simplefilter("ignore", PreimageConvergenceWarning)
                out = fixed_point_preimage(gamma, context.X, context.kernel, init=out, max_iter=refine, tol=0.0)
        return out


#: Smoother options of the default pre-image for sampled points (closer samples to real digits).
SAMPLE_SMOOTHER_OPTIONS: dict[str, Any] = {"n_neighbors": 3, "hub_neighbors": "auto"}


class AutoPreimage(Preimage):
    """The default: the smoother for sampled points, the cross-validated learned map for maps of given points.

    Sampled points go to :class:`SmootherPreimage` with :data:`SAMPLE_SMOOTHER_OPTIONS`; maps of given inputs
    or codes to :class:`LearnedMapPreimage` with ``"cv"`` bandwidth and ridge (far closer reconstructions, see
    docs/theory), or to the smoother without coordinates or when only smoother options are given.
    """

    name = "auto"
    _defaults = {**SmootherPreimage._defaults, **LearnedMapPreimage._defaults, "bandwidth": "cv", "alpha": "cv"}
    _constraints = {**SmootherPreimage._constraints, **LearnedMapPreimage._constraints}

    def __init__(self, **options: Any):
        super().__init__(**options)
        self._explicit = frozenset(options)

    def choose(self, sampled: bool, has_coordinates: bool = True) -> Preimage:
        """The strategy used for sampled points (or maps of given points when ``sampled`` is False)."""
        smoother_only = self._explicit & (set(SmootherPreimage._defaults) - set(LearnedMapPreimage._defaults))
        learned_only = self._explicit & set(LearnedMapPreimage._defaults)
        if sampled or not has_coordinates or (smoother_only and not learned_only):
            opts = {k: self.options[k] for k in SmootherPreimage._defaults}
            if sampled:
                opts |= {k: v for k, v in SAMPLE_SMOOTHER_OPTIONS.items() if k not in self._explicit}
            return SmootherPreimage(**opts)
        return LearnedMapPreimage(**{k: self.options[k] for k in LearnedMapPreimage._defaults})

    def prepare(self, context: TrainingContext, cache: LazyCache | dict, sampled: bool = True) -> None:
        self.choose(sampled).prepare(context, cache, sampled)

    def __call__(self, points: FeaturePoints, context: TrainingContext, cache: LazyCache | dict | None = None, *,
                 block_rows: int | None = None) -> torch.Tensor:
        strategy = self.choose(points.sampled, points.coordinates is not None)
        return strategy(points, context, cache, block_rows=block_rows)


_STRATEGIES: dict[str, type[Preimage]] = {
    cls.name: cls for cls in (AutoPreimage, SmootherPreimage, KNNPreimage, FixedPointPreimage, LearnedMapPreimage)
}

#: The pre-image methods accepted by ``preimage=``.
PREIMAGE_METHODS: tuple[str, ...] = tuple(_STRATEGIES)

#: The default pre-image method.
DEFAULT_PREIMAGE = "auto"

#: Options of each method and their defaults (pass them as keywords, e.g. ``n_neighbors=10``).
PREIMAGE_OPTIONS: dict[str, dict[str, Any]] = {name: dict(cls._defaults) for name, cls in _STRATEGIES.items()}


def make_preimage(preimage: str | Preimage | None = None, **options: Any) -> Preimage:
    """The pre-image strategy for a method name (case-insensitive, ``_`` for ``-``; None: :data:`DEFAULT_PREIMAGE`)
    or a strategy object (returned as is), and options.

    Raises
    ------
    ValueError
        Unknown method, or an option the method does not take or a bad value.
    """
    if isinstance(preimage, Preimage):
        if options:
            raise ValueError(
                f"options {', '.join(sorted(options))} were given with a Preimage object {preimage!r}; "
                "set them when building the object."
            )
        return preimage
    if preimage is not None and not isinstance(preimage, str):
        raise TypeError(
            f"preimage must be a method name (one of {', '.join(PREIMAGE_METHODS)}) or a Preimage strategy, "
            f"got {preimage!r}."
        )
    name = DEFAULT_PREIMAGE if preimage is None else preimage.strip().lower().replace("_", "-")
    if name not in _STRATEGIES:
        raise ValueError(f"preimage={preimage!r} is unknown; use one of {', '.join(PREIMAGE_METHODS)}.")
    return _STRATEGIES[name](**options)


def resolve_preimage(preimage: str | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Validate a method name and its options; return ``(name, options with defaults)``."""
    strategy = make_preimage(preimage, **options)
    return strategy.name, strategy.get_params()
