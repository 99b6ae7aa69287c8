"""Multi-view kernel PCA as a Restricted Kernel Machine, in primal and dual form.

Views ``v = 1..V`` with (centered) feature matrices ``Phi_v`` (n, d_v). The model
couples them through shared hidden features ``h_i`` (rows of ``H``, n x s):

* primal (Algorithm 1/3 of the multi-view paper): top ``s`` eigenvectors ``U~`` of
  ``C = Phi^T Phi`` with ``Phi = [Phi_1 ... Phi_V]``; rescaled ``U = U~ Lam^{1/2}``;
  ``H = Phi U Gamma^{-1}``;
* dual (Algorithm 2/4): top ``s`` eigenvectors ``H`` of ``K = sum_v M K_v M``;
  ``U_v = Phi_v^T H`` whenever view ``v`` has an explicit map.

After the rescaling both give the same ``H`` and ``Gamma = Lam`` (the signs are fixed
on ``H``, so they agree exactly, not only up to signs).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning

from .._linalg import flip_signs, rank_tolerance
from .._param_validation import Interval, Options, check_scalar, fit_context
from .._validation import (
    as_tensor,
    is_numpy_like,
    numpy_rng,
    resolve_device,
    resolve_dtype,
    to_output,
    torch_generator,
)
from ..preimage import kernel_smoother, uncenter_kernel_vectors
from .._linalg import full_spectrum, partial_spectrum
from ..optim import STIEFEL_METHODS, minimize, random_stiefel
from .views import FittedView, check_view_input, resolve_view_specs, split_views

__all__ = ["MultiViewKPCA"]

#: Pre-image methods accepted by :meth:`MultiViewKPCA.predict_view`.
PREIMAGE_METHODS = ("smoother",)


def _sym_power(G: torch.Tensor, power: float) -> torch.Tensor:
    """``G^power`` of a symmetric positive definite ``G`` by eigendecomposition."""
    w, Q = torch.linalg.eigh(G)
    return (Q * w.pow(power)) @ Q.T


class MultiViewKPCA(TransformerMixin, BaseEstimator):
    """Multi-view kernel PCA (a shallow Restricted Kernel Machine) in primal or dual form.

    Parameters
    ----------
    n_components : int, default 2
        Number of hidden features ``s``.
    kernels : list of (Kernel, str, callable or None), optional
        One kernel per view (None: linear). A linear kernel or a
        :class:`~kppca.features.FeatureMapKernel` has an explicit map, so it also works
        in the primal. Give either ``kernels`` or ``feature_maps``.
    feature_maps : list of (FeatureMap or None), optional
        One explicit map per view (None: :class:`~kppca.features.Identity`); each is
        cloned and fitted on its view.
    form : {"auto", "primal", "dual"}, default "auto"
        ``"primal"`` solves the ``d_f x d_f`` problem on ``C`` (needs explicit maps),
        ``"dual"`` the ``n x n`` problem on ``K``. ``"auto"`` takes the primal when every
        view has an explicit map and the total feature dimension ``d_f`` is below ``n``.
    solver : {"eig", "stiefel"}, default "eig"
        ``"eig"``: dense (or Lanczos) top-``s`` eigenvectors. ``"stiefel"``: minimise
        ``-1/2 Tr(H^T K H)`` (``-1/2 Tr(U~^T C U~)``) on the Stiefel manifold with geoopt
        (:func:`~kppca.optim.minimize`).
    rotate : bool, default True
        Stiefel only: diagonalise ``Gamma' = H'^T K H' = O Lam O^T`` and rotate ``H = H' O``,
        so the result equals the eig solution up to column signs. With False, ``H'`` and
        the non-diagonal ``Gamma'`` are kept.
    rescale : bool, default True
        ``U = U~ Gamma^{1/2}`` (Algorithm 1 step 6). With False, ``U = U~`` and
        ``H = Phi U~ Gamma^{-1}`` (the paper's Fig. 7 ablation, which ruins forecasts).
    center : bool, default True
        Center every view in feature space with its training mean.
    stiefel_method : str, default "sgd"
        Optimiser of :func:`~kppca.optim.minimize` (``"adam"``, ``"sgd"``,
        ``"line_search"``, ``"cg"``).
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
    H_ : Tensor (n, s)
        Hidden features of the training points (orthonormal columns when ``rescale``).
    Gamma_ : Tensor (s, s)
        ``Lam`` (diagonal) or the unrotated ``Gamma'``.
    eigenvalues_ : Tensor (s,)
        Eigenvalues of ``Gamma_``, descending.
    U_ : list of (Tensor (d_v, s) or None)
        Interconnection matrices of views with an explicit map (``Phi_v^T H_``).
    views_ : list of FittedView
        Per-view maps/kernels, centering statistics, training data and what inference and
        generation need from the training Gram matrices, reduced at fit time to ``n x s``
        arrays (``H^T K_c,v H``; ``K_c,v H`` and ``H^T (K_v 1 / n - grand mean)`` for
        kernel-only views; ``Phi_v U_v`` and ``Phi_v m_v`` for explicit non-identity maps;
        see :class:`~kppca.rkm.views.FittedView`): ``predict_view`` and ``sample`` never
        rebuild an ``n x n`` matrix. During ``fit`` (dual form) the centered Gram matrix
        of every kernel-only view is held until ``H`` is known, besides their sum ``K``.
    solver_result_ : OptimizeResult or None
        Outcome of the Stiefel solver; a :class:`sklearn.exceptions.ConvergenceWarning` is
        issued when it did not reach ``tol`` within ``max_iter`` steps.
    n_iter_ : int
        Stiefel steps (1 for the direct eigen solve).
    n_features_in_ : int
        Width of the input when ``fit`` got a single 2-D array (one view).
    """

    _parameter_constraints = {
        "n_components": [Interval("int", 1, None, closed="left")],
        "kernels": [list, tuple, None],
        "feature_maps": [list, tuple, None],
        "form": [Options(("auto", "primal", "dual"))],
        "solver": [Options(("eig", "stiefel"))],
        "rotate": ["boolean"],
        "rescale": ["boolean"],
        "center": ["boolean"],
        "stiefel_method": [Options(STIEFEL_METHODS)],
        "max_iter": [Interval("int", 1, None, closed="left")],
        "tol": [Interval("real", 0, None, closed="left")],
        "progress": ["boolean"],
        "random_state": ["random_state"],
        "dtype": ["dtype"],
        "device": ["device"],
    }

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
        self.n_components = n_components
        self.kernels = kernels
        self.feature_maps = feature_maps
        self.form = form
        self.solver = solver
        self.rotate = rotate
        self.rescale = rescale
        self.center = center
        self.stiefel_method = stiefel_method
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.random_state = random_state
        self.dtype = dtype
        self.device = device

    # ------------------------------------------------------------------------------------------
    # fit
    # ------------------------------------------------------------------------------------------

    @fit_context
    def fit(self, views: Any, y: Any = None) -> MultiViewKPCA:
        """Fit on ``views``, a list of arrays (n, d_v) (one per view; a single array is one view).

        ``y`` is ignored. A failed fit leaves a previously fitted model unchanged.
        """
        items, single = split_views(views)
        if any(v is None for v in items):
            raise ValueError("views passed to fit must all be given (no None): every view is needed for training.")
        first = items[0]
        self._numpy_fit_ = is_numpy_like(first)
        dtype = resolve_dtype(self.dtype, first)
        device = resolve_device(self.device)
        Xs = [as_tensor(X, f"views[{i}]", dtype=dtype, device=device, min_samples=2) for i, X in enumerate(items)]
        n = Xs[0].shape[0]
        for i, X in enumerate(Xs[1:], start=1):
            if X.shape[0] != n:
                raise ValueError(
                    f"views[{i}] has {X.shape[0]} rows but views[0] has {n}: every view must describe the same "
                    "n points (one row per point, in the same order)."
                )
        specs = resolve_view_specs(len(Xs), self.kernels, self.feature_maps)
        fitted: list[FittedView] = []
        for X, (kernel, fmap) in zip(Xs, specs):
            if fmap is not None:
                fmap.fit(X)
            fitted.append(FittedView(X, kernel, fmap, self.center))
        explicit = all(v.explicit for v in fitted)
        dims = [v.feature_map_.map(v.X_fit_[:1]).shape[1] if v.explicit else None for v in fitted]
        form = self.form
        if form == "auto":
            form = "primal" if explicit and sum(dims) < n else "dual"
        if form == "primal" and not explicit:
            bad = [i for i, v in enumerate(fitted) if not v.explicit]
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
            Phis = [v.features() for v in fitted]
            Phi = torch.cat(Phis, dim=1)
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
            for i, v in enumerate(fitted):
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
        self.n_views_ = len(fitted)
        self.n_samples_ = n
        self.views_ = fitted
        if single:
            self.n_features_in_ = Xs[0].shape[1]
        elif hasattr(self, "n_features_in_"):
            del self.n_features_in_  # as scikit-learn: only defined for one 2-D array
        self._single_view_input_ = single
        # A direct solve counts as one iteration (scikit-learn's convention for max_iter estimators).
        self.n_iter_ = max(1, self.solver_result_.n_iter) if self.solver_result_ is not None else 1
        self.view_widths_ = [X.shape[1] for X in Xs]
        self.H_ = H
        self.Gamma_ = Gamma
        self.eigenvalues_ = torch.linalg.eigvalsh(Gamma).flip(0)
        self.n_components_ = s
        # U_v = Phi_v^T H for explicit views: the primal interconnection matrices in both forms.
        self.U_ = [(v.features().T @ H) if v.explicit else None for v in fitted]
        for i, (v, U) in enumerate(zip(fitted, self.U_)):
            v.attach_hidden(H, U, grams.pop(i, None))
            v.release()
        return self

    def _solve(self, A, s, what, scale, size, max_rank, rng, gen):
        """Top-``s`` directions ``W`` of ``A`` and ``Gamma = W^T A W`` (eig or Stiefel, rotated or not)."""
        self._gamma_diagonal = True
        if self.solver == "eig":
            if A.shape[0] <= 1500 or 3 * s >= A.shape[0]:  # dense unless Lanczos clearly pays off
                spec = full_spectrum(A, what=what, max_rank=max_rank, scale=scale, size=size)
            else:
                spec = partial_spectrum(A, s, rank=s, random_state=rng, what=what, scale=scale, size=size)
                spec.rank = int((spec.values > spec.tolerance).sum())
            if s > spec.rank:
                raise ValueError(f"n_components={s} exceeds the numerical rank {spec.rank} of the {what}: only "
                                 f"{spec.rank} directions carry variance. Use n_components <= {spec.rank}.")
            return spec.vectors[:, :s].clone(), torch.diag(spec.values[:s])
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
                stacklevel=4,  # the caller of fit (through fit_context)
            )
        W = result.H
        Gamma = W.T @ A @ W
        Gamma = 0.5 * (Gamma + Gamma.T)
        # The eig route's rank check without a full eigendecomposition: at the optimum the eigenvalues of
        # Gamma' are the top-s eigenvalues of A, so one at rounding level means s exceeds the rank.
        lam = torch.linalg.eigvalsh(Gamma)
        tol = rank_tolerance(float(lam.max()), size, A.dtype, scale)
        rank = int((lam > tol).sum())
        if rank < s:
            raise ValueError(
                f"n_components={s} exceeds the numerical rank {rank} of the {what} found by the Stiefel solver: "
                f"only {rank} directions carry variance. Use n_components <= {rank}."
            )
        if self.rotate:
            lam, O = torch.linalg.eigh(Gamma)
            lam, O = lam.flip(0), O.flip(1)
            W = W @ O
            Gamma = torch.diag(lam)
        else:
            self._gamma_diagonal = False
        return W, Gamma

    # ------------------------------------------------------------------------------------------
    # inference
    # ------------------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "H_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance is not fitted yet; call fit(views) first.")

    def _new_views(self, views: Any, *, allow_missing: bool) -> tuple[list[torch.Tensor | None], bool]:
        items, single = split_views(views)
        if len(items) != self.n_views_:
            raise ValueError(f"got {len(items)} views but the model was fitted on {self.n_views_}; pass one per view.")
        out: list[torch.Tensor | None] = []
        m = None
        numpy_out = True
        for i, (X, view) in enumerate(zip(items, self.views_)):
            if X is None:
                if not allow_missing:
                    raise ValueError(f"views[{i}] is None; transform needs every view (use predict_view for a missing one).")
                out.append(None)
                continue
            numpy_out = is_numpy_like(X)
            T = check_view_input(
                X, f"views[{i}]", n_features=view.X_fit_.shape[1], dtype=self.H_.dtype, device=self.H_.device,
                owner=type(self).__name__ if self._single_view_input_ and single else None,
            )
            if m is not None and T.shape[0] != m:
                raise ValueError(f"views[{i}] has {T.shape[0]} rows but an earlier view has {m}; they must match.")
            m = T.shape[0]
            out.append(T)
        return out, numpy_out

    def _projection_sum(self, Xs: list[torch.Tensor | None], skip: int | None = None) -> torch.Tensor:
        """``sum_w U_w^T phi_c,w(x_w)`` (primal) = ``H^T sum_w k_c,w(x_w)`` (dual) over given views, (m, s)."""
        total = None
        for w, (X, view) in enumerate(zip(Xs, self.views_)):
            if X is None or w == skip:
                continue
            if self.form_ == "primal":
                term = view.map_centered(X) @ self.U_[w]
            else:
                term = view.kernel_vectors(X) @ self.H_
            total = term if total is None else total + term
        return total

    def transform(self, views: Any) -> Any:
        """Hidden features ``h = Gamma^{-1} sum_v U_v^T phi_c,v(x_v)`` of new points, shape (m, s).

        Parameters
        ----------
        views : list of arrays (m, d_v), one per view (all given)
        """
        self._check_fitted()
        Xs, numpy_out = self._new_views(views, allow_missing=False)
        h = torch.linalg.solve(self.Gamma_, self._projection_sum(Xs).T).T
        return to_output(h, numpy_out)

    def predict_view(self, views: Any, target: int, *, preimage: str = "smoother", n_neighbors: int | None = None) -> Any:
        """Infer view ``target`` of new points from the other (given) views (eqs. 15-16 of the paper).

        Primal: ``phi_v = U_v (Gamma - U_v^T U_v)^{-1} sum_{w != v} U_w^T phi_c,w(x_w)``; dual:
        ``k_v = K_v H (Gamma - H^T K_v H)^{-1} H^T sum_{w != v} k_c,w(x_w)``. The result is mapped
        back to the input space of view ``v``: exactly for a linear kernel / Identity map, with the
        kernel smoother (:func:`kppca.preimage.kernel_smoother`) over the training inputs of that
        view otherwise.

        Parameters
        ----------
        views : list of (array (m, d_w) or None)
            ``None`` marks a missing view; entry ``target`` is ignored.
        target : int
            Index of the view to infer.
        preimage : {"smoother"}, default "smoother"
            Pre-image method for a view without the identity map: ``"smoother"``, the kernel
            smoother over the training inputs of that view, fed with the exact raw kernel
            weights of the inferred point (see :meth:`_decode`). Validated; the only option.
        n_neighbors : int, optional
            Passed to the kernel smoother (sharper pre-images).

        Returns
        -------
        ndarray or Tensor of shape (m, d_target)
        """
        self._check_fitted()
        check_scalar(preimage, "preimage", [Options(PREIMAGE_METHODS)])
        if not isinstance(target, (int, np.integer)) or not 0 <= int(target) < self.n_views_:
            raise ValueError(f"target must be a view index in [0, {self.n_views_ - 1}], got {target!r}.")
        target = int(target)
        items, _ = split_views(views)
        items = list(items)
        if len(items) == self.n_views_:
            items[target] = None
        Xs, numpy_out = self._new_views(items, allow_missing=True)
        if all(X is None for w, X in enumerate(Xs) if w != target):
            raise ValueError(
                f"predict_view needs at least one known view besides target={target}; every other view is None."
            )
        rhs = self._projection_sum(Xs, skip=target)  # (m, s)
        return to_output(self._decode(rhs, target, conditional=True, n_neighbors=n_neighbors), numpy_out)

    def _decode(self, rhs: torch.Tensor, v: int, *, conditional: bool, n_neighbors: int | None) -> torch.Tensor:
        """Input-space view ``v`` from ``rhs`` (m, s).

        ``conditional``: ``rhs`` is the known-view sum and ``h = (Gamma - U_v^T U_v)^{-1} rhs``;
        otherwise ``rhs`` is ``h`` itself (generation). Either way the view's feature vector is
        ``phi_v = U_v h + m_v`` (``m_v = 0`` when not centering), i.e. ``phi_v - m_v = Phi_c^T H h``:
        a point of the span of the training features with dual coefficients ``alpha = H h``.
        Uses only what ``fit`` stored on the view (:meth:`FittedView.attach_hidden`, all ``n x s``
        or smaller): no Gram matrix is rebuilt and no training feature is mapped again.
        """
        view = self.views_[v]
        if conditional:
            # Gamma - U_v^T U_v (H^T K_c,v H in the dual) = sum over the other views of U_w^T U_w (PSD):
            # singular when the other views carry no information on some hidden feature; then the
            # inference is undefined.
            A = self.Gamma_ - view.inner_
            A = 0.5 * (A + A.T)
            eigs = torch.linalg.eigvalsh(A)
            tol = rank_tolerance(float(self.eigenvalues_[0]), self.n_samples_, A.dtype)
            if float(eigs[0]) <= tol:
                raise ValueError(
                    f"view {v} cannot be inferred: the other views carry no information on some hidden features "
                    f"(Gamma - U_v^T U_v is singular, smallest eigenvalue {float(eigs[0]):.3g}). Lower n_components "
                    "or give more views."
                )
            h = torch.linalg.solve(A, rhs.T).T
        else:
            h = rhs
        if view.explicit:
            if view.identity:
                return h @ self.U_[v].T + view.phi_mean_  # the raw feature vector is the input
            # Raw kernel values k(x_i, x) = <phi(x_i), U_v h + m> (exact).
            weights = h @ view.weight_basis_.T + view.weight_offset_
        else:
            k_c = h @ view.gram_hidden_.T  # (m, n) centered kernel vectors K_c,v H h (raw when not centering)
            # The row mean s = 1^T k / n of the raw vector is known exactly for a point of the span
            # (alpha = H h): s = grand mean + alpha . (K 1 / n - grand mean) (spec, "Pre-image").
            row_means = None if view.row_mean_hidden_ is None else (
                view.centerer_.grand_mean_ + h @ view.row_mean_hidden_
            )
            weights = uncenter_kernel_vectors(k_c, view.centerer_, "mean" if row_means is None else row_means)
        return torch.as_tensor(kernel_smoother(weights, view.X_fit_, n_neighbors=n_neighbors))

    def sample(self, n_samples: int = 1, *, latent: str = "prior", scale: float = 0.1, random_state: Any = None,
               n_neighbors: int | None = None) -> list[Any]:
        """Draw hidden features and map them to every view (Gen-RKM style generation).

        Parameters
        ----------
        n_samples : int
        latent : {"prior", "mixture"}
            ``"prior"``: ``h ~ N(0, Sigma_H)`` with ``Sigma_H = H^T H / n`` (the training codes'
            covariance). ``"mixture"``: a random training code ``h_i`` plus ``N(0, scale^2 Sigma_H)``.
        scale : float
            Relative width of the mixture components.
        random_state : int, Generator or None

        Returns
        -------
        list of arrays (n_samples, d_v), one per view
        """
        self._check_fitted()
        if latent not in ("prior", "mixture"):
            raise ValueError(f"latent must be 'prior' or 'mixture', got {latent!r}.")
        gen = torch_generator(random_state, torch.device("cpu"))
        H = self.H_
        n, s = H.shape
        cov = H.T @ H / n
        L = torch.linalg.cholesky(cov)  # H has full column rank, so cov is positive definite
        z = torch.randn(int(n_samples), s, generator=gen, dtype=H.dtype).to(H.device)
        if latent == "prior":
            h = z @ L.T
        else:
            idx = torch.randint(n, (int(n_samples),), generator=gen).to(H.device)
            h = H[idx] + float(scale) * (z @ L.T)
        # Generation (Gen-RKM): phi_v = U_v h, i.e. k_c,v = K_v H h.
        outs = [self._decode(h, v, conditional=False, n_neighbors=n_neighbors) for v in range(self.n_views_)]
        return [to_output(o, self._numpy_fit_) for o in outs]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

