"""Views of a multi-view model: input checking, feature maps or kernels, and per-view centering."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from sklearn.base import clone

from .._param_validation import Interval, Real
from ..io import TensorSpec, register
from ..io.record import FittedState, fitted
from ..features import FeatureMap, FeatureMapKernel, Identity
from ..kernels import CenteredGram, Kernel, KernelCenterer, Linear, as_kernel

__all__ = ["FittedView", "TrainingView", "split_views"]


def split_views(views: Any) -> tuple[list[Any], bool]:
    """The per-view arrays of ``views`` (a list/tuple of arrays (n, d_v), ``None`` for a missing view where allowed,
    or one array) and whether it was a single 2-D array."""
    if isinstance(views, (list, tuple)):
        items = list(views)
        if items and all(v is None or np.ndim(v) == 2 for v in items):
            return items, False
        if items and all(v is not None and np.ndim(v) in (0, 1) for v in items):
            return [views], True  # a nested list of numbers: one 2-D view
        raise ValueError(
            "views must be a list of 2-D arrays of shape (n, d_v), one per view; got a list with "
            f"dimensions {[None if v is None else np.ndim(v) for v in items]}."
        )
    if views is None:
        raise ValueError("views is None; pass a list of arrays of shape (n, d_v), one per view.")
    return [views], True


def overflow_error(what: str, dtype: torch.dtype) -> ValueError:
    """The error for a matrix of the views' products (``what``) that holds infinite values."""
    return ValueError(f"the {what} holds infinite values: a view's values overflow {dtype} in its products (e.g. a "
                      "view scaled by 1e300); standardise the views before fitting.")


class TrainingView:
    """One view while its model fits: the map or kernel fitted on ``X``, the centering statistics, and the raw
    training features cached between the solve and :meth:`finish`, which returns the :class:`FittedView`.

    Parameters
    ----------
    X : Tensor of shape (n, d_v)
    kernel : Kernel or None
        The view's kernel when it has no explicit map (its data-derived widths resolved on ``X``).
    feature_map : FeatureMap or None
        The view's explicit map, fitted here on ``X``.
    center : bool
    """

    def __init__(self, X: torch.Tensor, kernel: Kernel | None, feature_map: FeatureMap | None, center: bool):
        self.X_fit_ = X
        self.center = center
        self.feature_map_ = feature_map
        if feature_map is not None:
            self.kernel_ = feature_map.fit(X).as_kernel()
        else:
            self.kernel_ = kernel.resolve(X)  # a data-derived width from this view's inputs
        self.centerer_ = KernelCenterer(center)
        self.phi_mean_: torch.Tensor | None = None
        self.raw_scale_: float | None = None  # set by gram (the dual form)
        self._raw_features: torch.Tensor | None = None

    @property
    def explicit(self) -> bool:
        return self.feature_map_ is not None

    def raw_features(self) -> torch.Tensor:
        """Raw training features ``Phi_v`` (n, d_f) (explicit maps), mapped once per fit."""
        if self._raw_features is None:
            self._raw_features = self.feature_map_.map(self.X_fit_)
        return self._raw_features

    def features(self) -> torch.Tensor:
        """Centered training features ``Phi_v - 1 m_v^T`` (n, d_f); stores ``phi_mean_``."""
        Phi = self.raw_features()
        self.phi_mean_ = Phi.mean(0) if self.center else torch.zeros_like(Phi[0])
        return Phi - self.phi_mean_

    def gram(self) -> torch.Tensor:
        """Centered training Gram matrix ``M K_v M`` (n, n) (raw ``K_v`` when not centering); fits the centerer
        and sets ``raw_scale_``, ``max |K_ij|`` of the raw matrix."""
        if self.explicit:
            # K_c = Phi_c Phi_c^T is more accurate than M K M, and the centerer's statistics come from the raw
            # mean feature mu (K 1 / n = Phi mu, 1^T K 1 / n^2 = |mu|^2) without forming K = Phi Phi^T.
            raw = self.raw_features()
            # max |K_ij| of a PSD matrix is its largest diagonal entry |phi_i|^2: when it is finite, so are K and
            # the statistics below (|mu|^2 and |phi_i . mu| are at most that entry).
            self.raw_scale_ = float(raw.pow(2).sum(1).amax())
            if not math.isfinite(self.raw_scale_):
                raise overflow_error("Gram matrix of a view's feature map", raw.dtype)
            Phi = self.features()
            mu = raw.mean(0)
            self.centerer_.set_statistics_(raw @ mu, mu @ mu)
            return Phi @ Phi.T
        G = CenteredGram(self.kernel_, self.X_fit_, center=self.center, what="Gram matrix of the view's kernel")
        self.centerer_ = G.centerer
        # Centering leaves rounding errors of the raw magnitude: it sets the rank tolerance.
        self.raw_scale_ = G.scale
        return G.matrix

    def finish(self, H: torch.Tensor, U: torch.Tensor | None, gram_c: torch.Tensor | None) -> FittedView:
        """The fitted view with its decoding state (see :class:`FittedView`) from the hidden features ``H``
        (n, s), ``U = Phi_c,v^T H`` (d_f, s) of explicit maps, and the training Gram matrix ``gram_c`` of
        :meth:`gram` (kernel-only views)."""
        names = ("gram_hidden_", "row_mean_hidden_", "weight_basis_", "weight_offset_")
        decoding: dict[str, Any] = dict.fromkeys(names)  # None unless the view's kind needs it
        if self.explicit:
            decoding["inner_"] = U.T @ U
            if not isinstance(self.feature_map_, Identity):
                raw = self.raw_features()
                decoding["weight_basis_"] = raw @ U
                decoding["weight_offset_"] = raw @ self.phi_mean_
        else:
            gram_hidden = decoding["gram_hidden_"] = gram_c @ H
            inner = H.T @ gram_hidden
            decoding["inner_"] = 0.5 * (inner + inner.T)
            if self.center:
                c = self.centerer_
                decoding["row_mean_hidden_"] = H.T @ (c.column_means_ - c.grand_mean_)
        scale = {} if self.raw_scale_ is None else {"raw_scale_": self.raw_scale_}
        return FittedView(X_fit_=self.X_fit_, center=self.center, feature_map_=self.feature_map_,
                          kernel_=self.kernel_, centerer_=self.centerer_, phi_mean_=self.phi_mean_, **scale,
                          **decoding)


