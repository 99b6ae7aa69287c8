"""k-nearest-neighbour pre-image from feature-space distances, which need only kernel values."""

from __future__ import annotations

from typing import Any

import torch

from .._validation import ArrayLike, as_tensor
from ._common import as_batch, batch_output, check_n_neighbors, format_rows, weights_and_targets

__all__ = ["feature_space_sq_distances", "knn_preimage"]


def feature_space_sq_distances(
    K_c_rows: ArrayLike,
    gram_diag_centered: ArrayLike,
    sq_norms: ArrayLike | None = None,
) -> Any:
    """Squared feature-space distances ``|psi_j - phi(x_i)|^2 = |psi_j - m|^2 - 2 k_c[j, i] + (K_c)_ii``.

    Parameters
    ----------
    K_c_rows : array-like or Tensor of shape (M, N) or (N,)
        Centered kernel vectors ``k_c(psi_j)`` against the N training points.
    gram_diag_centered : array-like or Tensor of shape (N,)
        Diagonal of the centered training Gram matrix, ``(K_c)_ii = |phi(x_i) - m|^2``.
    sq_norms : array-like or Tensor of shape (M,) or float, optional
        ``|psi_j - m|^2`` (``alpha^T k_c`` for ``psi - m = Phi_c alpha``). Omitted, each row is shifted by
        an unknown constant: the ranking of neighbours is kept, distance weighting is not possible.

    Returns
    -------
    ndarray or Tensor of shape (M, N) (or (N,) for 1-D input)
        Same type and device as ``K_c_rows``; true distances are clipped at 0 (rounding).
    """
    Kc, single, numpy_out = as_batch(K_c_rows, "K_c_rows", gram_diag_centered)
    diag = as_tensor(gram_diag_centered, "gram_diag_centered", ndim=1, dtype=Kc.dtype, device=Kc.device)
    if diag.shape[0] != Kc.shape[1]:
        raise ValueError(
            f"gram_diag_centered has {diag.shape[0]} entries but K_c_rows has {Kc.shape[1]} columns; they must match."
        )
    D2 = diag[None, :] - 2.0 * Kc
    if sq_norms is not None:
        sn = as_tensor(sq_norms, "sq_norms", ndim=(0, 1), dtype=Kc.dtype, device=Kc.device, min_samples=0)
        sn = sn.reshape(-1)
        if sn.shape[0] not in (1, Kc.shape[0]):
            raise ValueError(f"sq_norms must have one value per row of K_c_rows ({Kc.shape[0]}), got {sn.shape[0]}.")
        if bool((sn < 0).any()):
            raise ValueError("sq_norms are squared norms and must be >= 0.")
        D2 = (D2 + sn[:, None]).clamp_(min=0.0)
    return batch_output(D2, single=single, numpy_out=numpy_out)


def knn_preimage(
    sq_distances: ArrayLike,
    targets: ArrayLike,
    *,
    n_neighbors: int = 5,
    weighting: str = "uniform",
    return_indices: bool = False,
) -> Any:
    """Pre-image as the mean of the targets of the nearest training points in feature space.

    Parameters
    ----------
    sq_distances : array-like or Tensor of shape (M, N) or (N,)
        Squared feature-space distances of M queries to N training points, up to a per-row shift if uniform.
    targets : array-like or Tensor of shape (N, D) or (N,)
        Training inputs (or latent codes) to average.
    n_neighbors : int, default 5
        Number of neighbours, ``1 <= n_neighbors <= N`` (``1``: the nearest training target itself).
    weighting : {"uniform", "distance"}, default "uniform"
        ``"distance"`` weighs neighbours by ``1 / d`` (a neighbour at distance 0 takes all the weight);
        it needs true distances (``sq_norms`` given to :func:`feature_space_sq_distances`).
    return_indices : bool, default False
        Also return the neighbour indices, shape (M, n_neighbors), nearest first.

    Returns
    -------
    preimages : ndarray or Tensor of shape (M, D)
        ``(D,)`` for 1-D ``sq_distances``, ``(M,)`` for 1-D ``targets``; type and device of ``sq_distances``.
    indices : ndarray or Tensor of shape (M, n_neighbors), only if ``return_indices``
    """
    D2, T, single, vector_targets, numpy_out = weights_and_targets(sq_distances, targets, "sq_distances")
    k = check_n_neighbors(n_neighbors, T.shape[0], allow_none=False)
    if weighting not in ("uniform", "distance"):
        raise ValueError(f"weighting={weighting!r} is unknown; use 'uniform' or 'distance'.")

    d2, idx = torch.topk(D2, k, dim=1, largest=False)  # (M, k), nearest first
    neigh = T[idx]  # (M, k, D): gathers only k rows per query
    if weighting == "uniform":
        out = neigh.mean(1)
    else:
        # Tolerate rounding below zero, refuse genuinely shifted (relative) distances.
        tol = 1e3 * torch.finfo(D2.dtype).eps * D2.abs().amax(1, keepdim=True)
        neg = (d2 < -tol).any(1)
        if bool(neg.any()):
            raise ValueError(
                f"sq_distances has negative entries in row(s) {format_rows(neg.nonzero())}: weighting='distance' "
                "needs true squared distances (pass sq_norms to feature_space_sq_distances) or use 'uniform'."
            )
        d = d2.clamp(min=0.0).sqrt()
        exact = d <= tol.sqrt()
        has_exact = exact.any(1, keepdim=True)
        # 1/d weights; a neighbour at distance 0 gets all the weight (avoids inf/inf).
        w = torch.where(has_exact, exact.to(d.dtype), 1.0 / torch.where(exact, torch.ones_like(d), d))
        out = (w[:, :, None] * neigh).sum(1) / w.sum(1, keepdim=True)
    out = out[:, 0] if vector_targets else out
    return batch_output(out, single=single, numpy_out=numpy_out, extra=idx if return_indices else None)
