"""Generation in input space: samples, latent codes and reconstructions mapped back through a pre-image.

The dual model lives in feature space and is known only through kernel values:
a generated point ``psi`` is a centered kernel vector ``k_c = Phi_c^T (psi - m)``
(spec, "Conditional and marginal"). This module adds to :class:`~kppca.DualPPCA`
and :class:`~kppca.PrimalPPCA` the methods that bring such points back to the
inputs:

* ``sample(n)`` -- draw from the marginal model and map back;
* ``inverse_transform(h)`` -- the conditional mean ``K_c A h`` (``W h + m``) of latent codes;
* ``reconstruct(X)`` -- the MAP reconstruction (dual; the primal keeps its own
  feature-space ``reconstruct``);
* ``latent_traversal()`` -- a grid over two latent components (paper, Fig. 4c);
* ``kernel_preimage(K_c_rows)`` (dual) -- any centered kernel vectors.

Every method takes ``preimage=`` (one of :data:`PREIMAGE_METHODS`, default
:data:`DEFAULT_PREIMAGE`) and that method's options as keywords, see
:data:`PREIMAGE_OPTIONS`. Everything a method needs comes from the fitted
model, for a whole batch at once:

``"smoother"``
    Kernel smoother (paper eq. 19) on the raw kernel weights
    ``<phi(x_i), psi>``. The row mean lost by centering is recovered exactly
    (``estimate="span"``: ``s = 1^T K 1/N^2 + c^T alpha`` with ``c = K 1/N - 1^T K 1/N^2``,
    valid because every generated ``psi`` lies in ``m + span{phi_i - m}``).
    A row whose kept weights have no positive total (``psi`` is not positively
    similar to any training point it keeps) has no weighted mean; it falls back to
    the ``"knn"`` pre-image below with the same ``n_neighbors`` (5 when None) and
    ``weighting="distance"``, which is always defined. With ``k(x, x)`` constant
    (RBF) the nearest points in feature space are exactly the largest weights, so
    only the weighting changes.
``"knn"``
    Mean of the nearest training points in feature space, with exact distances
    ``|psi - m|^2 - 2 k_c + diag(K_c)`` (``|psi - m|^2 = alpha^T k_c``).
``"fixed-point"``
    Mika et al.'s iteration (RBF kernels only) on the expansion
    ``psi = sum_i gamma_i phi(x_i)``, ``gamma = alpha - mean(alpha) + 1/N``.
``"learned"``
    Kernel ridge regression from principal coordinates ``e_p^T k_c / sqrt(lam_p)``
    (the first ``n_coordinates`` of them, default ``q``) to inputs, fitted once on
    the training points (coordinates ``E_p diag(sqrt(lam_p))``) and cached on the model.

Uncentered models (``center=False``, the spec's variant with ``mu = 0``): ``K_c``,
``Phi_c`` and ``m`` read ``K``, ``Phi`` and ``0``, so the generated vector is the raw
``k = Phi^T psi`` (nothing to un-center) and ``alpha = K^+ k``. The marginal model is
centred at the *origin* of feature space, not at the data: for the RBF kernel many
samples (and codes such as ``h = -1``) have negative inner products with every
training point, which is where the smoother's fallback above applies.

Here ``alpha = K_c^+ k_c`` are the dual coefficients, ``psi - m = Phi_c alpha``: for
latent codes ``alpha = A h``; for other vectors the full eigendecomposition after
a dense fit, and after a partial fit a cached Cholesky solve with
``K_c + (tr K_c / N^2) 1 1^T`` (positive definite when the raw Gram matrix is,
and equal to ``K_c`` on ``range(K_c)``), or the full eigendecomposition when the
Cholesky factorisation is not reliable.

Default: ``"smoother"`` keeping the 10 largest weights (the paper's pre-image with
the spec's "keep the n largest weights" stabilisation). In
``benchmarks/generation_quality.py`` (MNIST, N = 2000, q = 10, RBF bandwidth 5) its
samples get a classifier confidence of 0.82 (real held-out digits: 0.85), cover
all ten classes, and lie at a mean distance 3.0 from their nearest training digit
(held-out real digits: 5.2; copies: 0), i.e. blends of a few neighbours rather
than copies; it costs one (n, N) matrix product. With all weights the smoother
returns near-mean images (confidence 0.24); ``"knn"`` is as good but closer to
copying; ``"fixed-point"`` and ``"learned"`` keep the class balance of the model
better but give noisy or blurred digits (confidence 0.49 and 0.65). Known bias of
the neighbour-based methods: training points close to the feature-space mean
("hubs", e.g. thin 1s) are picked more often, so the class histogram is skewed.
Integer ``n_neighbors`` above ``N`` are clamped to ``N``.

Primal model: with the identity feature map the features are the inputs and no
pre-image is needed (``preimage`` and its options are validated, then
ignored). With another map the same four methods run through the map's
induced kernel ``feature_map_.as_kernel()``, except ``"fixed-point"``, which
needs an RBF kernel and raises :class:`NotImplementedError`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from .._linalg import cholesky_or_none, map_row_blocks
from .._param_validation import Interval, Options, check_scalar, validate_parameter_constraints
from .._validation import ArrayLike, as_tensor, check_count
from ..kernels import RBF, KernelCenterer
from ..kernels.base import Kernel
from ..preimage import (
    LearnedPreimage,
    dual_coefficients_to_expansion,
    feature_space_sq_distances,
    fixed_point_preimage,
    knn_preimage,
    uncenter_kernel_vectors,
)
from ..preimage._common import check_n_neighbors
from ..preimage.smoother import _smooth
from ..preimage.uncenter import ROW_MEAN_ESTIMATES

__all__ = [
    "GenerationMixin",
    "DualGenerationMixin",
    "PrimalGenerationMixin",
    "PREIMAGE_METHODS",
    "PREIMAGE_OPTIONS",
    "DEFAULT_PREIMAGE",
    "resolve_preimage",
]

#: The pre-image methods accepted by ``preimage=``.
PREIMAGE_METHODS: tuple[str, ...] = ("smoother", "knn", "fixed-point", "learned")

#: The default pre-image method (chosen with ``benchmarks/generation_quality.py``).
DEFAULT_PREIMAGE = "smoother"

#: Options of each method and their defaults (pass them as keywords, e.g. ``n_neighbors=10``).
PREIMAGE_OPTIONS: dict[str, dict[str, Any]] = {
    "smoother": {"estimate": "span", "n_neighbors": 10, "clip_negative": True, "epsilon": 0.0},
    "knn": {"n_neighbors": 5, "weighting": "distance"},
    "fixed-point": {"init": "smoother", "max_iter": 100, "tol": 1e-6},
    "learned": {"n_coordinates": None, "bandwidth": None, "alpha": 0.1},
}


def resolve_preimage(preimage: str | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Validate a pre-image method name and its options; return ``(name, options with defaults)``.

    Names are case-insensitive and ``_`` may replace ``-`` (``"fixed_point"``).

    Raises
    ------
    ValueError
        Unknown method, or an option the method does not take.
    """
    if preimage is None:
        preimage = DEFAULT_PREIMAGE
    if not isinstance(preimage, str):
        raise TypeError(f"preimage must be a method name (one of {', '.join(PREIMAGE_METHODS)}), got {preimage!r}.")
    name = preimage.strip().lower().replace("_", "-")
    if name not in PREIMAGE_OPTIONS:
        raise ValueError(f"preimage={preimage!r} is unknown; use one of {', '.join(PREIMAGE_METHODS)}.")
    defaults = PREIMAGE_OPTIONS[name]
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for preimage={name!r}; it accepts: {', '.join(defaults)}."
        )
    opts = {**defaults, **options}
    _check_option_values(name, opts)
    return name, opts


