"""Deep RKM classifier: KPCA levels in the dual, a primal LS-SVM or MLP head (classifier paper, §3).

It minimises ``J(H) = -sum_j 1/(2 eta) Tr(H_j^T K_{j-1} H_j) + head(H_L)`` over the stacked hidden features
``H = [H_1 ... H_L]`` with ``H^T H = I`` (``K_{j-1}``: centred Gram matrices, of the input kernel for ``j = 1``,
on the rows of ``H_{j-1}`` after), on the Stiefel manifold (:func:`kppca.optim.minimize`). The LS-SVM head is
eliminated exactly by its primal ridge solve for each ``H``; the MLP head is trained alternately with ``H``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from ..._linalg.threads import compute_section
from ..._param_validation import Integral, Interval, Real, StrOptions, check_sequence, fit_context
from ..._validation import ArrayLike, precision_advice, torch_generator
from ...base import RUNTIME_CONSTRAINTS, KernelEstimator
from ...io import register
from ...kernels import RBF, CenteredGram, Kernel, Linear, squared_distances
from ...kernels.gram import center_gram
from ...optim import minimize, project_stiefel, random_stiefel
from ...preimage.bandwidth_search import loo_bandwidth_search
from ..shallow import check_psd_kernel, resolve_kernel, top_spectrum
from ..lssvm import solve_lssvm_primal
from ._state import BinaryDeepModel, DeepRKMClassifierState, class_scores, mlp_scores, smoother_codes
from .levels import KPCALevel, Level

__all__ = ["DEFAULT_SMOOTHER_GRID", "BinaryDeepModel", "DeepRKMClassifier"]

#: Multiples of the median nearest-neighbour distance tried for the smoother width.
DEFAULT_SMOOTHER_GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0)


class StackedKPCA:
    """The deep KPCA part of ``J`` for one fit: the centred first Gram matrix ``K0`` (N, N) is fixed."""

    def __init__(self, levels: Sequence[Level], K0: torch.Tensor):
        self.levels, self.K0 = list(levels), K0
        self.sizes = [lev.width(0) for lev in self.levels]

    def terms(self, H: torch.Tensor) -> torch.Tensor:
        """The objective at the stacked ``H`` (N, sum s_j); a scalar tensor with ``H``'s graph."""
        parts = torch.split(H, self.sizes, dim=1)
        total = self.levels[0].kpca_term(parts[0], self.K0)
        for j in range(1, len(parts)):
            Kj = center_gram(self.levels[j].kernel.gram(parts[j - 1], parts[j - 1]))
            total = total + self.levels[j].kpca_term(parts[j], Kj)
        return total


#: Adam steps on the MLP per round.
ADAM_STEPS = 5


def fit_mlp_model(kpca, codes: torch.Tensor, H0: torch.Tensor, gen: torch.Generator, *, n_classes: int,
                  hidden: int, ridge: float, max_iter: int, train_levels: bool):
    """Train the levels and the MLP head; returns ``(BinaryDeepModel, mlp params, input scale)``. One projected
    gradient step on ``H`` (MLP frozen) alternates with :data:`ADAM_STEPS` Adam steps on the (He-initialised) MLP."""
    s_L = kpca.sizes[-1]
    kw = {"dtype": H0.dtype, "device": H0.device}
    params = [
        torch.randn(s_L, hidden, generator=gen, **kw) * math.sqrt(2.0 / s_L),
        torch.zeros(hidden, **kw),
        torch.randn(hidden, n_classes, generator=gen, **kw) * math.sqrt(2.0 / hidden),
        torch.zeros(n_classes, **kw),
    ]
    # Codes have entries ~ 1/sqrt(N): feed the MLP sqrt(N) h so its scale does not depend on N.
    scale = math.sqrt(codes.shape[0])

    def head(Z: torch.Tensor, P: list) -> torch.Tensor:
        return 0.5 / ridge * torch.nn.functional.cross_entropy(mlp_scores(Z, P, scale), codes, reduction="sum")

    H, hist, state = H0, [], None
    for _ in range(max_iter):
        if train_levels:
            frozen = [q.detach() for q in params]
            H = minimize(lambda Hh, P=frozen: kpca.terms(Hh) + head(Hh[:, -s_L:], P), H, method="pgd",
                         manifold="stiefel", max_iter=1, warn=False).x
        res = minimize(lambda *P, Z=H[:, -s_L:]: head(Z, list(P)), params, method="adam", manifold=None,
                       max_iter=ADAM_STEPS, lr=1e-2, state=state, warn=False)
        params, state = res.x, res.state
        with torch.no_grad():
            hist.append(float(kpca.terms(H) + head(H[:, -s_L:], params)))
    model = BinaryDeepModel(H=H, w=None, b=None, history=hist, n_iter=max_iter, converged=False)
    return model, [q.detach() for q in params], scale


