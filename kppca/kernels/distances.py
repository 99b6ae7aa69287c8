"""Pairwise distances in a scaled, cancellation-free form, and ``exp(-distance / width)`` without overflow.

Three numerical hazards of the textbook formulas, each handled here once for every
stationary kernel:

* **cancellation**: the expansion ``|x|^2 + |y|^2 - 2 x.y`` of a squared distance
  loses ``~ D eps (|x|^2 + |y|^2)``; the data are centered first (on the mean of
  ``Y``), and the entries where the expansion has cancelled more than half of its
  significant digits (``d < sqrt(eps) (|x|^2 + |y|_max^2)``: near and identical
  rows) are recomputed as ``sum (x - y)^2``, so identical rows have distance
  exactly 0 whether ``Y`` is ``X`` or an equal copy;
* **over/underflow of the data**: when squares of the (centered) data would
  overflow or fall into the subnormal range, the data are divided by a power of
  two ``s`` (exact) and the distances returned in units of ``s``;
* **over/underflow of the width**: ``1 / (2 bandwidth^2)`` is not representable
  for ``bandwidth = 1e-300`` or ``1e300``; the exponent is then formed in float64
  step by step, so the kernel takes its limits (0 off the diagonal, 1 for equal
  points; all ones) instead of dividing by zero.
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
    """The power of two ``s`` with ``m / s`` in ``[0.5, 1)`` (``[1, 2)`` above ``2^1023``); 1.0 for ``m = 0`` or a
    non-finite ``m``."""
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
    """Pairwise squared Euclidean distances in units of a power of two: ``(D / s^2, s)``.

    ``s = 1`` unless the squares of the centered data would over- or underflow the
    dtype, so for ordinary data ``D`` itself comes back (no extra pass).

    Parameters
    ----------
    X : Tensor of shape (n, D)
    Y : Tensor of shape (m, D)
        Pass ``X`` itself for a self-distance matrix (the diagonal is then set to 0 at once).

    Returns
    -------
    D : Tensor of shape (n, m)
        Non-negative; exactly 0 for identical rows.
    s : float
        A power of two; the distances are ``D * s^2``.
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
    """Squared distances from new rows to a fixed ``Y`` (m, D), with ``Y``'s share of the work done once.

    ``self(X)`` returns what ``scaled_squared_distances(X, Y)`` returns, bitwise: the mean ``c`` of
    ``Y``, the centered ``Y - c``, its squared row norms and its largest entries are computed here
    instead of on every call (see :meth:`~kppca.kernels.Kernel.against`). Rows whose scale needs the
    exact power-of-two rescaling go through :func:`scaled_squared_distances`. Holds one centered copy of ``Y``.

    Parameters
    ----------
    Y : Tensor of shape (m, D)
    """

    def __init__(self, Y: torch.Tensor):
        self.Y = Y
        self._raw = matrix_scale(Y)
        self._c = Y.mean(0, keepdim=True) if Y.shape[0] else Y.new_zeros((1, Y.shape[1]))
        self._Yc = Y - self._c
        self._m = matrix_scale(self._Yc)
        self._yy = (self._Yc * self._Yc).sum(1)

    def __call__(self, X: torch.Tensor) -> tuple[torch.Tensor, float]:
        """``(D / s^2, s)`` of shape (n, m) for rows ``X`` (n, D), as :func:`scaled_squared_distances`."""
        if _overflows_centering(max(matrix_scale(X), self._raw), self.Y):
            return scaled_squared_distances(X, self.Y)
        Xc = X - self._c
        if _needs_scaling(max(matrix_scale(Xc), self._m), X.dtype, X.shape[1], 2):
            return scaled_squared_distances(X, self.Y)
        return _expanded(Xc, self._Yc, X, self.Y, self._yy, False), 1.0


def _overflows_centering(raw: float, Y: torch.Tensor) -> bool:
    """True when data of largest magnitude ``raw`` must be scaled down before centering on the mean of ``Y``:
    the mean's sum of ``m`` rows reaches ``m raw`` and a centered value ``2 raw``."""
    return math.isfinite(raw) and raw > torch.finfo(Y.dtype).max / (4 * max(Y.shape[0], 1))


def _expanded(
    Xc: torch.Tensor, Yc: torch.Tensor, X: torch.Tensor, Y: torch.Tensor, yy: torch.Tensor | None, same: bool
) -> torch.Tensor:
    """``|xc|^2 + |yc|^2 - 2 xc.yc`` (n, m) from centered (and scaled) rows, cancelled entries recomputed from
    the rows ``X``, ``Y`` as given, clipped at 0. ``yy``: squared norms of ``Yc`` (None when ``same``)."""
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
    """Replace, in place, the entries of ``D`` where the expansion cancelled by direct differences.

    The differences are taken between the rows as given (not centered: rounding the
    centered rows would cost ``eps |x - c|``, a large part of a small ``|x - y|``), so a
    recomputed entry is accurate to ``(D + 2) eps`` relative and identical rows give 0.
    """
    if same:
        D.diagonal().zero_()
    # The expansion's rounding error is ~ (D + 2) eps (|x|^2 + |y|^2); below sqrt(eps) (|x|^2 + max |y|^2)
    # it may have lost half the digits or more. A row-wise threshold (the max over y) keeps the test one
    # broadcast comparison (no (n, m) temporary of floats); it only flags a few more pairs to recompute.
    # For a self-distance matrix one scalar threshold flags (i, j) and (j, i) together.
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
        diff = X[i] - Y[j]
        D[i, j] = (diff * diff).sum(1)


def squared_distances(X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances, shape (n, m), translation invariant to rounding.

    The expansion ``|x - c|^2 + |y - c|^2 - 2 (x - c).(y - c)`` with ``c`` the mean of
    ``Y`` (one matrix product, the dominant cost); entries where it cancelled are
    recomputed directly, so identical rows give exactly 0 (``k(x, x) = 1`` for the RBF
    kernel at any scale) whether or not ``Y is X``. ``c`` depends on ``Y`` only, so
    row blocks of ``X`` (against the same ``Y``) give the same numbers as one call.
    Distances beyond the dtype's range are ``inf``: use :func:`scaled_squared_distances`
    to keep them finite.

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
    """Euclidean (``"l2"``) or L1 (``"l1"``) distances in units of a power of two: ``(d / s, s)``.

    The L1 distance sums ``|x_i - y_i|`` directly (``torch.cdist(p=1)``): no
    cancellation, identical rows give 0; the data are scaled only when the sum
    would overflow or underflow.
    """
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
    """``exp(-(d s / bandwidth)^power / power)`` elementwise, in place when possible, for ``power`` 1 or 2.

    RBF: ``d`` squared distances in units of ``s^2`` and ``power = 2`` (the argument is
    ``d s^2 / (2 bandwidth^2)``); Laplacian: L1 distances in units of ``s``, ``power = 1``.

    The width is split as ``bandwidth = m 2^e`` (``m`` in ``[0.5, 1)``) so the factor is
    formed without over- or underflow and with the same rounding as the textbook
    ``1 / (2 bandwidth^2)`` (resp. ``/ bandwidth``) up to an exact power of two: scaling
    the data and the width by the same power of two leaves the kernel bitwise unchanged.
    When the factor is a normal number of the dtype this is one multiplication
    (division); otherwise the argument is formed in float64 one factor ``s / bandwidth``
    at a time, so it overflows to ``+inf`` (kernel 0) only where the true value is huge
    and is 0 (kernel 1) for ``d = 0``: the kernel's limits at extreme widths.
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