#: What each option value may be, in the package's validation vocabulary. Bounds that depend on
#: the training set (``n_neighbors > N`` is clamped, ``n_coordinates <= rank``) are checked where
#: they are known.
_COUNT = Interval("int", 1, None, closed="left")
_POSITIVE = Interval("real", 0, None, closed="neither")
_NONNEGATIVE = Interval("real", 0, None, closed="left")
PREIMAGE_CONSTRAINTS: dict[str, dict[str, list[Any]]] = {
    "smoother": {
        "estimate": [Options(ROW_MEAN_ESTIMATES), Interval("real", None, None), np.ndarray, torch.Tensor, list],
        "n_neighbors": [_COUNT, None],
        "clip_negative": ["boolean"],
        "epsilon": [_NONNEGATIVE],
    },
    "knn": {"n_neighbors": [_COUNT], "weighting": [Options(("uniform", "distance"))]},
    "fixed-point": {
        "init": [Options(("best", "smoother")), np.ndarray, torch.Tensor, list],
        "max_iter": [_COUNT],
        "tol": [_NONNEGATIVE],
    },
    "learned": {"n_coordinates": [_COUNT, None], "bandwidth": [_POSITIVE, None], "alpha": [_POSITIVE]},
}


def _check_option_values(name: str, opts: dict[str, Any]) -> None:
    """Validate the values of a method's options up front (:data:`PREIMAGE_CONSTRAINTS`), so that
    every model checks them, including the primal model with the identity map, which never
    calls a pre-image."""
    validate_parameter_constraints(PREIMAGE_CONSTRAINTS[name], opts, f"preimage={name!r}")