@register(name="kppca.rkm.FittedView")
@dataclasses.dataclass(frozen=True, kw_only=True)
class FittedView(FittedState):
    """One fitted view (built by :meth:`TrainingView.finish`): its map or kernel, its centering statistics, its
    training data and the state that decodes hidden features into it ("n" samples, "d" input width, "f"
    features, "s" components).

    Attributes
    ----------
    X_fit_ : Tensor (n, d_v)
    center : bool
    feature_map_ : FeatureMap or None
    kernel_ : Kernel
    centerer_ : KernelCenterer
        Statistics of the raw training Gram matrix (fitted in the dual form only).
    phi_mean_ : Tensor (d_f,) or None
        Training mean of ``phi_v`` (explicit maps only; zeros when not centering).
    raw_scale_ : float
        ``max |K_ij|`` of the raw training Gram matrix (the dual form only).
    inner_, gram_hidden_, row_mean_hidden_, weight_basis_, weight_offset_ : Tensor or None
        Decoding state, all at most ``n x s`` (see docs/numerics).
    """

    X_fit_: torch.Tensor = fitted(TensorSpec(shape=("n", "d")))
    center: bool = fitted("boolean")
    feature_map_: FeatureMap | None = fitted(FeatureMap, None)
    kernel_: Kernel = fitted(Kernel, callable)
    centerer_: KernelCenterer = fitted(KernelCenterer)
    phi_mean_: torch.Tensor | None = fitted(TensorSpec(shape=("f",)), None)
    gram_hidden_: torch.Tensor | None = fitted(TensorSpec(shape=("n", "s")), None)
    row_mean_hidden_: torch.Tensor | None = fitted(TensorSpec(shape=("s",)), None)
    weight_basis_: torch.Tensor | None = fitted(TensorSpec(shape=("n", "s")), None)
    weight_offset_: torch.Tensor | None = fitted(TensorSpec(shape=("n",)), None)
    raw_scale_: float = fitted(Interval(Real, 0, None, closed="left"), optional=True)
    inner_: torch.Tensor = fitted(TensorSpec(shape=("s", "s")))

    #: Format version 3 stored the fit-time cache of the raw features (always None once fitted).
    derived_in_old_files = ("_raw_features",)

    @property
    def explicit(self) -> bool:
        return self.feature_map_ is not None

    @property
    def identity(self) -> bool:
        return isinstance(self.feature_map_, Identity)

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
