"""The deep RKM's forward chain (paper eqs. 4.9 and 5.4) over any sequence of level objects."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .levels import Level

__all__ = ["run_chain"]


def run_chain(levels: Sequence[Level], X: torch.Tensor | None, prototypes: torch.Tensor, H: Sequence[torch.Tensor],
              b: torch.Tensor, scales: Sequence[torch.Tensor | None], Y: torch.Tensor | None = None,
              gram0: torch.Tensor | None = None) -> tuple[torch.Tensor | None, list]:
    """Run the chain on the rows of ``X`` through the first ``len(H)`` levels.

    Level ``l`` computes ``e_l = k_l(z_{l-1}, P_l) H_l / eta_l`` (``z_0 = X``, ``P_1 = prototypes``,
    ``P_l = H_{l-1}``) and passes on ``z_l`` (:meth:`Level.chain_step`); without ``Y`` the chain stops at the
    output level.

    Parameters
    ----------
    levels : sequence of Level
    X : Tensor of shape (n, D) or None
        None when ``gram0`` is given.
    prototypes : Tensor of shape (M, D)
    H : sequence of Tensor
        Hidden features ``(M, s_l)`` of the prototypes per level.
    b : Tensor of shape (p,)
    scales : sequence of Tensor or None
        ``diag(Lam_l)`` of the KPCA levels.
    Y : Tensor of shape (n, p), optional
        Training targets (the training chain).
    gram0 : Tensor of shape (n, M), optional
        The first level's kernel between the rows and the prototypes.

    Returns
    -------
    yhat : Tensor of shape (n, p) or None
        The output level's prediction (None when it was not reached).
    es : list
        ``e_l`` per level reached (the output level's entry is its prediction).
    """
    z, yhat, es = X, None, []
    L = len(H)
    for l, level in enumerate(levels[:L]):
        P = prototypes if l == 0 else H[l - 1]
        K = gram0 if l == 0 and gram0 is not None else level.kernel.gram(z, P)
        e, z = level.chain_step(K, H[l], b, scales[l], Y)
        es.append(e)
        if level.is_output:
            yhat = e
        if l + 1 < L and z is None:  # prediction stops at the output level (eq. 4.16)
            break
    return yhat, es
