"""Stacked kernel PCA levels under one orthonormality constraint (the deep RKM classifier's unsupervised part).

For the stacked hidden features ``H = [H_1 ... H_L]`` (N x sum s_j, ``H^T H = I``) the objective is
``sum_j level_j.kpca_term(H_j, K_{j-1})``, the KPCA part of :mod:`~kppca.rkm.deep.classifier`'s ``J``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ...kernels import KernelCenterer
from .levels import Level

__all__ = ["StackedKPCA"]


class StackedKPCA:
    """The deep KPCA objective of ``levels`` for one fit: the centred first Gram matrix ``K0`` (N, N) is fixed."""

    def __init__(self, levels: Sequence[Level], K0: torch.Tensor):
        self.levels, self.K0 = list(levels), K0
        self.sizes = [lev.width(0) for lev in self.levels]

    def terms(self, H: torch.Tensor) -> torch.Tensor:
        """The objective at the stacked ``H`` (N, sum s_j); a scalar tensor with ``H``'s graph."""
        parts = torch.split(H, self.sizes, dim=1)
        total = self.levels[0].kpca_term(parts[0], self.K0)
        for j in range(1, len(parts)):
            # M K M on a copy: the centerer works in place, and the kernel's output may be in the graph.
            Kj = KernelCenterer().fit_center_(self.levels[j].kernel.gram(parts[j - 1], parts[j - 1]).clone())
            total = total + self.levels[j].kpca_term(parts[j], Kj)
        return total
