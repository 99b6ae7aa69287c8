"""Deep RKM classifier: KPCA levels in the dual, a primal LS-SVM or MLP head (classifier paper, §3).

Model (one binary problem, labels ``y_i`` in {-1, +1}; rows are points)::

    J(H, w, b) = - sum_j 1/(2 eta) Tr(H_j^T K_{j-1} H_j)
                 + 1/(2 lambda) sum_i (1 - y_i (w^T h_i^(L) + b))^2 + eta/2 w^T w
    subject to H^T H = I for the stacked H = [H_1 ... H_L]  (N x sum_j s_j)

``K_0`` is the centred Gram matrix of the input kernel; ``K_{j-1}`` (j >= 2) the
centred Gram matrix of a kernel on the rows of ``H_{j-1}``, so it moves with
``H``. The head is linear in ``h^(L)`` (``phi`` = identity), as in the paper.

Training
--------
Projected gradient on ``H`` (:func:`~kppca.rkm.projected_gradient.projected_gradient`:
gradient step, polar-factor projection onto the Stiefel manifold, Armijo
backtracking, so ``J`` never increases). ``w, b`` are not projected; we
eliminate them exactly: for fixed ``H`` the head is a ridge problem whose
minimiser is the LS-SVM primal solution, so ``J(H) = min_{w,b} J(H, w, b)`` is
minimised (same stationary points as stepping ``w, b`` by gradient, and the
gradient in ``H`` is the partial one by the envelope theorem).
``optimizer="geoopt"`` hands the same objective to the Riemannian optimisers of
:func:`kppca.rkm.solvers.stiefel_minimize`.

Initialisation: ``init="kpca"`` first solves the unsupervised deep KPCA
(only the KPCA terms, started from the level-1 kernel principal components)
and then fine-tunes with the labels (``fine_tune=True``) or only fits the head
(``fine_tune=False``); ``init="random"`` starts from N(0, 1) entries projected
onto the manifold (end-to-end training).

Multiclass: with the LS-SVM head one-vs-all means ``p`` *binary deep models*,
each with its own KPCA levels (the paper's "p binary classifiers"; one shared
s-dimensional code with a p-output least-squares head cannot separate 10
classes with s = 3); the class is the argmax of the p scores. The MLP head
(one hidden ReLU layer, cross-entropy, Adam) is natively multiclass on one
shared code.

Out-of-sample codes: a new point gets
``h* = sum_i k~(x_i, x*) h_i^(L) / sum_i k~(x_i, x*)`` from
:func:`kppca.preimage.kernel_smoother` with a Gaussian ``k~`` on the inputs (each
row of weights divided by its largest entry, which leaves the ratio unchanged and
keeps it defined for points far from all training points).
Test accuracy depends mostly on its width, so unless ``smoother_bandwidth`` is
given it is chosen on the training data: the leave-one-out codes (the
smoother with the point itself removed) are fed to the trained head for each
width ``c * d_nn`` (``d_nn`` the median nearest-neighbour distance of the
training inputs, ``c`` in ``smoother_grid``), and the width with the highest
LOO accuracy wins (ties: the lowest LOO squared error of the scores, then the
larger width).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets

from .._linalg import eigh_descending
from .._param_validation import Interval, Options, fit_context
from .._validation import (
    ArrayLike,
    check_new_input,
    as_tensor,
    check_feature_names,
    is_numpy_like,
    resolve_device,
    resolve_dtype,
    to_output,
    torch_generator,
)
from ..kernels import RBF, Kernel, Linear, squared_distances
from ..kernels.registry import as_kernel
from ..preimage import kernel_smoother, median_heuristic_bandwidth
from .projected_gradient import project_stiefel, projected_gradient

__all__ = ["DEFAULT_SMOOTHER_GRID", "DeepRKMClassifier"]

#: Multiples of the median nearest-neighbour distance tried for the smoother width.
DEFAULT_SMOOTHER_GRID = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0)


def _center(K: torch.Tensor) -> torch.Tensor:
    """``M K M`` out of place (differentiable)."""
    r = K.mean(0, keepdim=True)
    return K - r - r.T + r.mean()


@dataclass
class _Level:
    """Fitted state of one deep model (one binary problem, or the shared MLP code)."""

    H: torch.Tensor  # (N, s) stacked hidden features, orthonormal columns
    w: torch.Tensor | None = None  # (s_L, p_out) head weights (LS-SVM) or None
    b: torch.Tensor | None = None
    history: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False


class DeepRKMClassifier(ClassifierMixin, BaseEstimator):
    """Deep RKM classifier: L kernel PCA levels in the dual and a primal LS-SVM or MLP head.

    Parameters
    ----------
    n_components : sequence of int or int, default (3, 3)
        ``[s_1, ..., s_L]``, components per KPCA level (L = its length); an int is one level.
    kernel : Kernel, str, callable or None, default "rbf"
        Input kernel of level 1. The string "rbf" means an RBF kernel whose
        bandwidth is the median pairwise distance of the training inputs.
    level_kernel : {"rbf", "linear"} or Kernel, default "rbf"
        Kernel of levels 2..L on the rows of the previous level's ``H``. "rbf"
        uses the bandwidth ``sqrt(2 s_{j-1} / N)``, the RMS distance between
        rows of an (N, s) matrix with orthonormal columns (fixed during training
        so the objective stays smooth).
    head : {"lssvm", "mlp"}, default "lssvm"
    init : {"kpca", "random"}, default "kpca"
    fine_tune : bool, default True
        After ``init="kpca"``, train the levels with the labels (False: only the head).
    eta : float > 0, default 1.0
        ``eta_j`` of every level and ``eta`` of the head (the paper uses 1).
    lambda_ : float > 0, default 0.5
        Weight ``1/(2 lambda)`` of the classification loss (the paper uses 0.5).
    max_iter : int, default 100
        Projected-gradient iterations (for each of the unsupervised and supervised phases).
    tol : float, default 1e-6
    optimizer : {"pgd", "geoopt"}, default "pgd"
        Projected gradient with Armijo steps, or geoopt's Riemannian steepest descent
        with an Armijo line search through :func:`kppca.rkm.solvers.stiefel_minimize`
        (``method="line_search"``; LS-SVM head and the unsupervised initialisation;
        the MLP head always uses the projected gradient).
    hidden_layer_size : int, default 10
        Width of the MLP head's hidden layer.
    smoother_bandwidth : float or None, default None
        Width ``sigma~`` of the Gaussian kernel smoother for out-of-sample codes;
        None chooses it by leave-one-out accuracy over ``smoother_grid``.
    smoother_grid : sequence of float or None, default None
        Multiples of the median nearest-neighbour distance (default :data:`DEFAULT_SMOOTHER_GRID`).
    random_state : int, Generator or None
    progress : bool, default False
    dtype, device

    Attributes
    ----------
    classes_ : ndarray of shape (p,)
    models_ : list
        One fitted deep model per binary problem (LS-SVM head, p > 2), else one;
        each has ``H`` (N, sum s_j), ``w``, ``b``, ``history`` (objective per iteration).
    hidden_features_ : list of Tensor
        ``H`` of each model.
    smoother_bandwidth_ : float
    smoother_scores_ : dict
        Width -> LOO training accuracy (empty when ``smoother_bandwidth`` is given).
    kernel_ : Kernel
    X_fit_ : Tensor of shape (N, D)
    """

    _parameter_constraints = {
        "n_components": [list, tuple, Interval("int", 1, None, closed="left")],
        "kernel": [Kernel, str, callable, None],
        "level_kernel": [Kernel, Options({"rbf", "linear"})],
        "head": [Options({"lssvm", "mlp"})],
        "init": [Options({"kpca", "random"})],
        "fine_tune": ["boolean"],
        "eta": [Interval("real", 0, None, closed="neither")],
        "lambda_": [Interval("real", 0, None, closed="neither")],
        "max_iter": [Interval("int", 0, None, closed="left")],
        "tol": [Interval("real", 0, None, closed="left")],
        "optimizer": [Options({"pgd", "geoopt"})],
        "hidden_layer_size": [Interval("int", 1, None, closed="left")],
        "smoother_bandwidth": [Interval("real", 0, None, closed="neither"), None],
        "smoother_grid": [list, tuple, None],
        "random_state": ["random_state"],
        "progress": ["boolean"],
        "dtype": ["dtype"],
        "device": ["device"],
    }

    def __init__(
        self,
        n_components: Sequence[int] = (3, 3),
        *,
        kernel: Any = "rbf",
        level_kernel: Any = "rbf",
        head: str = "lssvm",
        init: str = "kpca",
        fine_tune: bool = True,
        eta: float = 1.0,
        lambda_: float = 0.5,
        max_iter: int = 100,
        tol: float = 1e-6,
        optimizer: str = "pgd",
        hidden_layer_size: int = 10,
        smoother_bandwidth: float | None = None,
        smoother_grid: Sequence[float] | None = None,
        random_state: Any = None,
        progress: bool = False,
        dtype: Any = None,
        device: Any = None,
    ):
        self.n_components = n_components
        self.kernel = kernel
        self.level_kernel = level_kernel
        self.head = head
        self.init = init
        self.fine_tune = fine_tune
        self.eta = eta
        self.lambda_ = lambda_
        self.max_iter = max_iter
        self.tol = tol
        self.optimizer = optimizer
        self.hidden_layer_size = hidden_layer_size
        self.smoother_bandwidth = smoother_bandwidth
        self.smoother_grid = smoother_grid
        self.random_state = random_state
        self.progress = progress
        self.dtype = dtype
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.non_deterministic = self.random_state is None
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "models_")

    # ------------------------------------------------------------------ objective pieces
    def _level_kernel(self, j: int, N: int) -> Kernel:
        """Kernel on the rows of H_{j-1} for level j >= 2 (index j-1 in ``sizes``)."""
        if isinstance(self.level_kernel, Kernel):
            return self.level_kernel
        if self.level_kernel == "linear":
            return Linear()
        return RBF(math.sqrt(2.0 * self._sizes[j - 1] / N))

    def _kpca_terms(self, H: torch.Tensor) -> torch.Tensor:
        """``- sum_j 1/(2 eta) Tr(H_j^T K_{j-1} H_j)`` for the stacked H."""
        eta = float(self.eta)
        parts = torch.split(H, self._sizes, dim=1)
        total = -0.5 / eta * (parts[0] * (self._K0 @ parts[0])).sum()
        for j in range(1, len(parts)):
            Kj = _center(self._level_kernels[j].gram(parts[j - 1], parts[j - 1]))
            total = total - 0.5 / eta * (parts[j] * (Kj @ parts[j])).sum()
        return total

    def _ridge_head(self, Z: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Exact LS-SVM head on codes Z (N, s) for ±1 targets y (N,): (value, w, b), differentiable in Z."""
        lam, eta = float(self.lambda_), float(self.eta)
        mu, ybar = Z.mean(0), y.mean()
        Zc, yc = Z - mu, y - ybar
        G = Zc.T @ Zc + lam * eta * torch.eye(Z.shape[1], dtype=Z.dtype, device=Z.device)
        w = torch.linalg.solve(G, Zc.T @ yc)
        b = ybar - mu @ w
        r = 1.0 - y * (Z @ w + b)
        return 0.5 / lam * (r * r).sum() + 0.5 * eta * (w * w).sum(), w, b

    def _last(self, H: torch.Tensor) -> torch.Tensor:
        return H[:, -self._sizes[-1]:]

    # ------------------------------------------------------------------ optimisation
    def _minimize(self, objective, H0: torch.Tensor, desc: str):
        if self.optimizer == "geoopt":
            from .solvers import (
                stiefel_minimize,  # part 1 of the RKM module (geoopt lives there only)
            )

            # The Armijo line search of geoopt: monotone like the projected gradient, so the two compare.
            res = stiefel_minimize(objective, H0, max_iter=int(self.max_iter), tol=float(self.tol), lr=None,
                                   method="line_search", progress=bool(self.progress), desc=desc)
            return res.H.detach(), list(res.history), int(res.n_iter), bool(res.converged)
        res = projected_gradient(objective, H0, max_iter=int(self.max_iter), tol=float(self.tol),
                                 progress=bool(self.progress), desc=desc)
        return res.H, res.history, res.n_iter, res.converged

    def _initial_H(self, N: int, gen: torch.Generator) -> torch.Tensor:
        s = sum(self._sizes)
        R = torch.randn(N, s, generator=gen, dtype=self._dtype, device=self._device)
        if self.init == "random":
            return project_stiefel(R)
        # Level 1 starts at its kernel principal components; the other levels at random
        # directions orthogonal to them (joint constraint), then the unsupervised deep KPCA.
        _, E = eigh_descending(self._K0)
        R[:, : self._sizes[0]] = E[:, : self._sizes[0]]
        H0 = project_stiefel(R)
        H, hist, _, _ = self._minimize(self._kpca_terms, H0, "deep KPCA (unsupervised)")
        self.unsupervised_history_ = hist
        return H

    def _fit_lssvm_model(self, y: torch.Tensor, H0: torch.Tensor, desc: str) -> _Level:
        def objective(H: torch.Tensor) -> torch.Tensor:
            return self._kpca_terms(H) + self._ridge_head(self._last(H), y)[0]

        if self.init == "kpca" and not self.fine_tune:
            H, hist, n_iter, conv = H0, [float(objective(H0))], 0, True
        else:
            H, hist, n_iter, conv = self._minimize(objective, H0, desc)
        with torch.no_grad():
            _, w, b = self._ridge_head(self._last(H), y)
        return _Level(H, w[:, None], b.reshape(1), hist, n_iter, conv)

    def _fit_mlp_model(self, codes: torch.Tensor, H0: torch.Tensor, gen: torch.Generator) -> _Level:
        p, s_L, hid = len(self.classes_), self._sizes[-1], int(self.hidden_layer_size)
        kw = {"dtype": self._dtype, "device": self._device}
        # He initialisation from the seeded generator (determinism for a seed).
        params = [
            (torch.randn(s_L, hid, generator=gen, **kw) * math.sqrt(2.0 / s_L)).requires_grad_(True),
            torch.zeros(hid, **kw).requires_grad_(True),
            (torch.randn(hid, p, generator=gen, **kw) * math.sqrt(2.0 / hid)).requires_grad_(True),
            torch.zeros(p, **kw).requires_grad_(True),
        ]
        # Codes have entries ~ 1/sqrt(N): feed the MLP sqrt(N) h so its scale does not depend on N.
        scale = math.sqrt(codes.shape[0])

        def head(Z: torch.Tensor, P: list) -> torch.Tensor:
            logits = torch.relu(scale * Z @ P[0] + P[1]) @ P[2] + P[3]
            return 0.5 / float(self.lambda_) * torch.nn.functional.cross_entropy(logits, codes, reduction="sum")

        adam = torch.optim.Adam(params, lr=1e-2)
        H = H0
        hist: list[float] = []
        for _it in range(int(self.max_iter)):
            if self.fine_tune or self.init == "random":
                # One Armijo projected-gradient step on H with the MLP frozen, then Adam steps on the MLP.
                frozen = [q.detach() for q in params]

                def objective(Hh: torch.Tensor, frozen: list = frozen) -> torch.Tensor:
                    return self._kpca_terms(Hh) + head(self._last(Hh), frozen)

                H = projected_gradient(objective, H, max_iter=1).H
            for _ in range(5):
                adam.zero_grad()
                loss = head(self._last(H), params)
                loss.backward()
                adam.step()
            with torch.no_grad():
                hist.append(float(self._kpca_terms(H) + head(self._last(H), params)))
        self._mlp = [q.detach() for q in params]
        self._mlp_scale = scale
        return _Level(H, None, None, hist, int(self.max_iter), False)

    # ------------------------------------------------------------------ fit
    @fit_context
    def fit(self, X: ArrayLike, y: ArrayLike) -> DeepRKMClassifier:
        """Train on inputs ``X`` (N, D) and labels ``y`` (N,). Returns ``self``."""
        if y is None:
            raise ValueError("DeepRKMClassifier requires y to be passed, but the target y is None.")
        self._dtype = resolve_dtype(self.dtype, like=X)
        self._device = resolve_device(self.device)
        check_feature_names(self, X, reset=True)
        Xt = as_tensor(X, "X", dtype=self._dtype, device=self._device, min_samples=2)
        self.n_features_in_ = Xt.shape[1]
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            import warnings

            warnings.warn("A column-vector y was passed when a 1d array was expected; it is raveled.",
                          DataConversionWarning, stacklevel=2)
            y_arr = y_arr.ravel()
        if y_arr.ndim != 1:
            raise ValueError(f"y must be 1-D class labels, got shape {y_arr.shape}.")
        check_classification_targets(y_arr)
        if y_arr.shape[0] != Xt.shape[0]:
            raise ValueError(f"X has {Xt.shape[0]} rows but y has {y_arr.shape[0]}; they must match.")
        enc = LabelEncoder().fit(y_arr)
        if len(enc.classes_) < 2:
            raise ValueError(f"y has only 1 class ({enc.classes_[0]!r}); classification needs at least 2 classes.")
        self.classes_ = enc.classes_
        codes = torch.as_tensor(enc.transform(y_arr), device=self._device)
        N = Xt.shape[0]
        comps = [self.n_components] if isinstance(self.n_components, (int, np.integer)) else list(self.n_components)
        sizes = [int(s) for s in comps]
        if not sizes or any(s < 1 for s in sizes) or any(isinstance(s, bool) for s in comps):
            raise ValueError(f"n_components must be a non-empty list of positive ints [s_1, ..., s_L], got {self.n_components!r}.")
        if sum(sizes) > N:
            raise ValueError(
                f"the levels need sum(n_components) = {sum(sizes)} orthonormal columns but there are only "
                f"N = {N} training points; use fewer components or more points."
            )
        self._sizes = sizes
        if isinstance(self.kernel, str) and self.kernel.lower() == "rbf":
            self.kernel_ = RBF(median_heuristic_bandwidth(Xt))
        else:
            self.kernel_ = copy.deepcopy(as_kernel(self.kernel))
        self._K0 = _center(self.kernel_.gram(Xt, Xt))
        if not bool(torch.isfinite(self._K0).all()):
            raise ValueError("the Gram matrix of `kernel` on X has NaN or infinite entries; check the kernel.")
        self._level_kernels = [None] + [self._level_kernel(j, N) for j in range(1, len(sizes))]
        gen = torch_generator(self.random_state, self._device)
        H0 = self._initial_H(N, gen)
        p = len(self.classes_)
        if self.head == "mlp":
            self.models_ = [self._fit_mlp_model(codes, H0, gen)]
        else:
            problems = [1] if p == 2 else list(range(p))
            models = []
            for k in problems:
                yk = torch.where(codes == k, 1.0, -1.0).to(self._dtype)
                # Each binary model has its own levels; with init="kpca" they share the unsupervised start.
                start = H0 if self.init == "kpca" else project_stiefel(
                    torch.randn(N, sum(sizes), generator=gen, dtype=self._dtype, device=self._device))
                models.append(self._fit_lssvm_model(yk, start, f"binary model {k}"))
            self.models_ = models
        self.X_fit_ = Xt
        self.hidden_features_ = [m.H for m in self.models_]
        self.n_iter_ = max(m.n_iter for m in self.models_)
        self._choose_bandwidth(Xt, codes)
        del self._K0
        return self

    # ------------------------------------------------------------------ scores
    def _scores_from_codes(self, Z: list[torch.Tensor]) -> torch.Tensor:
        """Class scores (M, p) (binary LS-SVM: (M, 1)) from last-level codes of each model."""
        if self.head == "mlp":
            P = self._mlp
            return torch.relu(self._mlp_scale * Z[0] @ P[0] + P[1]) @ P[2] + P[3]
        return torch.cat([z @ m.w + m.b for z, m in zip(Z, self.models_)], dim=1)

    def _labels_from_scores(self, S: torch.Tensor) -> torch.Tensor:
        return (S[:, 0] > 0).long() if S.shape[1] == 1 else S.argmax(1)

    @staticmethod
    def _nn_distance(D_loo: torch.Tensor) -> float:
        """Median distance to the nearest other training point, from squared distances with an infinite diagonal."""
        d = D_loo.min(1).values.clamp(min=0).sqrt()
        d = d[torch.isfinite(d) & (d > 0)]
        return float(d.median()) if d.numel() else 1.0

    def _choose_bandwidth(self, X: torch.Tensor, codes: torch.Tensor) -> None:
        self.smoother_scores_ = {}
        if self.smoother_bandwidth is not None:
            self.smoother_bandwidth_ = float(self.smoother_bandwidth)
            return
        grid = DEFAULT_SMOOTHER_GRID if self.smoother_grid is None else tuple(float(g) for g in self.smoother_grid)
        if not grid or any(not (g > 0) for g in grid):
            raise ValueError(f"smoother_grid must hold positive multiples of the nearest-neighbour distance, got {grid!r}.")
        D_loo = squared_distances(X, X).fill_diagonal_(float("inf"))  # a point may not vote for itself
        d_nn = self._nn_distance(D_loo)
        self.median_nn_distance_ = d_nn
        last = [self._last(m.H) for m in self.models_]
        if self.head == "mlp":
            target = None
        else:
            p = len(self.classes_)
            target = torch.where(codes == 1, 1.0, -1.0)[:, None] if p == 2 else (
                2.0 * torch.nn.functional.one_hot(codes, p) - 1.0)
        best = None
        for c in grid:
            bw = c * d_nn
            # Leave-one-out: a point may not vote for itself (infinite distance).
            W = self._smoother_weights(D_loo, bw)
            Z = [kernel_smoother(W, z) for z in last]
            S = self._scores_from_codes(Z)
            acc = float((self._labels_from_scores(S) == codes).double().mean())
            if target is None:
                err = float(torch.nn.functional.cross_entropy(S, codes))
            else:
                err = float(((S - target.to(S.dtype)) ** 2).mean())
            self.smoother_scores_[bw] = acc
            key = (acc, -err, bw)
            if best is None or key > best:
                best = key
        self.smoother_bandwidth_ = best[2]  # the grid is non-empty (checked above)

    def _check_fitted(self, method: str) -> None:
        if not hasattr(self, "models_"):
            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(X, y) before {method}().")

    def _input(self, X: ArrayLike) -> torch.Tensor:
        return check_new_input(self, X)

    def _codes(self, X: torch.Tensor) -> list[torch.Tensor]:
        """Smoother codes of new points for every model (the package's kernel smoother)."""
        W = self._smoother_weights(squared_distances(X, self.X_fit_), self.smoother_bandwidth_)
        return [kernel_smoother(W, self._last(m.H)) for m in self.models_]

    @staticmethod
    def _smoother_weights(D: torch.Tensor, bw: float) -> torch.Tensor:
        """Gaussian weights ``exp(-(d^2 - min_i d^2) / (2 bw^2))`` per row.

        Dividing a row by its largest weight leaves the smoother's ratio unchanged
        but keeps it defined for points far from every training point (whose raw
        weights all underflow to 0): they get the code of their nearest neighbours.
        """
        return torch.exp(-(D - D.min(1, keepdim=True).values) / (2.0 * bw * bw))

    def latent_codes(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Out-of-sample last-level codes (M, s_L) per model, concatenated: (M, n_models * s_L).

        (Not named ``transform``: the estimator is a classifier, not a transformer.)
        """
        self._check_fitted("latent_codes")
        Xt = self._input(X)
        return to_output(torch.cat(self._codes(Xt), dim=1), is_numpy_like(X))

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Scores: (M,) for two classes (positive means ``classes_[1]``), else (M, n_classes)."""
        self._check_fitted("decision_function")
        S = self._scores_from_codes(self._codes(self._input(X)))
        if len(self.classes_) == 2:
            S = S[:, 0] if S.shape[1] == 1 else S[:, 1] - S[:, 0]
        return to_output(S, is_numpy_like(X))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class labels (M,)."""
        self._check_fitted("predict")
        S = self._scores_from_codes(self._codes(self._input(X)))
        return self.classes_[self._labels_from_scores(S).cpu().numpy()]

    def plot_history(self, ax: Any = None) -> Any:
        """Objective per iteration of every deep model (matplotlib axes)."""
        import matplotlib.pyplot as plt

        self._check_fitted("plot_history")
        ax = ax or plt.gca()
        for k, m in enumerate(self.models_):
            ax.plot(m.history, label=f"model {k}" if len(self.models_) > 1 else None)
        ax.set_xlabel("iteration")
        ax.set_ylabel("objective J")
        return ax