def _ridge_head(Z: torch.Tensor, y: torch.Tensor, ridge: float, eta: float):
    """Exact LS-SVM head on codes Z (N, s) for ±1 targets y (N,): (value, w, b), differentiable in Z
    (``(1 - y f)^2 = (y - f)^2`` for ``y = ±1``: the primal LS-SVM solve)."""
    sol = solve_lssvm_primal(Z, y[:, None], ridge, eta)
    w, b = sol.coef[:, 0], sol.intercept[0]
    r = y - (Z @ w + b)
    return 0.5 / ridge * (r * r).sum() + 0.5 * eta * (w * w).sum(), w, b


@register(name="kppca.DeepRKMClassifier")
class DeepRKMClassifier(ClassifierMixin, KernelEstimator):
    """Deep RKM classifier: L kernel PCA levels in the dual and a primal LS-SVM or MLP head.

    Parameters
    ----------
    n_components : sequence of int or int, default (3, 3)
        ``[s_1, ..., s_L]``, components per KPCA level (L = its length); an int is one level.
    kernel : Kernel, str, callable or None, default "rbf"
        Input kernel of level 1. "rbf" is ``RBF()`` with its width resolved on the training inputs
        (scikit-learn's ``gamma="scale"``; stored in ``kernel_``).
    level_kernel : {"rbf", "linear"} or Kernel, default "rbf"
        Kernel of levels 2..L on the rows of the previous level's ``H``. "rbf" has the fixed bandwidth
        ``sqrt(2 s_{j-1} / N)``, the RMS distance between rows of an (N, s) matrix with orthonormal columns.
    head : {"lssvm", "mlp"}, default "lssvm"
    init : {"kpca", "random"}, default "kpca"
        ``"kpca"``: level 1 at its kernel principal components, then the unsupervised deep KPCA first.
    fine_tune : bool, default True
        After ``init="kpca"``, train the levels with the labels (False: only the head).
    eta : float > 0, default 1.0
        ``eta_j`` of every level and ``eta`` of the head (the paper uses 1).
    ridge : float > 0, default 0.5
        Weight ``1/(2 ridge)`` of the classification loss (the paper's ``lambda = 0.5``).
    max_iter : int, default 100
        Iterations of each of the unsupervised and supervised phases.
    tol : float, default 1e-6
    optimizer : {"pgd", "geoopt"}, default "pgd"
        Projected gradient with Armijo steps, or geoopt's Riemannian steepest descent with an Armijo line
        search (:func:`kppca.optim.minimize`); the MLP head always uses the projected gradient.
    hidden_layer_size : int, default 10
        Width of the MLP head's hidden layer.
    smoother_bandwidth : float, {"loo", "kernel"} or None, default None
        Width of the Gaussian smoother that gives new points their codes (the paper's ``sigma~``). None or
        ``"loo"``: the width of ``smoother_grid`` with the best leave-one-out accuracy (near the nearest-neighbour
        limit, as the fitted codes encode the labels). ``"kernel"``: the RBF ``kernel_``'s own width, averaging
        many training codes (less accurate on MNIST: docs/papers.md). A float fixes the width.
    smoother_grid : sequence of float or None, default None
        Multiples of the median nearest-neighbour distance (default :data:`DEFAULT_SMOOTHER_GRID`).
    random_state : int, Generator or None
    progress : bool, default False
    dtype, device

    Attributes
    ----------
    classes_ : ndarray of shape (p,)
    models_ : list of BinaryDeepModel
        One per binary problem (LS-SVM head, p > 2), else one.
    hidden_features_ : list of Tensor
        ``H`` of each model.
    n_components_ : list of int
    smoother_bandwidth_ : float
    smoother_scores_ : dict
        Width -> LOO training accuracy (empty when ``smoother_bandwidth`` is given).
    kernel_ : Kernel
    X_fit_ : Tensor of shape (N, D)
    mlp_params_ : list of Tensor
        MLP head weights (``head="mlp"``).
    """

    _state_type = DeepRKMClassifierState

    _parameter_constraints = {
        "n_components": [list, tuple, Interval(Integral, 1, None, closed="left")],
        "kernel": [Kernel, str, callable, None],
        "level_kernel": [Kernel, StrOptions({"rbf", "linear"})],
        "head": [StrOptions({"lssvm", "mlp"})],
        "init": [StrOptions({"kpca", "random"})],
        "fine_tune": ["boolean"],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "ridge": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "optimizer": [StrOptions({"pgd", "geoopt"})],
        "hidden_layer_size": [Interval(Integral, 1, None, closed="left")],
        "smoother_bandwidth": [Interval(Real, 0, None, closed="neither"), StrOptions({"loo", "kernel"}), None],
        "smoother_grid": [list, tuple, None],
        **RUNTIME_CONSTRAINTS,
    }
    _fitted_marker = "models_"

    def __init__(self, n_components: Sequence[int] = (3, 3), *, kernel: Any = "rbf", level_kernel: Any = "rbf",
                 head: str = "lssvm", init: str = "kpca", fine_tune: bool = True, eta: float = 1.0,
                 ridge: float = 0.5, max_iter: int = 100, tol: float = 1e-6, optimizer: str = "pgd",
                 hidden_layer_size: int = 10, smoother_bandwidth: float | str | None = None,
                 smoother_grid: Sequence[float] | None = None, random_state: Any = None, progress: bool = False,
                 dtype: Any = None, device: Any = None):
        self._store_params(locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

    def _level_kernel(self, sizes: list[int], j: int, N: int) -> Kernel:
        """Kernel on the rows of H_{j-1} for level j >= 2."""
        if isinstance(self.level_kernel, Kernel):
            return self.level_kernel
        if self.level_kernel == "linear":
            return Linear()
        return RBF(math.sqrt(2.0 * sizes[j - 1] / N))

    def _minimize(self, objective, H0: torch.Tensor, desc: str):
        """One call of the optimisation layer on the Stiefel manifold."""
        method = "line_search" if self.optimizer == "geoopt" else "pgd"
        res = minimize(objective, H0, method=method, manifold="stiefel", max_iter=int(self.max_iter),
                       tol=float(self.tol), progress=bool(self.progress), desc=desc, warn=False)
        return res.x.detach(), list(res.history), int(res.n_iter), bool(res.converged)

    def _initial_H(self, kpca: StackedKPCA, E: torch.Tensor, N: int, gen: torch.Generator) -> torch.Tensor:
        s = sum(kpca.sizes)
        if self.init == "random":
            return random_stiefel(N, s, generator=gen, dtype=self._dtype, device=self._device)
        # Level 1 starts at its kernel principal components; the other levels at random directions
        # orthogonal to them (joint constraint), then the unsupervised deep KPCA.
        R = torch.randn(N, s, generator=gen, dtype=self._dtype, device=gen.device).to(self._device)
        R[:, : kpca.sizes[0]] = E[:, : kpca.sizes[0]]
        H, hist, _, _ = self._minimize(kpca.terms, project_stiefel(R), "deep KPCA (unsupervised)")
        self.unsupervised_history_ = hist
        return H

    def _fit_lssvm_model(self, kpca: StackedKPCA, y: torch.Tensor, H0: torch.Tensor, desc: str) -> BinaryDeepModel:
        ridge, eta, s_L = float(self.ridge), float(self.eta), kpca.sizes[-1]

        def objective(H: torch.Tensor) -> torch.Tensor:
            return kpca.terms(H) + _ridge_head(H[:, -s_L:], y, ridge, eta)[0]

        if self.init == "kpca" and not self.fine_tune:
            with torch.no_grad():
                H, hist, n_iter, conv = H0, [float(objective(H0))], 0, True
        else:
            H, hist, n_iter, conv = self._minimize(objective, H0, desc)
        with torch.no_grad():
            _, w, b = _ridge_head(H[:, -s_L:], y, ridge, eta)
        return BinaryDeepModel(H=H, w=w[:, None], b=b.reshape(1), history=hist, n_iter=n_iter, converged=conv)

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepRKMClassifier:
        """Train on inputs ``X`` (N, D) and labels ``y`` (N,). Returns ``self``."""
        Xt, codes = self._validate_fit_input(X, y, target="classes")
        N = Xt.shape[0]
        sizes = [int(s) for s in check_sequence(self.n_components, "n_components",
                                                [Interval(Integral, 1, None, closed="left")], repeat=1,
                                                what="[s_1, ..., s_L]")]
        if sum(sizes) > N:
            raise ValueError(f"the levels need sum(n_components) = {sum(sizes)} orthonormal columns but there are only "
                             f"N = {N} training points; use fewer components or more points.")
        grid = DEFAULT_SMOOTHER_GRID
        if self.smoother_grid is not None:
            grid = tuple(float(g) for g in check_sequence(
                self.smoother_grid, "smoother_grid", [Interval(Real, 0, None, closed="neither")],
                what="of multiples of the median nearest-neighbour distance (e.g. [0.5, 1.0, 2.0])"))
        rbf = isinstance(self.kernel, str) and self.kernel.lower() == "rbf"
        if rbf and bool((Xt == Xt[:1]).all()):  # no distance to take the width from
            raise ValueError("X has no two distinct rows (all training inputs coincide), so no kernel can "
                             "separate the classes; check X." + precision_advice(Xt.dtype))
        self.kernel_ = resolve_kernel(self.kernel, Xt)
        gram = CenteredGram(self.kernel_, Xt, what="Gram matrix of `kernel` on X",
                            advice="Choose kernel parameters suited to the scale of X, or rescale X.")
        # The core's scale check, a kernel that is not PSD refused (as the LS-SVM's system does), and level 1's
        # principal components from the package's one kernel PCA solve (its rank-0 and rank messages).
        K0 = gram.matrix
        check_psd_kernel(gram)
        spec = top_spectrum(gram, sizes[0])
        eta = float(self.eta)
        levels = [KPCALevel(sizes[0], eta, self.kernel_)] + [
            KPCALevel(sizes[j], eta, self._level_kernel(sizes, j, N)) for j in range(1, len(sizes))]
        kpca = StackedKPCA(levels, K0)
        gen = torch_generator(self.random_state, self._device)
        H0 = self._initial_H(kpca, spec.vectors, N, gen)
        p = len(self.classes_)
        if self.head == "mlp":
            model, self.mlp_params_, self.mlp_input_scale_ = fit_mlp_model(
                kpca, codes, H0, gen, n_classes=p, hidden=int(self.hidden_layer_size), ridge=float(self.ridge),
                max_iter=int(self.max_iter), train_levels=bool(self.fine_tune or self.init == "random"))
            self.models_ = [model]
        else:
            problems = [1] if p == 2 else list(range(p))
            models = []
            for k in problems:
                yk = torch.where(codes == k, 1.0, -1.0).to(self._dtype)
                # Each binary model has its own levels; with init="kpca" they share the unsupervised start.
                start = H0 if self.init == "kpca" else random_stiefel(N, sum(sizes), generator=gen,
                                                                      dtype=self._dtype, device=self._device)
                models.append(self._fit_lssvm_model(kpca, yk, start, f"binary model {k}"))
            self.models_ = models
        self.n_components_ = sizes
        self.X_fit_ = Xt
        self.hidden_features_ = [m.H for m in self.models_]
        self.n_iter_ = max(m.n_iter for m in self.models_)
        self._choose_bandwidth(Xt, codes, grid)
        late = [k for k, m in enumerate(self.models_) if not m.converged]
        if self.head == "lssvm" and late:
            warnings.warn(f"DeepRKMClassifier: the optimiser stopped before convergence for model(s) {late} after "
                          f"max_iter={self.max_iter} iterations (tol={self.tol:g}); increase max_iter or loosen tol.",
                          ConvergenceWarning, stacklevel=4)  # fit's caller (through fit_context, compute_section)
        return self

    def _scores_from_codes(self, Z: list[torch.Tensor]) -> torch.Tensor:
        """Class scores (M, p) (binary LS-SVM: (M, 1)) from last-level codes of each model (the fitted head)."""
        return class_scores(Z, self.models_, getattr(self, "mlp_params_", None),
                            getattr(self, "mlp_input_scale_", None))

    @staticmethod
    def _labels_from_scores(S: torch.Tensor) -> torch.Tensor:
        return (S[:, 0] > 0).long() if S.shape[1] == 1 else S.argmax(1)

    def _choose_bandwidth(self, X: torch.Tensor, codes: torch.Tensor, grid: tuple[float, ...]) -> None:
        self.smoother_scores_ = {}
        if self.smoother_bandwidth == "kernel":
            if not isinstance(self.kernel_, RBF):
                raise ValueError(f"smoother_bandwidth='kernel' takes the width of an RBF kernel, but kernel is "
                                 f"{self.kernel_!r}; pass an RBF kernel, a number, or smoother_bandwidth='loo'.")
            self.smoother_bandwidth_ = float(self.kernel_.bandwidth)
            return
        if self.smoother_bandwidth not in (None, "loo"):
            self.smoother_bandwidth_ = float(self.smoother_bandwidth)
            return
        last = [m.H[:, -self.n_components_[-1]:] for m in self.models_]
        p = len(self.classes_)
        target = None if self.head == "mlp" else (
            torch.where(codes == 1, 1.0, -1.0)[:, None] if p == 2
            else 2.0 * torch.nn.functional.one_hot(codes, p) - 1.0)

        def evaluate(Z: list[torch.Tensor]) -> tuple[float, float]:
            S = self._scores_from_codes(Z)
            acc = float((self._labels_from_scores(S) == codes).double().mean())
            if target is None:
                return acc, float(torch.nn.functional.cross_entropy(S, codes))
            return acc, float(((S - target.to(S.dtype)) ** 2).mean())

        D_loo = squared_distances(X, X).fill_diagonal_(float("inf"))  # a point may not vote for itself
        self.smoother_bandwidth_, self.smoother_scores_, self.median_nn_distance_ = loo_bandwidth_search(
            D_loo, grid, last, evaluate)

    def _codes(self, X: torch.Tensor) -> list[torch.Tensor]:
        """Smoother codes of new points for every model (nearest training points for far queries)."""
        return smoother_codes(X, self.X_fit_, self.smoother_bandwidth_, self.models_, self.n_components_[-1])

    def latent_codes(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Out-of-sample last-level codes (M, s_L) per model, concatenated: (M, n_models * s_L)."""
        Xt = self._validate_new_input(X, method="latent_codes")
        return self._to_output(torch.cat(self._codes(Xt), dim=1), like=X)

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Scores: (M,) for two classes (positive means ``classes_[1]``), else (M, n_classes)."""
        S = self._scores_from_codes(self._codes(self._validate_new_input(X, method="decision_function")))
        if len(self.classes_) == 2:
            S = S[:, 0] if S.shape[1] == 1 else S[:, 1] - S[:, 0]
        return self._to_output(S, like=X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class labels (M,)."""
        S = self._scores_from_codes(self._codes(self._validate_new_input(X, method="predict")))
        return self.classes_[self._labels_from_scores(S).cpu().numpy()]

    def plot_history(self, ax: Any = None) -> Any:
        """Objective per iteration of every deep model (see :func:`kppca.plotting.spectrum.plot_history`)."""
        from ...plotting.spectrum import plot_history

        self._check_fitted("plot_history")
        return plot_history([m.history for m in self.models_], ax=ax)
