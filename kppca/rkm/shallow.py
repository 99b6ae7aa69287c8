"""Kernel PCA and the matrix SVD written as Restricted Kernel Machines (deep-RKM paper, §3.2-3.3): thin wrappers
on :mod:`kppca._linalg`'s eigensolvers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch
from sklearn.base import ClassNamePrefixFeaturesOutMixin

from .._linalg import eigh_descending, rank_tolerance
from .._param_validation import Integral, Interval, Real, check_scalar, fit_context
from .._validation import ArrayLike, as_tensor, is_numpy_like, resolve_dtype
from ..base import DEVICE_CONSTRAINTS, KernelEstimator, KernelTransformerMixin
from ..io import ESTIMATOR_STATE, TensorSpec, register
from ..kernels import CenteredGram, Kernel, KernelCenterer
from ._gram import resolve_kernel, top_spectrum

__all__ = ["KernelPCARKM", "SVDResult", "matrix_svd_rkm"]


@register(name="kppca.KernelPCARKM")
class KernelPCARKM(ClassNamePrefixFeaturesOutMixin, KernelTransformerMixin, KernelEstimator):
    """Kernel PCA in RKM form: ``(1/eta) K_c H = H Lam``, ``H^T H = I``.

    Parameters
    ----------
    n_components : int >= 1, default 2
        Number of hidden features ``s`` (at most the rank of the centred Gram matrix).
    kernel : Kernel, str, callable or None, default "rbf"
        The default ``"rbf"`` takes its bandwidth from the data (see :mod:`kppca.kernels.bandwidth`).
    eta : float > 0, default 1.0
        Scale of the eigenvalues: ``lambda_k = (eigenvalue k of K_c) / eta``.
    center : bool, default True
        Centre the Gram matrix in feature space (new points with the training means).
    dtype, device
        As elsewhere in the package.

    Attributes
    ----------
    hidden_features_ : Tensor of shape (N, s)
        ``H``, orthonormal columns.
    eigenvalues_ : Tensor of shape (s,)
        ``lambda_k``, descending.
    X_fit_ : Tensor of shape (N, D)
    kernel_ : Kernel
    centerer_ : KernelCenterer
    """

    #: The fitted state a model file holds ("n" training points; see :mod:`kppca.io.specs`).
    _fitted_constraints = {
        **ESTIMATOR_STATE,
        "_numpy_fit_": ["boolean"],
        "kernel_": [Kernel, callable],
        "centerer_": [KernelCenterer],
        "hidden_features_": [TensorSpec(shape=("n", "n_components_"))],
        "eigenvalues_": [TensorSpec(shape=("n_components_",))],
        "X_fit_": [TensorSpec(shape=("n", "n_features_in_"))],
        "n_components_": [Interval(Integral, 1, None, closed="left")],
    }

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernel": [Kernel, str, callable, None],
        "eta": [Interval(Real, 0, None, closed="neither")],
        "center": ["boolean"],
        **DEVICE_CONSTRAINTS,
    }

    def __init__(
        self,
        n_components: int = 2,
        *,
        kernel: Kernel | Callable | str | None = "rbf",
        eta: float = 1.0,
        center: bool = True,
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    @fit_context
    def fit(self, X: ArrayLike, y: Any = None) -> KernelPCARKM:
        """Solve the KPCA eigenvalue problem on ``X`` (N, D); ``y`` is ignored. Returns ``self``."""
        Xt, _ = self._validate_fit_input(X)
        self.kernel_ = resolve_kernel(self.kernel, Xt)
        G = CenteredGram(self.kernel_, Xt, center=self.center, what="Gram matrix of `kernel` on X")
        s = int(self.n_components)
        spec = top_spectrum(G, s)
        self.centerer_ = G.centerer
        G.release()  # transform needs the centering statistics and H only
        self.hidden_features_ = spec.vectors
        self.eigenvalues_ = spec.values / float(self.eta)
        self.X_fit_ = Xt
        self.n_components_ = s
        return self

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def transform(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Dual scores ``e = (1/eta) sum_j h_j k_c(x_j, x)`` (M, s) of new points (``H Lam`` on the training points)."""
        Xt = self._validate_new_input(X, method="transform")
        Kx = self.centerer_.transform(self.kernel_.gram(Xt, self.X_fit_))
        return self._to_output(Kx @ self.hidden_features_ / float(self.eta), X)


class SVDResult(NamedTuple):
    """Singular triplets: ``values`` (k,) descending and positive; ``left`` (m, k), ``right`` (n, k) orthonormal."""

    values: torch.Tensor
    left: torch.Tensor
    right: torch.Tensor


def matrix_svd_rkm(A: ArrayLike, n_components: int | None = None, *, dtype: Any = None) -> SVDResult:
    """Top singular triplets of ``A`` (m, n) from the RKM system ``[[0, A], [A^T, 0]] v = lambda v``.

    The column signs follow the package convention on the eigenvector ``[u_k; v_k] / sqrt 2``.

    Parameters
    ----------
    A : array-like or Tensor of shape (m, n)
    n_components : int or None
        Number of triplets ``k`` (default ``min(m, n)``); fewer when fewer singular values exceed rounding.
    dtype : optional, float64 by default

    Returns
    -------
    SVDResult
        numpy arrays for non-tensor input.
    """
    At = as_tensor(A, "A", dtype=resolve_dtype(dtype, like=A), device=A.device if isinstance(A, torch.Tensor) else None)
    m, n = At.shape
    k = min(m, n) if n_components is None else int(check_scalar(n_components, "n_components", [Interval(Integral, 1, None, closed="left")]))
    if k > min(m, n):
        raise ValueError(f"n_components={k} exceeds min(m, n) = {min(m, n)} for A of shape {(m, n)}.")
    B = At.new_zeros(m + n, m + n)
    B[:m, m:] = At
    B[m:, :m] = At.T
    values, vectors = eigh_descending(B)
    tol = rank_tolerance(float(values[0]), m + n, At.dtype)
    k = min(k, int((values > tol).sum()))
    V = vectors[:, :k] * (2.0 ** 0.5)
    out = SVDResult(values[:k], V[:m], V[m:])
    if is_numpy_like(A):
        return SVDResult(*(t.cpu().numpy() for t in out))
    return out
