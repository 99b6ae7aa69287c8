"""Pairwise distances in a scaled, cancellation-free form, and ``exp(-distance / width)`` without overflow.

The three hazards of the textbook formulas, handled once for every stationary kernel: cancellation of
the expansion ``|x|^2 + |y|^2 - 2 x.y`` (centered data; cancelled entries recomputed, so identical rows
give exactly 0), over/underflow of the data's squares (scaled by an exact power of two), and a width
whose ``1 / (2 bandwidth^2)`` is not representable (the exponent formed step by step in float64).
"""

from __future__ import annotations

import math

import torch

from .._linalg import matrix_scale

__all__ = [
    "power_of_two_scale", "scaled_squared_distances", "SquaredDistancesTo", "squared_distances", "pairwise_distances",
    "exp_neg_scaled",
]


def power_of_two_scale(m: torch.Tensor | float) -> float:
    """The power of two ``s`` with ``m / s`` in ``[0.5, 1)`` (``[1, 2)`` above ``2^1023``); 1.0 for 0 or non-finite."""
    m = float(m)
    if not (m > 0 and math.isfinite(m)):
        return 1.0
    return math.ldexp(1.0, min(math.frexp(m)[1], 1023))  # m >= 2^1023: m / s in [1, 2) (2^1024 overflows)


def _needs_scaling(m: float, dtype: torch.dtype, n_terms: int, power: int) -> bool:
    """True when sums of ``n_terms`` terms ``(2 m)^power`` overflow ``dtype`` or ``m^power`` loses bits to underflow."""
    if not (m > 0 and math.isfinite(m)):
        return False
    info = torch.finfo(dtype)
    hi = (info.max / (4.0 * max(n_terms, 1))) ** (1.0 / power)
    lo = (info.tiny / info.eps) ** (1.0 / power)
    return not lo <= m <= hi


