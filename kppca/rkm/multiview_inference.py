"""What a fitted :class:`kppca.rkm.MultiViewKPCA` does with new data: hidden features, missing views, samples."""

from __future__ import annotations

import warnings
from typing import Any

import torch

from .._linalg import rank_tolerance, rounding_tolerance
from .._param_validation import Integral, Interval, Real, StrOptions, check_scalar
from .._validation import as_tensor, check_feature_names, torch_generator
from ..preimage import kernel_smoother, uncenter_kernel_vectors
from .views import split_views

__all__ = ["MultiViewInference"]


def _smoother_weights(weights: torch.Tensor) -> torch.Tensor:
    """Raw kernel weights (m, n), rows with no positive mass replaced by the one-hot of their largest entry (the
    nearest training point in the kernel's sense, as the PPCA pre-images do)."""
    clipped = weights.clamp_min(0)
    # A total below the rounding level of the sum (N eps sum|w|) is numerically zero.
    tiny = rounding_tolerance(weights.dtype, weights.shape[1], weights.abs().sum(1))
    bad = ~(clipped.sum(1) > tiny)
    if not bool(bad.any()):
        return weights
    onehot = torch.zeros_like(weights)
    onehot[torch.arange(weights.shape[0], device=weights.device), weights.argmax(1)] = 1.0
    return torch.where(bad[:, None], onehot, weights)


