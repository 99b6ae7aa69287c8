"""What a pre-image strategy is called with: the points (:class:`FeaturePoints`) and the training set."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from .._cache import LazyCache
from .._validation import ArrayLike, as_tensor
from ..kernels import Kernel, KernelCenterer, as_kernel
from ._common import dtype_device

if TYPE_CHECKING:
    from ..kernels.centered_gram import CenteredGram

__all__ = ["TrainingContext", "LandmarkContext", "FeaturePoints", "Factored", "take_columns"]


def take_columns(W: torch.Tensor, columns: slice | torch.Tensor | None) -> torch.Tensor:
    """The columns ``columns`` of ``W`` (M, N): all (None), a range (a slice), or per row ((M, c) indices, as
    ``torch.gather``)."""
    if columns is None:
        return W
    return W[:, columns] if isinstance(columns, slice) else torch.gather(W, 1, columns)


@dataclass(frozen=True, eq=False)
class TrainingContext:
    """Training inputs, kernel and centering statistics shared by all pre-image strategies.

    Parameters
    ----------
    X : Tensor of shape (N, D)
        Training inputs, from which the pre-images are built.
    kernel : Kernel
        The kernel of the feature space (a feature map's induced kernel for a primal model).
    centerer : KernelCenterer
        Fitted on the training Gram matrix (``center=False`` means ``m = 0``).
    diag_centered : Tensor of shape (N,)
        ``(K_c)_ii = |phi_i - m|^2``.
    gram : CenteredGram, optional
        The owner's centered Gram matrix on ``X``: training Gram rows are read from it, not evaluated.
    """

    X: torch.Tensor
    kernel: Kernel
    centerer: KernelCenterer
    diag_centered: torch.Tensor
    gram: CenteredGram | None = None
    # What the context derives on first use (the kernel's share of X in gram_rows), once, thread-safe.
    _derived: LazyCache = field(default_factory=LazyCache, init=False, repr=False, compare=False)

    @classmethod
    def from_inputs(
        cls, X: ArrayLike, kernel: Any, *, center: bool = True, gram: ArrayLike | None = None
    ) -> "TrainingContext":
        """Build a context from training inputs and a kernel (one Gram matrix, ``O(N^2 D)``).

        Parameters
        ----------
        X : array-like of shape (N, D)
        kernel : Kernel, callable or str
        center : bool, default True
            Whether feature vectors are centered at the training mean ``m``.
        gram : array-like of shape (N, N), optional
            The raw Gram matrix ``K`` when already computed.
        """
        dtype, device = dtype_device(X, gram)
        Xt = as_tensor(X, "X", dtype=dtype, device=device)
        k = as_kernel(kernel).resolve(Xt)  # a data-derived width (bandwidth="scale") from X
        K = k.gram(Xt, Xt) if gram is None else as_tensor(gram, "gram", dtype=Xt.dtype, device=Xt.device)
        N = Xt.shape[0]
        if K.shape != (N, N):
            raise ValueError(f"gram must have shape ({N}, {N}) for X with {N} rows, got {tuple(K.shape)}.")
        diag = K.diagonal().clone()
        centerer = KernelCenterer(center)
        centerer.fit_center_(K.clone())
        if center:
            diag = diag - 2 * centerer.column_means_ + centerer.grand_mean_
        return cls(Xt, k, centerer, diag)

    def gram_rows(self, start: int, stop: int) -> torch.Tensor:
        """Raw training Gram rows ``K[start:stop]`` (stop - start, N): kernel values, never the ``K_c`` buffer."""
        if self.gram is None:
            # X's share (a feature map's phi(X), RBF norms) once, not per row block (Kernel.against: bitwise the same)
            return self._derived.get("against-X", lambda: self.kernel.against(self.X))(self.X[start:stop])
        return self.gram.raw_vectors(self.X[start:stop])

    @property
    def n_samples(self) -> int:
        """Number of training points N."""
        return int(self.X.shape[0])

    @property
    def center(self) -> bool:
        """Whether feature vectors are centered (``m`` = training mean) or not (``m = 0``)."""
        return bool(self.centerer.center)

    def row_means(self, alpha: torch.Tensor | Factored) -> torch.Tensor:
        """(M,) ``s = <m, psi> = 1^T K 1 / N^2 + (K 1 / N - 1^T K 1 / N^2)^T alpha`` for ``psi - m = Phi_c alpha``."""
        if not self.center:
            return self.X.new_zeros(alpha.shape[0])
        cm, gm = self.centerer.column_means_, self.centerer.grand_mean_
        return gm + alpha @ (cm - gm)

    def raw_weights(self, k_c: torch.Tensor, alpha: torch.Tensor | Factored,
                    columns: slice | torch.Tensor | None = None, *,
                    row_means: torch.Tensor | None = None) -> torch.Tensor:
        """Raw kernel weights ``<phi_i, psi> = k_c + K 1/N + (s - 1^T K 1/N^2) 1``, shape (M, N).

        ``columns``: only those of the training points ``columns`` (as :func:`take_columns`), (M, c), each the same
        value as in the whole matrix. ``row_means``: ``s = row_means(alpha)`` when already computed (a caller that
        asks for many blocks of columns computes it once).
        """
        k_c = take_columns(k_c, columns)
        if not self.center:
            return k_c
        s = self.row_means(alpha) if row_means is None else row_means
        return self.centerer.uncenter(k_c, s, columns)

    def sq_distances(self, k_c: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """Feature-space distances ``|psi - phi_i|^2 = |psi - m|^2 - 2 k_c + |phi_i - m|^2``, (M, N), >= 0."""
        sq_norms = (alpha * k_c).sum(1).clamp(min=0.0)  # |psi - m|^2 = alpha^T K_c alpha
        return (sq_norms[:, None] - 2 * k_c + self.diag_centered).clamp(min=0.0)


@dataclass(frozen=True, eq=False)
class LandmarkContext(TrainingContext):
    """A :class:`~kppca.preimage.TrainingContext` over kept rows, for a primal model that keeps no training inputs.

    The Nyström landmarks ``L`` span the feature space (:meth:`~kppca.features.base.FeatureMap.reference_set`);
    the model keeps them and more rows of its data ``S = [L; extra]``, and the strategies work over those as over
    training points. The model's mean need not lie in the affine hull of ``phi(L)``, so ``alpha`` holds the
    uncentered expansion ``beta`` (``psi = phi(S)^T beta``, which always exists with ``beta`` 0 beyond the
    landmarks) rather than centered dual coefficients (derivation in docs/numerics). Build it with
    :meth:`from_features`; ``features = phi(S)`` (n, d) gives Gram rows on demand (no ``n x n`` matrix kept).
    """

    features: torch.Tensor | None = None

    @classmethod
    def from_features(cls, rows: torch.Tensor, features: torch.Tensor, mean: torch.Tensor, kernel,
                      center: bool = True) -> "LandmarkContext":
        """The context of kept rows ``S`` (n, D) with features ``phi(S)`` (n, d) and the model's mean ``m`` (d,)."""
        m = mean if center else torch.zeros_like(mean)
        centerer = KernelCenterer(bool(center)).set_statistics_(features @ m, m @ m)
        centered = features - m
        return cls(rows, kernel, centerer, (centered**2).sum(1), features=features)

    def gram_rows(self, start: int, stop: int) -> torch.Tensor:
        """Raw Gram rows ``phi(S)[start:stop] phi(S)^T`` of the kept rows (stop - start, n)."""
        return self.features[start:stop] @ self.features.T

    def row_means(self, alpha: torch.Tensor) -> torch.Tensor:
        """``<m, psi> = beta^T phi(S) m`` for ``psi = phi(S)^T beta`` (``alpha`` holds ``beta``), shape (M,)."""
        if not self.center:
            return alpha.new_zeros(alpha.shape[0])
        return alpha @ self.centerer.column_means_

    def sq_distances(self, k_c: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
        """``|psi - phi(s_j)|^2`` (M, n) from ``k_c`` and the uncentered expansion ``beta`` (in ``alpha``), >= 0."""
        raw = self.raw_weights(k_c, alpha)  # <phi(l_j), psi>
        sq_norms = (alpha * raw).sum(1)  # |psi|^2 = beta^T phi(S) psi
        if self.center:
            sq_norms = sq_norms - 2 * self.row_means(alpha) + self.centerer.grand_mean_
        return (sq_norms.clamp(min=0.0)[:, None] - 2 * k_c + self.diag_centered).clamp(min=0.0)


@dataclass(frozen=True, eq=False)
class Factored:
    """An (M, N) matrix held as ``left @ right.T`` (``left`` (M, r), ``right`` (N, r)) until its entries are needed.

    Sampled codes give dual coefficients ``alpha = (h a) E^T`` that the default pre-image only multiplies by one
    vector (the row means); at N = 60,000 forming them for 2,000 samples took 0.2-0.7 s and 0.5 GB.
    """

    left: torch.Tensor
    right: torch.Tensor

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.left.shape[0]), int(self.right.shape[0]))

    def __getitem__(self, rows: slice | torch.Tensor) -> "Factored":
        return Factored(self.left[rows], self.right)

    def __matmul__(self, v: torch.Tensor) -> torch.Tensor:
        return self.left @ (self.right.T @ v)

    def dense(self) -> torch.Tensor:
        """The matrix, (M, N)."""
        return self.left @ self.right.T


