"""The dual model's held-out log-likelihood from a Cholesky factor of ``K``, without the eigendecomposition of ``K_c``.

When every eigenvalue of ``K_c`` is resolved (certified through ``L``, without the spectrum), the tail
``z^T K_c^+ z`` comes from one triangular solve: ``O(N^2)`` per point instead of an ``O(N^3)`` ``eigh``;
otherwise the dense path runs and is the definition. See the numerical notes in the docs.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .._linalg import block_rows, compute_threads, smallest_eigenvalue_bound

__all__ = ["RESOLVED_MARGIN", "log_likelihood_by_cholesky"]

#: ``lam_min(K)`` must exceed the rounding level of ``K_c`` by this factor (covers the lower estimate of
#: ``||K^{-1}||_1`` and the rounding of the eigenvalues), so the dense path would keep every eigenvalue too.
RESOLVED_MARGIN = 100.0


def log_likelihood_by_cholesky(model: Any, X: torch.Tensor) -> torch.Tensor | None:
    """``score_samples`` (M,) of a fitted :class:`~kppca.DualPPCA` on validated ``X`` (M, D) by Cholesky; None if it
    does not apply (the caller runs the dense path)."""
    # Whether the route applies is fixed by the fit, never by what is cached, so a model and its saved-and-loaded
    # copy score alike bitwise: a dense fit has (or, loaded, recomputes) its eigenpairs, a partial fit takes the
    # factor. K positive definite needs a strictly PD kernel and distinct points (full structural rank).
    if (
        model.eigen_solver_ != "partial"
        or model._device.type != "cpu"
        or model._dtype not in (torch.float32, torch.float64)
        or not getattr(model.kernel_, "strictly_positive_definite", False)
        or model.rank_ != model.n_samples_ - int(model.center)
    ):
        return None
    gram = model._factored_gram()  # the hub scores of sampling are read from K_c before the factor replaces it
    with compute_threads():
        kind, L = gram.cholesky()  # cached; shared with sampling after a partial fit
        if kind != "raw" or smallest_eigenvalue_bound(L) <= RESOLVED_MARGIN * gram.tolerance:
            return None
        E, lam = model.eigenvectors_, model.eigenvalues_
        q, r, N, s2 = model.n_components_, model.rank_, model.n_samples_, model.sigma2_
        if model.center:
            v = torch.linalg.solve_triangular(L, L.new_ones(N, 1), upper=False)
            v_hat = v / torch.linalg.vector_norm(v)

        def block(Xb: torch.Tensor) -> torch.Tensor:
            k_c = gram.centered_vectors(Xb)  # (m, N)
            c = k_c @ E  # (m, q): coordinates times sqrt(lam)
            z = k_c.addmm_(c, E.T, alpha=-1.0)  # the top q directions removed, in place
            u = torch.linalg.solve_triangular(L, z.T, upper=False)  # (N, m)
            if model.center:
                u = u.addmm_(v_hat, v_hat.T @ u, alpha=-1.0)  # projection orthogonal to L^{-1} 1
            tail = (u * u).sum(0)
            top = ((c / lam) ** 2).sum(1) * N  # sum_p y_p^2 / (lam_p / N)
            return top + tail / s2

        rows = block_rows(model.batch_size, N, model._dtype)
        quad = torch.cat([block(X[i : i + rows]) for i in range(0, X.shape[0], rows)]) if X.shape[0] else \
            X.new_zeros(0)
    log_det = float(torch.log(lam / N).sum()) + (r - q) * math.log(s2)
    return -0.5 * (r * math.log(2 * math.pi) + log_det + quad)