class MultiViewInference:
    """What a fitted :class:`~kppca.rkm.MultiViewKPCA` does with new data (a mixin of it)."""

    def _new_views(self, views: Any, *, allow_missing: bool) -> tuple[list[torch.Tensor | None], Any]:
        items, single = split_views(views)
        if len(items) != self.n_views_:
            raise ValueError(f"got {len(items)} views but the model was fitted on {self.n_views_}; pass one per view.")
        out: list[torch.Tensor | None] = []
        m = None
        like: Any = None  # the last given view: outputs follow its type (numpy or tensor)
        for i, (X, view) in enumerate(zip(items, self.views_)):
            if X is None:
                if not allow_missing:
                    raise ValueError(f"views[{i}] is None; transform needs every view (use predict_view for a missing one).")
                out.append(None)
                continue
            like = X
            one_array = self._single_view_input_ and single
            if one_array:
                check_feature_names(self, X, reset=False)
            T = as_tensor(X, f"views[{i}]", dtype=self._dtype, device=self._device)
            width = view.X_fit_.shape[1]
            if T.shape[1] != width:
                if one_array:  # scikit-learn's wording for a model fitted on one array
                    raise ValueError(f"X has {T.shape[1]} features, but {type(self).__name__} is expecting {width} "
                                     "features as input.")
                raise ValueError(f"views[{i}] has {T.shape[1]} features, but this view had {width} in fit.")
            if m is not None and T.shape[0] != m:
                raise ValueError(f"views[{i}] has {T.shape[0]} rows but an earlier view has {m}; they must match.")
            m = T.shape[0]
            out.append(T)
        return out, like

    def _projection_sum(self, Xs: list[torch.Tensor | None]) -> torch.Tensor:
        """``sum_w U_w^T phi_c,w(x_w)`` (primal) = ``H^T sum_w k_c,w(x_w)`` (dual) over given views, (m, s)."""
        total = None
        for w, (X, view) in enumerate(zip(Xs, self.views_)):
            if X is None:
                continue
            if self.form_ == "primal":
                term = view.map_centered(X) @ self.U_[w]
            else:
                term = view.kernel_vectors(X) @ self.hidden_features_
            total = term if total is None else total + term
        return total

    def transform(self, views: Any) -> Any:
        """Hidden features ``h = Gamma^{-1} sum_v U_v^T phi_c,v(x_v)`` (m, s) of new points ``views``, a list of
        arrays (m, d_v), one per view (all given)."""
        self._check_fitted("transform")
        Xs, like = self._new_views(views, allow_missing=False)
        h = torch.linalg.solve(self.Gamma_, self._projection_sum(Xs).T).T
        return self._to_output(h, like)

    def predict_view(self, views: Any, target: int, *, preimage: str = "smoother", n_neighbors: int | None = None) -> Any:
        """Infer view ``target`` of new points from the other views (eqs. 15-16 of the paper, see docs/theory).

        The inferred features are mapped back to the input space exactly for a linear kernel / Identity map, else
        by the kernel smoother (:func:`kppca.preimage.kernel_smoother`) over the view's training inputs.

        Parameters
        ----------
        views : list of (array (m, d_w) or None)
            ``None`` marks a missing view; entry ``target`` is ignored.
        target : int
            Index of the view to infer.
        preimage : {"smoother"}, default "smoother"
            Pre-image method for a view without the identity map (the only option).
        n_neighbors : int, optional
            Passed to the kernel smoother (sharper pre-images).

        Returns
        -------
        ndarray or Tensor of shape (m, d_target)
        """
        self._check_fitted("predict_view")
        check_scalar(preimage, "preimage", [StrOptions(("smoother",))])
        check_scalar(n_neighbors, "n_neighbors", [Interval(Integral, 1, None, closed="left"), None])
        target = int(check_scalar(target, "target", [Interval(Integral, 0, self.n_views_ - 1)]))
        items, _ = split_views(views)  # a new list: the caller's is not modified
        if len(items) == self.n_views_:
            items[target] = None
        Xs, like = self._new_views(items, allow_missing=True)
        if all(X is None for w, X in enumerate(Xs) if w != target):
            raise ValueError(
                f"predict_view needs at least one known view besides target={target}; every other view is None."
            )
        rhs = self._projection_sum(Xs)  # (m, s); view target is None
        out = self._decode(rhs, target, conditional=True, n_neighbors=n_neighbors)
        return self._to_output(out, like)

    def _decode(self, rhs: torch.Tensor, v: int, *, conditional: bool, n_neighbors: int | None) -> torch.Tensor:
        """Input-space view ``v`` (m, d_v) of ``phi_v = U_v h + m_v``, with ``h = rhs`` (m, s) (generation) or, when
        ``conditional``, ``h = (Gamma - U_v^T U_v)^{-1} rhs`` for the known-view sum ``rhs``."""
        view = self.views_[v]
        if conditional:
            # A = sum over the other views of U_w^T U_w (PSD). Where it is singular they carry no information
            # (rhs has no component there): the least-norm solution keeps those features at their prior mean 0.
            A = self.Gamma_ - view.inner_
            A = 0.5 * (A + A.T)
            eigs, vecs = torch.linalg.eigh(A)
            tol = rank_tolerance(float(self.eigenvalues_[0]), self.n_samples_, A.dtype)
            known = eigs > tol
            if not bool(known.all()):
                warnings.warn(
                    f"predict_view: {int((~known).sum())} of {A.shape[0]} hidden features are not identifiable "
                    f"from the views other than {v} (Gamma - U_v^T U_v is singular); they are set to their prior "
                    "mean 0. Lower n_components or give more views for a full inference.",
                    UserWarning, stacklevel=3,
                )
            basis = vecs[:, known]
            h = (rhs @ basis) / eigs[known] @ basis.T
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
            row_means = "mean"
            if view.row_mean_hidden_ is not None:
                row_means = view.centerer_.grand_mean_ + h @ view.row_mean_hidden_
            weights = uncenter_kernel_vectors(k_c, view.centerer_, row_means)
        return torch.as_tensor(kernel_smoother(_smoother_weights(weights), view.X_fit_, n_neighbors=n_neighbors))

    def sample(self, n_samples: int = 1, *, latent: str = "prior", scale: float = 0.1, random_state: Any = None,
               n_neighbors: int | None = None) -> list[Any]:
        """Draw hidden features and map them to every view (Gen-RKM style generation).

        Parameters
        ----------
        n_samples : int >= 1
        latent : {"prior", "mixture"}
            ``"prior"``: ``h ~ N(0, Sigma_H)``, ``Sigma_H = H^T H / n``; ``"mixture"``: a random training code
            plus ``N(0, scale^2 Sigma_H)``.
        scale : float >= 0
            Relative width of the mixture components.
        random_state : int, Generator or None
        n_neighbors : int, optional
            Passed to the kernel smoother.

        Returns
        -------
        list of arrays (n_samples, d_v), one per view
        """
        self._check_fitted("sample")
        n_samples = int(check_scalar(n_samples, "n_samples", [Interval(Integral, 1, None, closed="left")]))
        check_scalar(latent, "latent", [StrOptions(("prior", "mixture"))])
        check_scalar(scale, "scale", [Interval(Real, 0, None, closed="left")])
        check_scalar(n_neighbors, "n_neighbors", [Interval(Integral, 1, None, closed="left"), None])
        gen = torch_generator(random_state, torch.device("cpu"))
        H = self.hidden_features_
        n, s = H.shape
        cov = H.T @ H / n
        L = torch.linalg.cholesky(cov)  # H has full column rank, so cov is positive definite
        z = torch.randn(int(n_samples), s, generator=gen, dtype=H.dtype).to(H.device)
        if latent == "prior":
            h = z @ L.T
        else:
            idx = torch.randint(n, (int(n_samples),), generator=gen).to(H.device)
            h = H[idx] + float(scale) * (z @ L.T)
        outs = [self._decode(h, v, conditional=False, n_neighbors=n_neighbors) for v in range(self.n_views_)]
        return [self._to_output(o) for o in outs]
