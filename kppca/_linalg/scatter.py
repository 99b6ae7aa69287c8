"""float64 statistics of feature rows (mean, scatter, centered copy) by blocks of bounded memory."""

from __future__ import annotations

import torch

from .blocks import block_rows

__all__ = ["centered_scatter", "centered_rows"]

def centered_scatter(Phi: torch.Tensor, center: bool) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(mean (d,), scatter (d, d), max_sq_norm)`` of the rows of ``Phi`` (n >= 1, d) in float64, by row blocks.

    ``scatter = sum_i (phi_i - mean)(phi_i - mean)^T``, centered before the product (``mean`` is zero
    when not ``center``); ``max_sq_norm``: ``max_i |phi_i|^2`` uncentered. Blocks are converted one by one.
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
    """``(C, mean, max_sq_norm)``: the rows of ``Phi`` (n, d) centered in a float64 copy ``C``, for ``d > n``."""
    # copy=True: Phi may be the model's own inputs (a float64 X for the linear kernel), centered in place below.
    P = Phi.to(torch.float64, copy=True)
    max_sq = float((P * P).sum(1).max()) if P.shape[0] else 0.0
    mean = P.mean(0) if center else P.new_zeros(P.shape[1])
    return P.sub_(mean), mean, max_sq
