"""float64 statistics of feature rows (mean, scatter, centered copy) by blocks of bounded memory."""

from __future__ import annotations

import torch

from .blocks import block_rows

__all__ = ["centered_scatter", "centered_rows"]

def centered_scatter(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """float64 statistics of the rows of ``Phi`` (n >= 1, d), by row blocks of bounded memory.

    Returns
    -------
    mean : Tensor of shape (d,)
        The row mean (zeros when ``center`` is False).
    scatter : Tensor of shape (d, d)
        ``sum_i (phi_i - mean)(phi_i - mean)^T``, centered *before* the product.
    max_sq_norm : float
        ``max_i |phi_i|^2`` of the uncentered rows.

    No float64 copy of a float32 ``Phi`` is made: each block is converted on its own.
    """
    f64 = torch.float64
    n, d = Phi.shape
    mean = Phi.sum(0, dtype=f64) / n if center else Phi.new_zeros(d, dtype=f64)
    scatter = Phi.new_zeros((d, d), dtype=f64)
    max_sq = 0.0
    rows = block_rows(None, max(d, 1), f64)
    for i in range(0, n, rows):
        P = Phi[i : i + rows].to(f64)
        max_sq = max(max_sq, float((P * P).sum(1).max()))
        C = P - mean
        scatter.addmm_(C.T, C)
    return mean, scatter, max_sq


def centered_rows(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(C, mean, max_sq_norm)``: the rows of ``Phi`` (n, d) centered in float64, for ``d > n``.

    One float64 copy the size of ``Phi`` (the ``n x n`` Gram matrix ``C C^T`` then
    carries the spectrum); ``mean`` and ``max_sq_norm`` as in :func:`centered_scatter`.
    """
    # copy=True: ``Phi`` may be the model's own inputs (the linear kernel's features are X itself),
    # and ``.to`` returns the same tensor when it is float64 already; it is centered in place below.
    P = Phi.to(torch.float64, copy=True)
    max_sq = float((P * P).sum(1).max()) if P.shape[0] else 0.0
    mean = P.mean(0) if center else P.new_zeros(P.shape[1])
    return P.sub_(mean), mean, max_sq