def _at_most(n_neighbors: Any, N: int) -> Any:
    """Clamp an integer ``n_neighbors`` to the training-set size (other values go to the library checks)."""
    if isinstance(n_neighbors, numbers.Integral) and not isinstance(n_neighbors, bool) and n_neighbors > N:
        return N
    return n_neighbors


@dataclass
class _Training:
    """What the pre-image methods need from the training set, in kernel terms."""

    X: torch.Tensor  # (N, D) training inputs
    centerer: KernelCenterer  # fitted: column_means_ = K 1 / N, grand_mean_ = 1^T K 1 / N^2
    diag_centered: torch.Tensor  # (N,) (K_c)_ii = |phi_i - m|^2
    kernel: Kernel

    @property
    def center(self) -> bool:
        return bool(self.centerer.center)


class GenerationMixin:
    """Pre-image driven generation shared by the primal and dual models (see the module docstring).

    Subclasses provide ``_training_context()``, ``_inputs_from_latent(h, method, opts)``
    and ``_coordinates_of(p, basis, k_c)``.
    """

    # ------------------------------------------------------------------ caches
    def _gen_cache(self) -> dict:
        """Per-fit cache (Cholesky factor, learned maps); emptied when the model is refitted."""
        cache = self.__dict__.get("_gen_cache_")
        if cache is None or cache.get("X_fit") is not self.X_fit_:
            cache = {"X_fit": self.X_fit_}
            self.__dict__["_gen_cache_"] = cache
        return cache

    # ------------------------------------------------------------------ public API
    def inverse_transform(self, h: ArrayLike, preimage: str | None = None, **preimage_options: Any) -> Any:
        """Inputs generated by latent codes: the pre-image of the conditional mean.

        Dual: ``k_c = K_c A h`` (the mean of ``k_c | h``); primal: ``W h + m``.

        Parameters
        ----------
        h : array-like of shape (M, q) or (q,)
        preimage : str, optional
            One of :data:`PREIMAGE_METHODS` (default :data:`DEFAULT_PREIMAGE`).
        **preimage_options
            Options of that method (:data:`PREIMAGE_OPTIONS`).

        Returns
        -------
        ndarray or Tensor of shape (M, D)
            numpy unless ``h`` is a tensor.
        """
        self._check_fitted("inverse_transform")
        method, opts = resolve_preimage(preimage, preimage_options)
        return self._output(self._inputs_from_latent(self._latent(h), method, opts), h)

    def latent_traversal(
        self,
        components: tuple[int, ...] = (0, 1),
        n_steps: int = 8,
        extent: float | tuple[float, float] = 2.0,
        preimage: str | None = None,
        *,
        return_codes: bool = False,
        **preimage_options: Any,
    ) -> Any:
        """Inputs over a regular grid of latent codes (paper, Fig. 4c).

        The chosen components run over ``n_steps`` evenly spaced values in
        ``[-extent, extent]`` (or ``[lo, hi]``); all other components are 0. Each
        code ``h`` is mapped to inputs like :meth:`inverse_transform`.

        Parameters
        ----------
        components : tuple of one or two int, default (0, 1)
            Latent components (0-based, ``< q``). The first varies along the
            columns (left to right, increasing), the second along the rows
            (top to bottom, decreasing, as on a plot's vertical axis).
        n_steps : int, default 8
            Values per component (>= 2).
        extent : float or (float, float), default 2.0
            Range of each varied component, in prior standard deviations (the
            prior is ``N(0, I)``); the paper uses 1.
        preimage, **preimage_options
            As in :meth:`inverse_transform`.
        return_codes : bool, default False
            Also return the codes, shape (rows, n_steps, q).

        Returns
        -------
        grid : ndarray or Tensor of shape (rows, n_steps, D)
            ``rows = n_steps`` for two components, 1 for one. numpy when the
            model was fitted on numpy data.
        codes : same type, shape (rows, n_steps, q), only if ``return_codes``
        """
        self._check_fitted("latent_traversal")
        method, opts = resolve_preimage(preimage, preimage_options)
        codes = self._traversal_codes(components, n_steps, extent)
        rows, cols, q = codes.shape
        X = self._inputs_from_latent(codes.reshape(-1, q), method, opts).reshape(rows, cols, -1)
        if return_codes:
            return self._output(X), self._output(codes)
        return self._output(X)

    # ------------------------------------------------------------------ helpers
    def _traversal_codes(self, components: Any, n_steps: Any, extent: Any) -> torch.Tensor:
        q = self.n_components_
        if isinstance(components, numbers.Integral) and not isinstance(components, bool):
            components = (components,)
        comps = tuple(components)
        if not 1 <= len(comps) <= 2 or any(
            isinstance(c, bool) or not isinstance(c, numbers.Integral) for c in comps
        ):
            raise ValueError(f"components must be one or two integer component indices, got {components!r}.")
        comps = tuple(int(c) for c in comps)
        if any(not 0 <= c < q for c in comps):
            raise ValueError(f"components {comps} out of range: the model has q = {q} components (indices 0..{q - 1}).")
        if len(comps) == 2 and comps[0] == comps[1]:
            raise ValueError(f"components must be two different indices, got {comps}.")
        n_steps = check_count(n_steps, "n_steps", minimum=2)
        if isinstance(extent, numbers.Real) and not isinstance(extent, bool):
            lo, hi = -float(extent), float(extent)
        else:
            try:
                lo, hi = (float(v) for v in extent)
            except (TypeError, ValueError):
                raise ValueError(f"extent must be a positive number or a pair (lo, hi), got {extent!r}.") from None
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"extent must give a finite range lo < hi, got {extent!r}.")
        t = torch.linspace(lo, hi, int(n_steps), dtype=self._dtype, device=self._device)
        rows = len(t) if len(comps) == 2 else 1
        codes = torch.zeros((rows, len(t), q), dtype=self._dtype, device=self._device)
        codes[:, :, comps[0]] = t[None, :]
        if len(comps) == 2:
            codes[:, :, comps[1]] = t.flip(0)[:, None]
        return codes

    def _preimage(
        self,
        method: str,
        opts: dict[str, Any],
        k_c: torch.Tensor,
        alpha: torch.Tensor,
        coordinates: Callable[[int, str], tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """Map feature-space points given by ``k_c`` and ``alpha`` (both (M, N)) to inputs (M, D).

        ``coordinates(p, basis)`` returns ``(train_coords (N, p), new_coords (M, p))`` for the
        learned map.
        """
        ctx = self._training_context()
        if k_c.shape[0] == 0:
            return ctx.X.new_zeros((0, ctx.X.shape[1]))
        rows = self._block_rows()
        if method == "learned":
            p, basis = self._learned_dimension(opts["n_coordinates"])
            learned = self._learned_map(p, basis, opts["bandwidth"], opts["alpha"])
            _, Z = coordinates(p, basis)
            return map_row_blocks(learned.predict, Z, rows)
        out = [
            self._preimage_chunk(method, opts, ctx, k_c[i : i + rows], alpha[i : i + rows], i)
            for i in range(0, k_c.shape[0], rows)
        ]
        return torch.cat(out)

    def _preimage_chunk(
        self, method: str, opts: dict[str, Any], ctx: _Training, k_c: torch.Tensor, alpha: torch.Tensor, start: int
    ) -> torch.Tensor:
        N = ctx.X.shape[0]
        if method == "smoother":
            estimate = opts["estimate"]
            if isinstance(estimate, str) and estimate == "span":
                # Exact row mean for psi - m = Phi_c alpha: s = 1^T K 1/N^2 + (K 1/N - 1^T K 1/N^2)^T alpha.
                cm, gm = ctx.centerer.column_means_, ctx.centerer.grand_mean_
                estimate = gm + alpha @ (cm - gm)
            W = uncenter_kernel_vectors(k_c, ctx.centerer, estimate)
            n_neighbors = check_n_neighbors(_at_most(opts["n_neighbors"], N), N, allow_none=True)
            out, bad = _smooth(W, ctx.X, n_neighbors, bool(opts["clip_negative"]), float(opts["epsilon"]))
            if bool(bad.any()):
                # psi has no positive similarity to the training points it keeps (e.g. the uncentered
                # model, whose samples are symmetric about the origin of feature space, or a code like
                # h = -1): the weighted mean is undefined. The nearest training points in feature space
                # are always defined; they are the smoother's own choice (the largest weights) when
                # k(x, x) is constant (RBF), weighted by 1 / distance instead of by the weights.
                k = n_neighbors if n_neighbors is not None else PREIMAGE_OPTIONS["knn"]["n_neighbors"]
                out[bad] = self._knn_chunk(ctx, k_c[bad], alpha[bad], min(k, N), "distance")
            return out
        if method == "knn":
            return self._knn_chunk(ctx, k_c, alpha, _at_most(opts["n_neighbors"], N), opts["weighting"])
        if method == "fixed-point":
            if not isinstance(ctx.kernel, RBF):
                raise NotImplementedError(
                    f"preimage='fixed-point' is derived for the RBF (Gaussian) kernel only; this model's kernel is "
                    f"{type(ctx.kernel).__name__}. Use 'smoother', 'knn' or 'learned'."
                )
            gamma = dual_coefficients_to_expansion(alpha) if ctx.center else alpha
            init = opts["init"]
            if not isinstance(init, str):
                init = as_tensor(init, "init", dtype=k_c.dtype, device=k_c.device)[start : start + k_c.shape[0]]
            return fixed_point_preimage(gamma, ctx.X, ctx.kernel, init=init, max_iter=opts["max_iter"], tol=opts["tol"])
        raise AssertionError(method)  # pragma: no cover - resolve_preimage validated it

    @staticmethod
    def _knn_chunk(ctx: _Training, k_c: torch.Tensor, alpha: torch.Tensor, n_neighbors: Any, weighting: str) -> torch.Tensor:
        """k-nearest-neighbour pre-image of ``psi - m = Phi_c alpha`` from exact feature-space distances, (M, D)."""
        sq_norms = (alpha * k_c).sum(1).clamp(min=0.0)  # |psi - m|^2 = alpha^T K_c alpha
        D2 = feature_space_sq_distances(k_c, ctx.diag_centered, sq_norms)
        return knn_preimage(D2, ctx.X, n_neighbors=n_neighbors, weighting=weighting)

    def _learned_dimension(self, n_coordinates: Any) -> tuple[int, str]:
        """Number of principal coordinates of the learned map and the basis that provides them."""
        q, r = self.n_components_, self.rank_
        if n_coordinates is None:
            return q, "top"
        p = int(check_scalar(n_coordinates, "n_coordinates (at most the rank r, or None for q)",
                             [Interval("int", 1, r, closed="both")]))
        return p, ("top" if p <= q else "full")

    def _learned_map(self, p: int, basis: str, bandwidth: Any, ridge: Any) -> LearnedPreimage:
        cache = self._gen_cache()
        key = ("learned", p, basis, bandwidth, ridge)
        if key not in cache:
            Z_train, _ = self._coordinates_of(p, basis, None)
            cache[key] = LearnedPreimage(bandwidth=bandwidth, alpha=ridge).fit(Z_train, self._training_context().X)
        return cache[key]


class DualGenerationMixin(GenerationMixin):
    """Generation for :class:`~kppca.DualPPCA`: kernel vectors -> inputs (see the module docstring)."""

    # ------------------------------------------------------------------ public API
    def sample(
        self,
        n: int,
        random_state: Any = None,
        preimage: str | None = None,
        *,
        factor: str = "fast",
        **preimage_options: Any,
    ) -> Any:
        """Draw ``n`` new inputs: ``k_c ~ N(0, S)`` from the marginal model, then a pre-image.

        ``sample(n, random_state=s, factor=f)`` maps exactly the vectors of
        ``sample_kernel(n, random_state=s, factor=f)`` back to inputs.

        Parameters
        ----------
        n : int
        random_state : int, Generator or None
        preimage : str, optional
            One of :data:`PREIMAGE_METHODS` (default :data:`DEFAULT_PREIMAGE`).
        factor : {"fast", "symmetric"}, default "fast"
            Square root of ``S`` used to draw (same distribution), see :meth:`sampling_factor`.
        **preimage_options
            Options of the pre-image method (:data:`PREIMAGE_OPTIONS`).

        Returns
        -------
        ndarray or Tensor of shape (n, D)
            numpy when the model was fitted on numpy data.
        """
        self._check_fitted("sample")
        method, opts = resolve_preimage(preimage, preimage_options)
        k_c = self._as_model_tensor(self.sample_kernel(n, random_state=random_state, factor=factor))
        return self._output(self._inputs_from_kernel(k_c, self._dual_coefficients(k_c), method, opts))

    def reconstruct(self, X: ArrayLike, preimage: str | None = None, **preimage_options: Any) -> Any:
        """Denoised inputs: the pre-image of the MAP reconstruction :meth:`reconstruct_kernel`.

        ``(k_c)_MAP = E_q diag(1 - N sigma2 / lam) E_q^T k_c(x)``, i.e.
        ``inverse_transform(transform(X))``. With ``sigma2 -> 0`` it is the kernel
        PCA projection.

        Parameters
        ----------
        X : array-like of shape (M, D)
        preimage, **preimage_options
            As in :meth:`sample`.

        Returns
        -------
        ndarray or Tensor of shape (M, D), the type of ``X``.
        """
        self._check_fitted("reconstruct")
        method, opts = resolve_preimage(preimage, preimage_options)
        Xt = self._input(X)
        shrink = 1.0 - self.n_samples_ * self.sigma2_ / self.eigenvalues_
        coef = self._project(Xt, self.eigenvectors_) * shrink  # E_q^T (k_c)_MAP
        E, lam = self.eigenvectors_, self.eigenvalues_
        return self._output(self._inputs_from_kernel(coef @ E.T, (coef / lam) @ E.T, method, opts), X)

    def kernel_preimage(self, K_c_rows: ArrayLike, preimage: str | None = None, **preimage_options: Any) -> Any:
        """Inputs for arbitrary centered kernel vectors (e.g. draws of :meth:`kernel_conditional`).

        Each row is read as the point ``psi = m + Phi_c K_c^+ k_c`` (its projection on
        ``m + span{phi_i - m}``, exact for vectors in ``range(K_c)``).

        Parameters
        ----------
        K_c_rows : array-like of shape (M, N) or (N,)
        preimage, **preimage_options
            As in :meth:`sample`.

        Returns
        -------
        ndarray or Tensor of shape (M, D) (or (D,) for one vector), the type of ``K_c_rows``.
        """
        self._check_fitted("kernel_preimage")
        method, opts = resolve_preimage(preimage, preimage_options)
        k_c = as_tensor(K_c_rows, "K_c_rows", ndim=(1, 2), dtype=self._dtype, device=self._device)
        single = k_c.ndim == 1
        k_c = k_c[None] if single else k_c
        if k_c.shape[1] != self.n_samples_:
            raise ValueError(
                f"K_c_rows has {k_c.shape[1]} columns but the model was fitted on {self.n_samples_} points."
            )
        alpha = self._dual_coefficients(k_c)
        k_c = self._centered_gram() @ alpha.T  # the projection on range(K_c) that alpha represents
        out = self._inputs_from_kernel(k_c.T, alpha, method, opts)
        return self._output(out[0] if single else out, K_c_rows)

    # ------------------------------------------------------------------ internals
    def _as_model_tensor(self, A: Any) -> torch.Tensor:
        return torch.as_tensor(A).to(dtype=self._dtype, device=self._device)

    def _training_context(self) -> _Training:
        cache = self._gen_cache()
        if "context" not in cache:
            c = self.centerer_
            diag = self.kernel_.diag(self.X_fit_)
            if c.center:
                diag = diag - 2 * c.column_means_ + c.grand_mean_
            cache["context"] = _Training(self.X_fit_, c, diag, self.kernel_)
        return cache["context"]

    def _inputs_from_latent(self, h: torch.Tensor, method: str, opts: dict[str, Any]) -> torch.Tensor:
        # k_c = K_c A h = E_q diag(lam a) h and psi - m = Phi_c A h, so alpha = A h.
        a = torch.sqrt(1.0 / self.n_samples_ - self.sigma2_ / self.eigenvalues_)
        E = self.eigenvectors_
        return self._inputs_from_kernel((h * (self.eigenvalues_ * a)) @ E.T, (h * a) @ E.T, method, opts)

    def _inputs_from_kernel(self, k_c: torch.Tensor, alpha: torch.Tensor, method: str, opts: dict) -> torch.Tensor:
        def coordinates(p: int, basis: str) -> tuple[torch.Tensor, torch.Tensor]:
            return self._coordinates_of(p, basis, k_c)

        return self._preimage(method, opts, k_c, alpha, coordinates)

    def _coordinates_of(self, p: int, basis: str, k_c: torch.Tensor | None) -> tuple[torch.Tensor, Any]:
        """Principal coordinates: training ``E_p sqrt(lam_p)`` and new ``k_c E_p / sqrt(lam_p)``."""
        if basis == "top":
            lam, E = self.eigenvalues_[:p], self.eigenvectors_[:, :p]
        else:
            values, vectors = self._full_eigen()
            lam, E = values[:p], vectors[:, :p]
        root = lam.sqrt()
        return E * root, (None if k_c is None else (k_c @ E) / root)

    def _dual_coefficients(self, k_c: torch.Tensor) -> torch.Tensor:
        """``alpha = K_c^+ k_c`` for a batch (M, N) (see the module docstring).

        The route depends only on the fit (eigenbasis after a dense fit, Cholesky solve
        after a partial one), so results do not change with what was cached since.
        """
        if self.eigen_solver_ != "dense":
            L = self._coefficient_factor()
            if L is not None:
                alpha = torch.cholesky_solve(k_c.T, L).T
                return alpha - alpha.mean(1, keepdim=True) if self.center else alpha
        values, vectors = self._full_eigen()
        return ((k_c @ vectors) / values) @ vectors.T

    def _coefficient_factor(self) -> torch.Tensor | None:
        """Cholesky factor of ``K_c + (tr K_c / N^2) 1 1^T`` (``K`` when uncentered), or None if unreliable."""
        cache = self._gen_cache()
        if "coef_factor" not in cache:
            K_c = self._centered_gram()
            N = K_c.shape[0]
            G = K_c + float(K_c.diagonal().sum()) / N**2 if self.center else K_c.clone()
            L = cholesky_or_none(G)
            del G
            cache["coef_factor"] = L if L is not None and self.rank_ == N - int(self.center) else None
        return cache["coef_factor"]


class PrimalGenerationMixin(GenerationMixin):
    """Generation for :class:`~kppca.PrimalPPCA` (see the module docstring).

    With the identity feature map (classical PPCA) the features are the inputs:
    ``sample`` is :meth:`sample_features`, ``inverse_transform(h) = W h + m``,
    and the pre-image arguments are validated but not used. Other maps go through
    their induced kernel; ``"fixed-point"`` is not available there.
    """

    def sample(self, n: int, random_state: Any = None, preimage: str | None = None, **preimage_options: Any) -> Any:
        """Draw ``n`` new inputs: ``phi ~ N(m, W W^T + sigma2 I)`` on ``m + H_E``, then a pre-image.

        ``sample(n, random_state=s)`` maps exactly the features of
        ``sample_features(n, random_state=s)`` back to inputs (identity map: returns them).

        Returns
        -------
        ndarray or Tensor of shape (n, D)
            numpy when the model was fitted on numpy data.
        """
        self._check_fitted("sample")
        method, opts = resolve_preimage(preimage, preimage_options)
        feats = torch.as_tensor(self.sample_features(n, random_state=random_state)).to(self._dtype)
        return self._output(self._inputs_from_features(feats.to(self._device), None, method, opts))

    # ------------------------------------------------------------------ internals
    def _gen_cache(self) -> dict:
        # Every pre-image needs the training inputs; a model fitted from statistics has none.
        if "X_fit_" not in self.__dict__:
            raise ValueError(
                f"this {type(self).__name__} was fitted incrementally (partial_fit) or from a Dask array and keeps "
                f"no training inputs, which a pre-image through its feature map {type(self.feature_map_).__name__} "
                "needs (sample, inverse_transform, latent_traversal). Feature-space methods work: sample_features, "
                "reconstruct, transform, score_samples, novelty_score. For inputs, refit with fit(X) on in-memory "
                "data (the identity feature map needs no pre-image)."
            )
        return super()._gen_cache()

    def _is_identity(self) -> bool:
        from ..features.base import Identity

        return isinstance(self.feature_map_, Identity)

    def _inputs_from_latent(self, h: torch.Tensor, method: str, opts: dict[str, Any]) -> torch.Tensor:
        psi = h @ self.W_.T + self.mean_
        return self._inputs_from_features(psi, (self.eigenvalues_, self.components_.T), method, opts)

    def _centered_train_features(self) -> torch.Tensor:
        cache = self._gen_cache()
        if "Phi_c" not in cache:
            cache["Phi_c"] = self.feature_map_.map(self.X_fit_) - self.mean_
        return cache["Phi_c"]

    def _training_context(self) -> _Training:
        cache = self._gen_cache()
        if "context" not in cache:
            Phi_c = self._centered_train_features()
            m = self.mean_
            centerer = KernelCenterer(bool(self.center))
            centerer.column_means_ = Phi_c @ m + m @ m  # K 1/N with K = Phi Phi^T
            centerer.grand_mean_ = m @ m
            diag = (Phi_c**2).sum(1)
            cache["context"] = _Training(self.X_fit_, centerer, diag, self.feature_map_.as_kernel())
        return cache["context"]

    def _inputs_from_features(
        self, psi: torch.Tensor, basis: tuple[torch.Tensor, torch.Tensor] | None, method: str, opts: dict
    ) -> torch.Tensor:
        """Inputs for feature vectors ``psi`` (M, d) in ``m + H_E``.

        ``basis = (lam, V)`` spans the part of ``H_E`` where ``psi - m`` lives
        (default: all of ``H_E``).
        """
        if self._is_identity():
            return psi
        lam, V = basis if basis is not None else self._full_eigen()
        Phi_c = self._centered_train_features()
        y = (psi - self.mean_) @ V  # unit coordinates along the principal directions
        PV = Phi_c @ V  # (N, r) = E diag(sqrt(lam))
        k_c = (psi - self.mean_) @ Phi_c.T
        alpha = (y / lam) @ PV.T  # psi - m = Phi_c^T alpha

        def coordinates(p: int, which: str) -> tuple[torch.Tensor, torch.Tensor]:
            train, _ = self._coordinates_of(p, which, None)
            Vp = self.components_.T[:, :p] if which == "top" else self._full_eigen()[1][:, :p]
            return train, (psi - self.mean_) @ Vp

        return self._preimage(method, opts, k_c, alpha, coordinates)

    def _coordinates_of(self, p: int, basis: str, k_c: Any) -> tuple[torch.Tensor, None]:
        """Training principal coordinates ``Phi_c V_p`` (N, p)."""
        V = self.components_.T[:, :p] if basis == "top" else self._full_eigen()[1][:, :p]
        return self._centered_train_features() @ V, None
