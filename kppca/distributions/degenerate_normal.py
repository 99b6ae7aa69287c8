"""Gaussians supported on an affine subspace (singular covariance), without jitter."""

from __future__ import annotations

import math

import torch
from pyro.distributions import TorchDistribution
from torch.distributions import constraints
from torch.distributions.utils import lazy_property

from .._linalg import rounding_tolerance
from .._linalg import support_rtol as default_support_rtol


#: Multiple of the leak ``delta`` below which an off-basis residual is attributed to the factor
#: (``1 + t`` with ``t = 12``: a false rejection of a sample has probability ``exp(-72) < 1e-31``).
LEAK_QUANTILE = 13.0


class _AffineSubspace(constraints.Constraint):
    """The support ``loc + range(F)``: ``check(x)`` is True exactly where ``log_prob(x)`` is finite."""

    event_dim = 1

    def __init__(self, distribution: "DegenerateMultivariateNormal"):
        self._distribution = distribution

    def check(self, value: torch.Tensor) -> torch.Tensor:
        _, off_support = self._distribution.support_coordinates(value)
        return ~off_support

    def __repr__(self) -> str:
        n, r = self._distribution.event_shape[0], self._distribution.rank
        return f"AffineSubspace(dim={r} in R^{n})"


class DegenerateMultivariateNormal(TorchDistribution):
    r"""Multivariate normal with a possibly singular covariance ``F F^T``, without jitter.

    It lives on the affine subspace ``loc + range(F)`` of dimension ``r = rank(F)``; samples are
    ``loc + F a`` with ``a ~ N(0, I_m)``, so ``F`` may be any square-root factor. ``log_prob`` is the
    density with respect to Lebesgue measure on that subspace (as
    ``scipy.stats.multivariate_normal(..., allow_singular=True)``) and ``-inf`` off it.

    Parameters
    ----------
    loc : Tensor of shape (..., n)
        Mean; its leading dimensions are the batch shape.
    scale_factor : Tensor of shape (n, m), optional
        Any ``F`` with covariance ``F F^T``, shared by the batch, used by ``rsample``; default ``basis * basis_scale``.
    basis : Tensor of shape (n, r), optional
        Orthonormal basis of ``range(F)``; when not given, from an SVD of ``F`` on first use.
    basis_scale : Tensor of shape (r,), optional
        Positive standard deviations along ``basis`` (``F F^T = basis diag(basis_scale^2) basis^T``);
        required together with ``basis``.
    support_rtol : float, optional
        Relative distance from the subspace beyond which a value is off the support (default ``sqrt(eps)``).
    validate_args : bool, optional
        When true, ``log_prob`` of an off-support value raises instead of returning ``-inf``.
    """

    arg_constraints = {"loc": constraints.real_vector}
    has_rsample = True

    @constraints.dependent_property(is_discrete=False, event_dim=1)
    def support(self) -> constraints.Constraint:
        """The affine subspace ``loc + range(F)``; ``support.check(x)`` is True where :meth:`log_prob` is finite."""
        return _AffineSubspace(self)

    @classmethod
    def infer_shapes(cls, loc, scale_factor=None, basis=None, basis_scale=None, support_rtol=None,
                     validate_args=None):
        """``(batch_shape, event_shape)`` from the argument shapes (Pyro's contract): the batch is ``loc``'s."""
        loc = torch.Size(loc)
        if len(loc) < 1:
            raise ValueError("loc must be at least one-dimensional, shape (..., n).")
        return loc[:-1], loc[-1:]

    def __init__(
        self,
        loc: torch.Tensor,
        scale_factor: torch.Tensor | None = None,
        *,
        basis: torch.Tensor | None = None,
        basis_scale: torch.Tensor | None = None,
        support_rtol: float | None = None,
        validate_args: bool | None = None,
    ):
        batch_shape, event_shape = self.infer_shapes(loc.shape)
        n = event_shape[0]
        if (basis is None) != (basis_scale is None):
            raise ValueError("basis and basis_scale must be given together.")
        if basis is not None:
            # Checked before the default scale_factor = basis * basis_scale is formed from them.
            if basis.ndim != 2 or basis.shape[0] != n or basis_scale.shape != (basis.shape[1],):
                raise ValueError(
                    f"basis must be (n, r) and basis_scale (r,); got {tuple(basis.shape)} and "
                    f"{tuple(basis_scale.shape)} with n = {n}."
                )
            if bool((basis_scale <= 0).any()):
                raise ValueError("basis_scale must be strictly positive; drop the null directions from basis.")
            self._basis = (basis, basis_scale)
        if scale_factor is None:
            if basis is None:
                raise ValueError("give scale_factor, or basis and basis_scale.")
            scale_factor = basis * basis_scale
            self._leak = 0.0  # a factor built from the basis lies in its span exactly
        if scale_factor.ndim != 2 or scale_factor.shape[0] != n:
            raise ValueError(
                f"scale_factor must have shape (n, m) = ({n}, m) to match loc, got {tuple(scale_factor.shape)}."
            )
        self.loc = loc
        self.scale_factor = scale_factor
        self.support_rtol = default_support_rtol(loc.dtype) if support_rtol is None else float(support_rtol)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @lazy_property
    def _basis(self) -> tuple[torch.Tensor, torch.Tensor]:
        # Thin SVD F = U S V^T: U spans range(F) and F F^T = U S^2 U^T.
        U, S, _ = torch.linalg.svd(self.scale_factor, full_matrices=False)
        tol = rounding_tolerance(S.dtype, max(self.scale_factor.shape), S[0] if S.numel() else 0.0)
        keep = S > tol
        # The dropped singular directions are still in the sampler's range: they are the leak.
        self._leak = float(torch.linalg.vector_norm(S[~keep]))
        return U[:, keep], S[keep]

    @lazy_property
    def _leak(self) -> float:
        """``||(I - U U^T) F||_F``: how far draws of the sampler's factor reach off :attr:`basis`."""
        U, _ = self._basis  # the SVD route sets _leak itself
        if "_leak" in self.__dict__:
            return self.__dict__["_leak"]
        F = self.scale_factor
        return float(torch.linalg.vector_norm(F - U @ (U.T @ F)))

    @property
    def basis(self) -> torch.Tensor:
        """Orthonormal basis of the support directions, shape (n, r)."""
        return self._basis[0]

    @property
    def basis_scale(self) -> torch.Tensor:
        """Standard deviations along :attr:`basis`, shape (r,)."""
        return self._basis[1]

    @property
    def rank(self) -> int:
        """Dimension ``r`` of the support."""
        return int(self._basis[1].shape[0])

    @property
    def mean(self) -> torch.Tensor:
        return self.loc

    mode = mean

    @property
    def variance(self) -> torch.Tensor:
        return (self.scale_factor**2).sum(-1).expand(self.batch_shape + self.event_shape)

    @property
    def covariance_matrix(self) -> torch.Tensor:
        """``F F^T``, shape (..., n, n)."""
        cov = self.scale_factor @ self.scale_factor.T
        return cov.expand(self.batch_shape + cov.shape)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(DegenerateMultivariateNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new.scale_factor = self.scale_factor
        new.support_rtol = self.support_rtol
        for key in ("_basis", "_leak"):
            if key in self.__dict__:
                setattr(new, key, self.__dict__[key])
        super(DegenerateMultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()) -> torch.Tensor:
        """Draw ``loc + F a`` with ``a ~ N(0, I_m)``; shape ``sample_shape + batch_shape + (n,)``."""
        shape = self._extended_shape(sample_shape)[:-1] + (self.scale_factor.shape[1],)
        a = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + a @ self.scale_factor.T

    def support_tolerance(self, dtype: torch.dtype | None = None) -> float:
        """``support_rtol``, raised to the rounding level ``(n + m) eps`` of drawing ``loc + F a`` and projecting it."""
        n, m = self.scale_factor.shape
        return max(self.support_rtol, rounding_tolerance(dtype or self.loc.dtype, n + m, 1.0))

    def support_coordinates(self, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Coordinates ``U^T (value - loc)`` of ``value`` in :attr:`basis`, and whether it is off the support.

        Returns
        -------
        z : Tensor of shape ``sample/batch shape + (r,)``
        off_support : bool Tensor of shape ``sample/batch shape``
            Residual above ``LEAK_QUANTILE * leak + rtol * size``, ``size = ||value|| + ||loc|| + max(basis_scale)``.
        """
        n = self.event_shape[0]
        if value.ndim < 1 or value.shape[-1] != n:
            # Broadcasting would otherwise spread a value of event size 1 over all n coordinates.
            raise ValueError(
                f"value must have event shape ({n},) (shape (..., {n})), got shape {tuple(value.shape)}."
            )
        U, s = self._basis
        y = value - self.loc
        z = y @ U
        residual = torch.linalg.vector_norm(y - z @ U.T, dim=-1)
        size = torch.linalg.vector_norm(value, dim=-1) + torch.linalg.vector_norm(self.loc, dim=-1)
        if s.numel():
            size = size + s.max()
        return z, residual > LEAK_QUANTILE * self._leak + self.support_tolerance(value.dtype) * size

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """Log density on the support subspace; ``-inf`` off it. Shape ``sample/batch shape``."""
        _, s = self._basis
        z, off_support = self.support_coordinates(value)
        if self._validate_args and bool(off_support.any()):
            raise ValueError(
                "value lies off the support of the DegenerateMultivariateNormal (the affine subspace "
                "loc + range(scale_factor)); its density there is zero."
            )
        logp = -0.5 * ((z / s) ** 2).sum(-1) - torch.log(s).sum() - 0.5 * self.rank * math.log(2 * math.pi)
        return logp.masked_fill(off_support, -math.inf)

    def entropy(self) -> torch.Tensor:
        """Differential entropy on the support subspace."""
        s = self._basis[1]
        h = 0.5 * self.rank * (1.0 + math.log(2 * math.pi)) + torch.log(s).sum()
        return h.expand(self.batch_shape)
