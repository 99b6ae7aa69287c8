"""Assertions with entrywise tolerances derived from the conditioning of each entry."""

from __future__ import annotations

import numpy as np
import torch


def assert_within(actual, expected, bound, what: str = "") -> None:
    """Assert ``|actual - expected| <= bound`` entrywise (``bound`` broadcasts: scalar or array).

    ``np.testing.assert_allclose`` takes only a scalar ``atol``; rounding bounds are often
    per entry (e.g. ``D eps |x||y|`` for a dot product), so this reports the worst ratio.
    """
    a = actual.detach().cpu().numpy() if isinstance(actual, torch.Tensor) else np.asarray(actual)
    e = expected.detach().cpu().numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), np.broadcast_shapes(a.shape, e.shape))
    gap = np.abs(a.astype(np.float64) - e.astype(np.float64))
    ratio = gap / np.where(b > 0, b, np.finfo(np.float64).tiny)
    assert a.shape == e.shape, f"{what} shapes differ: {a.shape} vs {e.shape}"
    assert np.all(gap <= b), f"{what} worst |difference| / bound = {ratio.max():.3g} (> 1)"


def central_differences(fun, arrays: list[np.ndarray], h: float = 1e-5) -> list[np.ndarray]:
    """Central-difference gradient of the scalar ``fun(arrays)`` with respect to every entry of every array.

    Returns one flat array per input array; ``arrays`` is left unchanged. The error is the
    truncation ``h^2 |f'''| / 6`` plus the rounding ``eps |f| / h`` of each entry.
    """
    grads = []
    for k, t in enumerate(arrays):
        fd = np.zeros(t.size)
        for i in range(t.size):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[k].flat[i] += h
            minus[k].flat[i] -= h
            fd[i] = (fun(plus) - fun(minus)) / (2 * h)
        grads.append(fd)
    return grads
