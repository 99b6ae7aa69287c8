r"""``kl_divergence(p, q)`` (torch's, Pyro's) for :class:`DegenerateMultivariateNormal` and full-rank ``MultivariateNormal``.

Finite only on a common support; ``+inf`` elsewhere, element by element of the batch.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import MultivariateNormal, register_kl

from .degenerate_normal import DegenerateMultivariateNormal

__all__ = ["kl_degenerate_normals"]


@register_kl(DegenerateMultivariateNormal, DegenerateMultivariateNormal)
def kl_degenerate_normals(p: DegenerateMultivariateNormal, q: DegenerateMultivariateNormal) -> torch.Tensor:
    """``KL(p || q)`` of two degenerate normals of the same event shape (n,); ``+inf`` where supports differ.

    Returns
    -------
    Tensor of shape ``broadcast(p.batch_shape, q.batch_shape)``
    """
    if p.event_shape != q.event_shape:
        raise ValueError(f"event shapes differ: {tuple(p.event_shape)} and {tuple(q.event_shape)}.")
    batch = torch.broadcast_shapes(p.batch_shape, q.batch_shape)
    Up, sp = p._basis
    Uq, sq = q._basis
    # A common support: equal ranks and sin(largest principal angle) = ||(I - Uq Uq^T) Up||_2 <= tol.
    same_range = Up.shape[1] == Uq.shape[1]
    if same_range and Up.shape[1] > 0:
        sine = torch.linalg.matrix_norm(Up - Uq @ (Uq.T @ Up), ord=2)
        same_range = bool(sine <= max(p.support_tolerance(), q.support_tolerance()))
    if not same_range:
        return torch.full(batch, math.inf, dtype=q.loc.dtype, device=q.loc.device)
    # loc_p must lie on the support of q (the support test of q's log_prob).
    mu, off_support = q.support_coordinates(p.loc.expand(batch + p.event_shape))
    mu = mu / sq
    A = (Uq.T @ Up) * sp / sq[:, None]
    _, logabsdet = torch.linalg.slogdet(A)
    kl = 0.5 * (A.square().sum() + mu.square().sum(-1) - q.rank) - logabsdet
    return kl.masked_fill(off_support, math.inf)


def _as_degenerate(mvn: MultivariateNormal | DegenerateMultivariateNormal) -> DegenerateMultivariateNormal:
    """The same Gaussian as a degenerate normal (of full rank, its Cholesky factor as ``F``, if not one already)."""
    if isinstance(mvn, DegenerateMultivariateNormal):
        return mvn
    L = mvn._unbroadcasted_scale_tril
    if L.ndim != 2:
        raise NotImplementedError(
            "KL divergence between a DegenerateMultivariateNormal and a MultivariateNormal with a batch of "
            f"covariance matrices (scale_tril of shape {tuple(L.shape)}) is not implemented; expand the "
            "computation over the batch, one covariance at a time."
        )
    return DegenerateMultivariateNormal(mvn.loc, L)


@register_kl(DegenerateMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, DegenerateMultivariateNormal)
def _kl_with_mvn(p: torch.distributions.Distribution, q: torch.distributions.Distribution) -> torch.Tensor:
    return kl_degenerate_normals(_as_degenerate(p), _as_degenerate(q))
