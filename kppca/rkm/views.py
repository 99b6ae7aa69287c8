"""Views of a multi-view model: input checking, feature maps or kernels, and per-view centering."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import clone

from .._param_validation import Interval, Real
from ..io import OPTIONAL, TensorSpec, register
from ..features import FeatureMap, FeatureMapKernel, Identity
from ..kernels import CenteredGram, Kernel, KernelCenterer, Linear, as_kernel

__all__ = ["FittedView", "split_views"]


def split_views(views: Any, name: str = "views") -> tuple[list[Any], bool]:
    """The per-view arrays of ``views`` (a list/tuple of arrays (n, d_v), ``None`` for a missing view where allowed,
    or one array) and whether it was a single 2-D array."""
    if isinstance(views, (list, tuple)):
        items = list(views)
        if items and all(v is None or np.ndim(v) == 2 for v in items):
            return items, False
        if items and all(v is not None and np.ndim(v) in (0, 1) for v in items):
            return [views], True  # a nested list of numbers: one 2-D view
        raise ValueError(
            f"{name} must be a list of 2-D arrays of shape (n, d_v), one per view; got a list with "
            f"dimensions {[None if v is None else np.ndim(v) for v in items]}."
        )
    if views is None:
        raise ValueError(f"{name} is None; pass a list of arrays of shape (n, d_v), one per view.")
    return [views], True


@register(name="kppca.rkm.FittedView")
class FittedView:
    """One fitted view: its map or kernel, its centering statistics and its training data.

    Parameters
    ----------
    X : Tensor of shape (n, d_v)
    kernel : Kernel or None
        The view's kernel when it has no explicit map (its data-derived widths resolved on ``X``).
    feature_map : FeatureMap or None
        The view's explicit map, fitted here on ``X``.
    center : bool

    Attributes
    ----------
    X_fit_ : Tensor (n, d_v)
    feature_map_ : FeatureMap or None
    kernel_ : Kernel
    phi_mean_ : Tensor (d_f,) or None
        Training mean of ``phi_v`` (explicit maps only; zeros when not centering).
    centerer_ : KernelCenterer
        Statistics of the raw training Gram matrix, fitted by :meth:`gram` (dual form only).
    raw_scale_ : float
        ``max |K_ij|`` of the raw training Gram matrix (set by :meth:`gram`).
    inner_, gram_hidden_, row_mean_hidden_, weight_basis_, weight_offset_ : Tensor or None
        Decoding state, all at most ``n x s``, set by :meth:`attach_hidden` (see docs/numerics).
    """

    #: The fitted state a model file holds ("n" samples, "d" input width, "f" features, "s" components).
    _fitted_constraints = {
        "X_fit_": [TensorSpec(shape=("n", "d"))],
        "center": ["boolean"],
        "feature_map_": [FeatureMap, None],
        "kernel_": [Kernel, callable],
        "centerer_": [KernelCenterer],
        "phi_mean_": [TensorSpec(shape=("f",)), None],
        "_raw_features": [None],  # a fit-time cache, released at the end of fit
        "gram_hidden_": [TensorSpec(shape=("n", "s")), None],
        "row_mean_hidden_": [TensorSpec(shape=("s",)), None],
        "weight_basis_": [TensorSpec(shape=("n", "s")), None],
        "weight_offset_": [TensorSpec(shape=("n",)), None],
        "raw_scale_": [Interval(Real, 0, None, closed="left"), OPTIONAL],  # dual views only
        "inner_": [TensorSpec(shape=("s", "s"))],
    }

    def __init__(self, X: torch.Tensor, kernel: Kernel | None, feature_map: FeatureMap | None, center: bool):
        self.X_fit_ = X
        self.center = center
        self.feature_map_ = feature_map
        if feature_map is not None:
            self.kernel_ = feature_map.fit(X).as_kernel()
        else:
            self.kernel_ = kernel.resolve(X)  # a data-derived width from this view's inputs
        self.centerer_ = KernelCenterer(center)
        self.phi_mean_ = None
        self._raw_features: torch.Tensor | None = None  # cache of phi_v(X_fit_) during fit only
        self.gram_hidden_ = self.row_mean_hidden_ = None
        self.weight_basis_ = self.weight_offset_ = None

    @property
    def explicit(self) -> bool:
        return self.feature_map_ is not None

    @property
    def identity(self) -> bool:
        return isinstance(self.feature_map_, Identity)

    def raw_features(self) -> torch.Tensor:
        """Raw training features ``Phi_v`` (n, d_f) (explicit maps), mapped once and cached until :meth:`attach_hidden`."""
        if self._raw_features is None:
            self._raw_features = self.feature_map_.map(self.X_fit_)
        return self._raw_features

    def features(self) -> torch.Tensor:
        """Centered training features ``Phi_v - 1 m_v^T`` (n, d_f); stores ``phi_mean_``."""
        Phi = self.raw_features()
        self.phi_mean_ = Phi.mean(0) if self.center else torch.zeros_like(Phi[0])
        return Phi - self.phi_mean_

    def gram(self) -> torch.Tensor:
        """Centered training Gram matrix ``M K_v M`` (n, n) (raw ``K_v`` when not centering); fits the centerer."""
        if self.explicit:
            # K_c = Phi_c Phi_c^T is more accurate than M K M, and the centerer's statistics come from the raw
            # mean feature mu (K 1 / n = Phi mu, 1^T K 1 / n^2 = |mu|^2) without forming K = Phi Phi^T.
            raw = self.raw_features()
            Phi = self.features()
            mu = raw.mean(0)
            self.centerer_.set_statistics_(raw @ mu, mu @ mu)
            # max |K_ij| of a PSD matrix is its largest diagonal entry |phi_i|^2.
            self.raw_scale_ = float(raw.pow(2).sum(1).amax())
            return Phi @ Phi.T
        G = CenteredGram(self.kernel_, self.X_fit_, center=self.center, what="Gram matrix of the view's kernel")
        self.centerer_ = G.centerer
        # Centering leaves rounding errors of the raw magnitude: it sets the rank tolerance.
        self.raw_scale_ = G.scale
        return G.matrix

    def attach_hidden(self, H: torch.Tensor, U: torch.Tensor | None, gram_c: torch.Tensor | None) -> None:
        """Store the decoding state (see Attributes) from the hidden features ``H`` (n, s), ``U = Phi_c,v^T H``
        (d_f, s) of explicit maps, and the training Gram matrix ``gram_c`` of :meth:`gram` (kernel-only views).
        """
        if self.explicit:
            self.inner_ = U.T @ U
            if not self.identity:
                raw = self.raw_features()
                self.weight_basis_ = raw @ U
                self.weight_offset_ = raw @ self.phi_mean_
            self._raw_features = None  # the fit's last use of the cached n x d_f training features
            return
        self.gram_hidden_ = gram_c @ H
        inner = H.T @ self.gram_hidden_
        self.inner_ = 0.5 * (inner + inner.T)
        if self.center:
            c = self.centerer_
            self.row_mean_hidden_ = H.T @ (c.column_means_ - c.grand_mean_)

    def map_centered(self, X: torch.Tensor) -> torch.Tensor:
        """``phi_v(x) - m_v`` for new rows (m, d_f) (explicit maps)."""
        return self.feature_map_.map(X) - self.phi_mean_

    def kernel_vectors(self, X: torch.Tensor) -> torch.Tensor:
        """Centered kernel vectors ``k_c(x)`` of new rows against the training rows, (m, n)."""
        return self.centerer_.transform(self.kernel_.gram(X, self.X_fit_))


def resolve_view_specs(
    n_views: int, kernels: Sequence[Any] | None, feature_maps: Sequence[Any] | None
) -> list[tuple[Kernel | None, FeatureMap | None]]:
    """Per view, ``(kernel, unfitted feature map)``, exactly one of them not None: a linear kernel (or None)
    becomes the Identity map, a ``FeatureMapKernel`` its (copied) map."""
    if kernels is not None and feature_maps is not None:
        raise ValueError("pass either kernels or feature_maps, not both (feature maps induce their kernels).")
    specs = kernels if kernels is not None else feature_maps
    what = "kernels" if kernels is not None else "feature_maps"
    if specs is None:
        specs = [None] * n_views
    if len(specs) != n_views:
        raise ValueError(f"{what} has {len(specs)} entries but there are {n_views} views; give one per view.")
    out: list[tuple[Kernel | None, FeatureMap | None]] = []
    for i, spec in enumerate(specs):
        if what == "feature_maps":
            spec = Identity() if spec is None else spec
            if not isinstance(spec, FeatureMap):
                raise TypeError(f"feature_maps[{i}] must be a kppca.features.FeatureMap or None, got {type(spec).__name__}.")
        if isinstance(spec, FeatureMap):  # an explicit map (among kernels too): fitted on its view
            out.append((None, clone(spec)))
            continue
        kernel = as_kernel(spec)
        if type(kernel) is Linear:
            out.append((None, Identity()))
        elif isinstance(kernel, FeatureMapKernel):
            kernel._check_params()
            out.append((None, copy.deepcopy(kernel.feature_map)))
        else:
            out.append((copy.deepcopy(kernel), None))
    return out
