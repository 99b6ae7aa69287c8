"""Multi-view kernel PCA as a Restricted Kernel Machine, in primal and dual form (see docs/theory).

Both forms give the same ``H`` and ``Gamma``, exactly: the signs are fixed on ``H``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import torch
from sklearn.exceptions import ConvergenceWarning

from .._linalg.threads import compute_section
from .._linalg import flip_signs, rank_tolerance
from .._param_validation import Integral, Interval, Real, StrOptions, fit_context
from .._validation import as_tensor, check_feature_names, numpy_rng, torch_generator
from ..base import RUNTIME_CONSTRAINTS, KernelEstimator, KernelTransformerMixin
from ..io import ListOf, TensorSpec, register
from ..io.record import EstimatorState, fitted
from .shallow import check_rank, top_spectrum
from .multiview_inference import MultiViewInference
from ..optim import STIEFEL_METHODS, OptimizeResult, minimize, random_stiefel
from .views import FittedView, TrainingView, overflow_error, resolve_view_specs, split_views

__all__ = ["MultiViewKPCA"]


def _sym_power(G: torch.Tensor, power: float) -> torch.Tensor:
    """``G^power`` of a symmetric positive definite ``G`` by eigendecomposition."""
    w, Q = torch.linalg.eigh(G)
    return (Q * w.pow(power)) @ Q.T


#: Constraints of the solver parameters, shared by the models built on :class:`MultiViewKPCA`.
SOLVER_CONSTRAINTS: dict[str, list[Any]] = {
    "form": [StrOptions(("auto", "primal", "dual"))],
    "solver": [StrOptions(("eig", "stiefel"))],
    "rotate": ["boolean"],
    "rescale": ["boolean"],
    "stiefel_method": [StrOptions(STIEFEL_METHODS)],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="left")],
}


_COUNT = Interval(Integral, 1, None, closed="left")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MultiViewState(EstimatorState):
    """:class:`MultiViewKPCA`'s record (``s = n_components_``); ``n_features_in_`` exists for one 2-D input only."""

    n_features_in_: int = fitted(_COUNT, optional=True)
    solver_result_: OptimizeResult | None = fitted(OptimizeResult, None)
    _gamma_diagonal: bool = fitted("boolean")
    form_: str = fitted(StrOptions({"primal", "dual"}))
    n_views_: int = fitted(_COUNT)
    n_samples_: int = fitted(_COUNT)
    views_: list = fitted(ListOf([FittedView], length="n_views_"))
    _single_view_input_: bool = fitted("boolean")
    n_iter_: int = fitted(_COUNT)
    view_widths_: list = fitted(ListOf([_COUNT], length="n_views_"))
    hidden_features_: torch.Tensor = fitted(TensorSpec(shape=("n_samples_", "n_components_")))
    Gamma_: torch.Tensor = fitted(TensorSpec(shape=("n_components_", "n_components_")))
    eigenvalues_: torch.Tensor = fitted(TensorSpec(shape=("n_components_",)))
    n_components_: int = fitted(_COUNT)
    U_: list = fitted(ListOf([TensorSpec(shape=(None, "n_components_")), None], length="n_views_"))

    def check(self) -> str | None:
        """Each view's training block and feature mean agree with the model's sizes."""
        for v, (view, width, U) in enumerate(zip(self.views_, self.view_widths_, self.U_)):
            if tuple(view.X_fit_.shape) != (self.n_samples_, width):
                return f"views_[{v}].X_fit_ has shape {tuple(view.X_fit_.shape)}, expected ({self.n_samples_}, {width})"
            mean = view.phi_mean_
            if (U is None) != (mean is None) or (U is not None and U.shape[0] != mean.shape[0]):
                return f"U_[{v}] and views_[{v}].phi_mean_ disagree on the view's feature dimension"
        return None