def scaled_squared_distances(X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Squared Euclidean distances (n, m) of ``X`` (n, D), ``Y`` (m, D) in units of a power of two: ``(D / s^2, s)``.

    ``s = 1`` unless the squares of the centered data would over- or underflow; pass ``Y is X`` for a zero diagonal.
    """
    same = Y is X
    raw = max(matrix_scale(X), matrix_scale(Y))
    pre = power_of_two_scale(raw) if _overflows_centering(raw, Y) else 1.0
    if pre != 1.0:
        X = X / pre
        Y = X if same else Y / pre
    # c is a tiny (1, D) row; the centered copies are the size of the inputs, not (n, m, D).
    c = Y.mean(0, keepdim=True) if Y.shape[0] else Y.new_zeros((1, Y.shape[1]))
    Xc = X - c
    Yc = Xc if same else Y - c
    m = max(matrix_scale(Xc), matrix_scale(Yc))
    s = 1.0
    Xs, Ys = X, Y
    if _needs_scaling(m, X.dtype, X.shape[1], 2):
        s = power_of_two_scale(m)
        Xc, Xs = Xc / s, X / s  # exact: s is a power of two
        Yc, Ys = (Xc, Xs) if same else (Yc / s, Y / s)
    yy = None if same else (Yc * Yc).sum(1)
    return _expanded(Xc, Yc, Xs, Ys, yy, same), s * pre


class SquaredDistancesTo:
    """``X -> scaled_squared_distances(X, Y)`` (bitwise) for a fixed ``Y`` (m, D), with ``Y``'s share done once."""

    def __init__(self, Y: torch.Tensor):
        self.Y = Y
        self._raw = matrix_scale(Y)
        self._c = Y.mean(0, keepdim=True) if Y.shape[0] else Y.new_zeros((1, Y.shape[1]))
        self._Yc = Y - self._c
        self._m = matrix_scale(self._Yc)
        self._yy = (self._Yc * self._Yc).sum(1)

    def __call__(self, X: torch.Tensor) -> tuple[torch.Tensor, float]:
        """``(D / s^2, s)`` (n, m) for rows ``X`` (n, D)."""
        if _overflows_centering(max(matrix_scale(X), self._raw), self.Y):
            return scaled_squared_distances(X, self.Y)
        Xc = X - self._c
        if _needs_scaling(max(matrix_scale(Xc), self._m), X.dtype, X.shape[1], 2):
            return scaled_squared_distances(X, self.Y)
        return _expanded(Xc, self._Yc, X, self.Y, self._yy, False), 1.0


def _overflows_centering(raw: float, Y: torch.Tensor) -> bool:
    """True when data of largest magnitude ``raw`` must be scaled down before centering on the mean of ``Y``."""
    return math.isfinite(raw) and raw > torch.finfo(Y.dtype).max / (4 * max(Y.shape[0], 1))


def _expanded(
    Xc: torch.Tensor, Yc: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, yy: torch.Tensor | None, same: bool
) -> torch.Tensor:
    """``|xc|^2 + |yc|^2 - 2 xc.yc`` (n, m) of the centered rows, cancelled entries recomputed, clipped at 0."""
    xx = (Xc * Xc).sum(1)
    yy = xx if same else yy
    # addmm broadcasts the (n, 1) column, so only the (n, m) result is allocated.
    D = torch.addmm(xx[:, None], Xc, Yc.T, alpha=-2.0).add_(yy[None, :])
    if D.numel():
        _recompute_cancelled(D, X, Y, xx, yy, same)
    return D.clamp_(min=0.0)


def _recompute_cancelled(
    D: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, xx: torch.Tensor, yy: torch.Tensor, same: bool
) -> None:
    """Replace, in place, the entries of ``D`` where the expansion cancelled by direct differences."""
    if same:
        D.diagonal().zero_()
    # Below sqrt(eps) (|x|^2 + max |y|^2) the expansion may have lost half the digits. The row-wise
    # threshold (max over y) is one broadcast comparison; for a self-distance matrix one scalar flags
    # (i, j) and (j, i) together.
    eps = torch.finfo(D.dtype).eps
    if same:
        mask = D < 2.0 * math.sqrt(eps) * xx.max()
        mask.diagonal().fill_(False)
    else:
        mask = D < (xx + yy.max()).mul_(math.sqrt(eps))[:, None]
    idx = mask.nonzero()
    if idx.shape[0] == 0:
        return
    # Bounded memory: chunks of pairs with at most ~2^22 difference entries.
    step = max(1, (1 << 22) // max(X.shape[1], 1))
    for k in range(0, idx.shape[0], step):
        i, j = idx[k : k + step].unbind(1)
        # The rows as given, not centered (whose rounding may be most of a small |x - y|): identical rows give 0.
        diff = X[i] - Y[j]
        D[i, j] = (diff * diff).sum(1)


def squared_distances(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances, shape (n, m), translation invariant to rounding.

    Identical rows give exactly 0, row blocks of ``X`` the same numbers as one call (the module docstring
    says how); distances beyond the dtype's range are ``inf``.

    Parameters
    ----------
    X : Tensor of shape (n, D)
    Y : Tensor of shape (m, D)

    Returns
    -------
    Tensor of shape (n, m)
    """
    D, s = scaled_squared_distances(X, Y)
    return D if s == 1.0 else D.mul_(s).mul_(s)  # s * s may overflow; 0 stays 0


def pairwise_distances(X: torch.Tensor, Y: torch.Tensor, metric: str = "l2") -> tuple[torch.Tensor, float]:
    """Euclidean (``"l2"``) or L1 (``"l1"``, summed directly) distances: ``(d / s, s)``, ``s`` a power of two."""
    if metric == "l2":
        D, s = scaled_squared_distances(X, Y)
        return D.sqrt_(), s
    if metric != "l1":
        raise ValueError(f"metric must be 'l2' or 'l1', got {metric!r}.")
    m = max(matrix_scale(X), matrix_scale(Y))
    s = 1.0
    if _needs_scaling(m, X.dtype, X.shape[1], 1):
        s = power_of_two_scale(m)
        X, Y = X / s, (X / s if Y is X else Y / s)
    return torch.cdist(X, Y, p=1.0), s


def _ldexp(x: float, e: int) -> float:
    """``x * 2^e`` as a float: ``inf`` on overflow (``math.ldexp`` raises), 0 or subnormal on underflow."""
    try:
        return math.ldexp(x, e)
    except OverflowError:
        return math.inf


def exp_neg_scaled(d: torch.Tensor, s: float, bandwidth: float, power: int) -> torch.Tensor:
    """The kernel ``exp(-(dist / bandwidth)^power / power)``, in place when possible, for ``power`` 1 or 2.

    RBF: ``d`` squared distances in units of ``s^2``, ``power = 2``; Laplacian: L1 distances in units of
    ``s``, ``power = 1``. When the factor is not a normal number the argument is formed in float64, one
    factor ``s / bandwidth`` at a time, so extreme widths give the kernel's limits.
    """
    info = torch.finfo(d.dtype)
    m, e = math.frexp(bandwidth)
    k = math.frexp(s)[1] - 1  # s = 2^k
    if power == 2:
        factor = _ldexp(1.0 / (2.0 * m * m), 2 * (k - e))  # 1 / (2 bandwidth^2) * s^2
        if info.tiny <= factor <= info.max:
            return d.mul_(-factor).exp_()
    else:
        divisor = _ldexp(m, e - k)  # bandwidth / s, exactly
        if info.tiny <= divisor <= info.max:
            return d.div_(-divisor).exp_()
    u = _ldexp(1.0 / m, k - e)  # s / bandwidth
    if u == math.inf:  # every positive distance is infinitely many widths away
        return (d == 0).to(d.dtype)
    arg = d.to(torch.float64)
    for _ in range(power):
        arg = arg.mul_(u)
    if power == 2:
        arg = arg.mul_(0.5)
    return arg.neg_().exp_().to(d.dtype)
