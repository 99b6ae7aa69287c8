"""The dual model's held-out log-likelihood from a Cholesky factor of ``K``, without the eigendecomposition of ``K_c``.

``score_samples`` needs, for each new point, the coordinates ``y_p = e_p^T k_c / sqrt(lam_p)``
along every resolved eigenvector of ``K_c`` (spec, "Likelihood"). Only two sums of them enter:

* ``sum_{p <= q} y_p^2 N / lam_p``, from the top ``q`` eigenpairs the fit keeps;
* ``t = sum_{q < p <= r} y_p^2``: with ``z = (I - E_q E_q^T) k_c`` (the top directions removed),
  ``t = z^T K_c^+ z``, the squared norm of the projection of ``phi(x) - m`` on ``H_E`` less its
  top ``q`` coordinates.

When every one of the ``r`` eigenvalues of ``K_c`` is above its rounding level (so the dense path
keeps them all) and ``K`` has a Cholesky factor ``L``, ``t`` comes from one triangular solve:
``K_c = M K M`` and, for ``z`` orthogonal to ``1``, ``K_c^+ z = K^{-1} (z + c 1)`` with ``c`` such
that the result is orthogonal to ``1``; with ``u = L^{-1} z`` and ``v = L^{-1} 1`` that is
``t = |u|^2 - (u . v)^2 / |v|^2`` (``|u|^2`` uncentered). Cost ``O(N^3 / 3)`` once (the factor,
shared with sampling) plus ``O(N^2)`` per point, instead of the ``O(N^3)`` dense ``eigh``.

That every eigenvalue is resolved is certified without the spectrum: by interlacing, the
eigenvalues of ``K_c`` on ``1^perp`` are at least ``lam_min(K)``, bounded from below through ``L``
(:func:`~kppca._linalg.smallest_eigenvalue_bound`). Otherwise (a kernel without strict positive
definiteness, duplicated points, a spectrum reaching the rounding level, a GPU model) the dense
path runs, and its result is the definition.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .._linalg import block_rows, compute_threads, smallest_eigenvalue_bound

__all__ = ["RESOLVED_MARGIN", "log_likelihood_by_cholesky"]

#: ``lam_min(K)`` must exceed the rounding level of ``K_c`` by this factor: it covers the estimator
#: of ``||K^{-1}||_1`` (a lower estimate, in practice within a small factor) and the rounding of
#: the computed eigenvalues (at most the rounding level itself), so the dense path would keep every
#: eigenvalue too.
RESOLVED_MARGIN = 100.0


def log_likelihood_by_cholesky(model: Any, X: torch.Tensor) -> torch.Tensor | None:
    """``score_samples`` of a fitted :class:`~kppca.DualPPCA` on validated inputs ``X`` (M, D) from the Cholesky
    factor of ``K``; None when it does not apply.

    Returns
    -------
    Tensor of shape (M,) or None
        None: the caller runs the dense path (the definition).
    """
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