@register(name="kppca.MultiViewKPCA")
class MultiViewKPCA(MultiViewInference, KernelTransformerMixin, KernelEstimator):
    """Multi-view kernel PCA (a shallow Restricted Kernel Machine) in primal or dual form.

    Parameters
    ----------
    n_components : int, default 2
        Number of hidden features ``s``.
    kernels : list of (Kernel, str, callable, FeatureMap or None), optional
        One kernel per view (None: linear), its data-derived widths resolved on that view; a
        :class:`~kppca.features.FeatureMap` is fitted on its view. Give either ``kernels`` or ``feature_maps``.
    feature_maps : list of (FeatureMap or None), optional
        One explicit map per view (None: :class:`~kppca.features.Identity`), cloned and fitted on its view.
    form : {"auto", "primal", "dual"}, default "auto"
        Solve on ``C = Phi^T Phi`` (primal, needs explicit maps) or on ``K`` (dual); ``"auto"``: the primal
        when every view has an explicit map and ``d_f < n``.
    solver : {"eig", "stiefel"}, default "eig"
        Eigenvectors, or minimise ``-1/2 Tr(H^T K H)`` on the Stiefel manifold (:func:`~kppca.optim.minimize`).
    rotate : bool, default True
        Stiefel only: rotate ``H`` to diagonalise ``Gamma`` (the eig solution up to column signs).
    rescale : bool, default True
        ``U = U~ Gamma^{1/2}`` (Algorithm 1 step 6); False is the paper's Fig. 7 ablation (ruins forecasts).
    center : bool, default True
        Center every view in feature space with its training mean.
    stiefel_method : str, default "sgd"
        Optimiser of :func:`~kppca.optim.minimize` (``"adam"``, ``"sgd"``, ``"line_search"``, ``"cg"``).
    max_iter : int, default 5000
    tol : float, default 1e-8
        Stiefel stopping rule on the relative Riemannian gradient norm.
    progress : bool, default False
        Progress bar of the Stiefel solver.
    random_state : int, Generator or None
        Starting point of the Stiefel solver and of Lanczos.
    dtype : {"float64", "float32"} or None, default None (float64 unless the data are float32)
    device : str or torch.device, optional

    Attributes
    ----------
    form_ : str
    n_views_ : int
    n_samples_ : int
    hidden_features_ : Tensor (n, s)
        Hidden features of the training points (orthonormal columns when ``rescale``).
    Gamma_ : Tensor (s, s)
        ``Lam`` (diagonal) or the unrotated ``Gamma'``.
    eigenvalues_ : Tensor (s,)
        Eigenvalues of ``Gamma_``, descending.
    U_ : list of (Tensor (d_v, s) or None)
        Interconnection matrices ``Phi_v^T H`` of views with an explicit map.
    views_ : list of :class:`~kppca.rkm.views.FittedView`
    solver_result_ : OptimizeResult or None
        Outcome of the Stiefel solver.
    n_iter_ : int
        Stiefel steps (1 for the direct eigen solve).
    n_features_in_ : int
        Width of the input when ``fit`` got a single 2-D array (one view).
    """

    _state_type = MultiViewState

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernels": [list, tuple, None],
        "feature_maps": [list, tuple, None],
        **SOLVER_CONSTRAINTS,
        "center": ["boolean"],
        **RUNTIME_CONSTRAINTS,
    }

    _fitted_marker = "hidden_features_"

    def __init__(
        self,
        n_components: int = 2,
        *,
        kernels: Sequence[Any] | None = None,
        feature_maps: Sequence[Any] | None = None,
        form: str = "auto",
        solver: str = "eig",
        rotate: bool = True,
        rescale: bool = True,
        center: bool = True,
        stiefel_method: str = "sgd",
        max_iter: int = 5000,
        tol: float = 1e-8,
        progress: bool = False,
        random_state: Any = None,
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    @fit_context
    @compute_section
    def fit(self, views: Any, y: Any = None) -> MultiViewKPCA:
        """Fit on ``views``, a list of arrays (n, d_v) (one per view; a single array is one view); ``y`` is ignored."""
        items, single = split_views(views)
        if any(v is None for v in items):
            raise ValueError("views passed to fit must all be given (no None): every view is needed for training.")
        first = items[0]
        self._begin_fit(first)
        dtype, device = self._dtype, self._device
        Xs = [as_tensor(X, f"views[{i}]", dtype=dtype, device=device, min_samples=2) for i, X in enumerate(items)]
        n = Xs[0].shape[0]
        for i, X in enumerate(Xs[1:], start=1):
            if X.shape[0] != n:
                raise ValueError(
                    f"views[{i}] has {X.shape[0]} rows but views[0] has {n}: every view must describe the same "
                    "n points (one row per point, in the same order)."
                )
        specs = resolve_view_specs(len(Xs), self.kernels, self.feature_maps)
        training = [TrainingView(X, kernel, fmap, self.center) for X, (kernel, fmap) in zip(Xs, specs)]
        explicit = all(v.explicit for v in training)
        dims = [v.feature_map_.map(v.X_fit_[:1]).shape[1] if v.explicit else None for v in training]
        form = self.form
        if form == "auto":
            form = "primal" if explicit and sum(dims) < n else "dual"
        if form == "primal" and not explicit:
            bad = [i for i, v in enumerate(training) if not v.explicit]
            raise ValueError(
                f"form='primal' needs an explicit feature map for every view; view(s) {bad} only have a kernel. "
                "Use form='dual', or give feature_maps (e.g. kppca.features.RandomFourierFeatures for an RBF kernel)."
            )
        s = int(self.n_components)
        max_rank = n - int(self.center)
        rng = numpy_rng(self.random_state)
        gen = torch_generator(self.random_state, torch.device("cpu"))
        self.solver_result_ = None
        grams: dict[int, torch.Tensor] = {}
        if form == "primal":
            # Explicit views never need the n x n Gram matrix (nor the kernel centerer) in the primal.
            Phi = torch.cat([v.features() for v in training], dim=1)
            d_f = Phi.shape[1]
            if s > min(d_f, max_rank):
                raise ValueError(
                    f"n_components={s} exceeds the rank bound min(d_f={d_f}, n - center={max_rank}); lower n_components."
                )
            C = Phi.T @ Phi
            scale = float(Phi.pow(2).sum(1).max())
            U_t, Gamma = self._solve(C, s, "multi-view covariance C", scale, n, None, rng, gen)
            G_half_inv = _sym_power(Gamma, -0.5)
            # H = Phi U Gamma^{-1} = Phi U~ Gamma^{-1/2} (rescaled), Phi U~ Gamma^{-1} (not rescaled).
            H = Phi @ U_t @ (G_half_inv if self.rescale else G_half_inv @ G_half_inv)
        else:
            K = torch.zeros(n, n, dtype=dtype, device=device)
            scale = 0.0
            for i, v in enumerate(training):
                Kv = v.gram()
                K += Kv
                scale += v.raw_scale_
                if not v.explicit:
                    # Kept until H is known (then reduced to K_v H, n x s): decoding never rebuilds K_v.
                    grams[i] = Kv
            H, Gamma = self._solve(K, s, "multi-view kernel matrix K", scale, n, max_rank, rng, gen)
            if not self.rescale:
                # The same model as the primal without rescaling: U = U~ = Phi^T H Gamma^{-1/2}.
                H = H @ _sym_power(Gamma, -0.5)
        if self._gamma_diagonal:
            H = flip_signs(H)
        self.form_ = form
        self.n_views_ = len(training)
        self.n_samples_ = n
        if single:  # as scikit-learn: only defined for one 2-D array
            self.n_features_in_ = Xs[0].shape[1]
            check_feature_names(self, first, reset=True)
        self._single_view_input_ = single
        # A direct solve counts as one iteration (scikit-learn's convention for max_iter estimators).
        self.n_iter_ = max(1, self.solver_result_.n_iter) if self.solver_result_ is not None else 1
        self.view_widths_ = [X.shape[1] for X in Xs]
        self.hidden_features_ = H
        self.Gamma_ = Gamma
        self.eigenvalues_ = torch.linalg.eigvalsh(Gamma).flip(0)
        self.n_components_ = s
        # U_v = Phi_v^T H for explicit views: the primal interconnection matrices in both forms.
        self.U_ = [(v.features().T @ H) if v.explicit else None for v in training]
        self.views_ = [v.finish(H, U, grams.pop(i, None)) for i, (v, U) in enumerate(zip(training, self.U_))]
        return self

    def _solve(self, A, s, what, scale, size, max_rank, rng, gen):
        """Top-``s`` directions ``W`` of ``A`` and ``Gamma = W^T A W`` (eig or Stiefel, rotated or not)."""
        self._gamma_diagonal = self.solver == "eig" or bool(self.rotate)
        if not bool(torch.isfinite(A).all()):  # before an eigensolver meets it (a raw LinAlgError)
            raise overflow_error(what, A.dtype)
        if self.solver == "eig":
            spec = top_spectrum(A, s, what=what, scale=scale, size=size, max_rank=max_rank, random_state=rng)
            return spec.vectors, torch.diag(spec.values)
        if max_rank is not None and s > max_rank:
            raise ValueError(f"n_components={s} exceeds the rank bound {max_rank} of the {what}; lower n_components.")
        W0 = random_stiefel(A.shape[0], s, generator=gen, dtype=A.dtype, device=A.device)
        result = minimize(
            lambda W: -0.5 * torch.trace(W.T @ A @ W), W0, max_iter=int(self.max_iter), tol=float(self.tol),
            method=self.stiefel_method, manifold="stiefel", progress=bool(self.progress), desc=f"Stiefel ({what})",
            warn=False,  # the ConvergenceWarning below says more
        )
        self.solver_result_ = result
        if not result.converged:
            warnings.warn(
                f"The Stiefel solver ({self.stiefel_method!r}) did not converge on the {what}: the relative "
                f"Riemannian gradient norm is above tol={self.tol:g} after {result.n_iter} of max_iter="
                f"{self.max_iter} steps (gradient norm {result.grad_norm:.3g}). The result is an approximate "
                "top-s subspace; increase max_iter, loosen tol, or use solver='eig'.",
                ConvergenceWarning,
                stacklevel=5,  # the caller of fit (through fit_context and compute_section)
            )
        W = result.H
        Gamma = W.T @ A @ W
        Gamma = 0.5 * (Gamma + Gamma.T)
        # The eig route's rank check without a full eigendecomposition: at the optimum the eigenvalues of
        # Gamma' are the top-s eigenvalues of A, so one at rounding level means s exceeds the rank.
        lam = torch.linalg.eigvalsh(Gamma)
        check_rank(lam, rank_tolerance(float(lam.max()), size, A.dtype, scale), s, what,
                   found_by=" found by the Stiefel solver")
        if self.rotate:
            lam, O = torch.linalg.eigh(Gamma)
            lam, O = lam.flip(0), O.flip(1)
            W = W @ O
            Gamma = torch.diag(lam)
        return W, Gamma