@dataclass(frozen=True, eq=False)
class FeaturePoints:
    """A batch of M feature-space points, ``psi - m = Phi_c alpha``, handed to a pre-image strategy.

    Parameters
    ----------
    k_c : Tensor of shape (M, N)
        Centered kernel vectors ``Phi_c^T (psi - m)``.
    alpha : Tensor or Factored of shape (M, N)
        Dual coefficients (:meth:`dual_coefficients` forms a :class:`Factored` one).
    coordinates : callable, optional
        ``coordinates(n_coordinates) -> (train (N, p), new (M, p), key)``: principal coordinates of the
        training points and of these points (None: the model's choice), with a hashable key; for ``"learned"``.
    candidates : Tensor of shape (M, N), bool, optional
        Which training points each pre-image may be built from (None: all); honoured by smoother and knn.
    sampled : bool, default False
        The points are draws of ``sample``, not maps of given inputs or codes (the smoother then corrects for hubs).
    """

    k_c: torch.Tensor
    alpha: torch.Tensor | Factored
    coordinates: Any = None
    candidates: torch.Tensor | None = None
    sampled: bool = False

    def __len__(self) -> int:
        return int(self.k_c.shape[0])

    def dual_coefficients(self) -> torch.Tensor:
        """``alpha`` as a tensor (M, N)."""
        return self.alpha.dense() if isinstance(self.alpha, Factored) else self.alpha

    def select(self, rows: slice | torch.Tensor) -> "FeaturePoints":
        """The points at ``rows`` (a slice, or an (M,) boolean mask), without the coordinates (whole batches only)."""
        cand = None if self.candidates is None else self.candidates[rows]
        return FeaturePoints(self.k_c[rows], self.alpha[rows], None, cand, self.sampled)
