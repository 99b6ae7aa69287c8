"""Points of the Stiefel manifold ``{H in R^{n x s} : H^T H = I}``: projection, random start, check."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["check_orthonormal", "project_stiefel", "random_stiefel"]


def project_stiefel(M: torch.Tensor) -> torch.Tensor:
    """Closest matrix with orthonormal columns to ``M`` (n, s), ``n >= s``: its polar factor ``P Q^T`` (SVD).

    Parameters
    ----------
    M : Tensor of shape (n, s)

    Returns
    -------
    Tensor of shape (n, s)
    """
    if M.shape[-2] < M.shape[-1]:
        raise ValueError(
            f"cannot project a {tuple(M.shape)} matrix onto the Stiefel manifold: it needs at least as many "
            "rows as columns (reduce the number of components or add training points)."
        )
    P, _, Qh = torch.linalg.svd(M, full_matrices=False)
    return P @ Qh


def random_stiefel(n: int, s: int, *, generator: torch.Generator, dtype: torch.dtype,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """The package's one random start on the Stiefel manifold: QR of a Gaussian (n, s) matrix, ``diag(R) > 0``.

    Haar-distributed, and a deterministic function of the generator's state on any ``device``.

    Parameters
    ----------
    n, s : int
        Shape, ``1 <= s <= n``.
    generator : torch.Generator
    dtype : torch dtype
    device : torch device, optional
        Default: the generator's device.

    Returns
    -------
    Tensor of shape (n, s) with orthonormal columns.
    """
    if not 1 <= s <= n:
        raise ValueError(f"a random Stiefel point needs 1 <= s <= n, got n = {n}, s = {s}: use fewer components "
                         "or more points.")
    G = torch.randn(n, s, generator=generator, dtype=dtype, device=generator.device)
    G = G.to(device if device is not None else generator.device)
    Q, R = torch.linalg.qr(G)
    signs = torch.sign(R.diagonal())
    signs[signs == 0] = 1
    return Q * signs


def check_orthonormal(H0: Any, name: str = "H0") -> torch.Tensor:
    """Validate a starting point: a finite floating (n, s) tensor, ``s <= n``, with ``H0^T H0 = I``.

    The tolerance ``10 n eps`` bounds the rounding of a Householder QR, so any QR basis passes.
    """
    if not isinstance(H0, torch.Tensor) or not H0.is_floating_point():
        raise TypeError(f"{name} must be a floating torch.Tensor of shape (n, s), got {type(H0).__name__}.")
    if H0.ndim != 2 or H0.shape[1] < 1 or H0.shape[1] > H0.shape[0]:
        raise ValueError(f"{name} must have shape (n, s) with 1 <= s <= n, got {tuple(H0.shape)}.")
    if not bool(torch.isfinite(H0).all()):
        raise ValueError(f"{name} contains NaN or infinity.")
    n, s = H0.shape
    gram = H0.detach().T @ H0.detach()
    err = float((gram - torch.eye(s, dtype=H0.dtype, device=H0.device)).abs().max())
    tol = 10 * n * torch.finfo(H0.dtype).eps
    if err > tol:
        raise ValueError(
            f"{name} must have orthonormal columns (H0^T H0 = I): max |H0^T H0 - I| = {err:.3g} > {tol:.3g}. "
            "Orthonormalise it first, e.g. H0 = torch.linalg.qr(H0).Q."
        )
    return H0
