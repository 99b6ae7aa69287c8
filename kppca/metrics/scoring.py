"""Held-out criteria that compare models *across* kernels, bandwidths and feature maps (:ref:`comparing-kernels`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._validation import ArrayLike

__all__ = [
    "SCORING_PREIMAGE",
    "ReconstructionScorer",
    "make_reconstruction_scorer",
    "reconstruction_error",
    "reconstruction_samples",
    "reconstruction_scorer",
]

#: Pre-image used by :func:`reconstruction_error` and the scorers unless told otherwise:
#: the kernel smoother on all raw weights (paper eq. 19).
SCORING_PREIMAGE: dict[str, Any] = {"preimage": "smoother", "n_neighbors": None}


def _scoring_preimage(preimage: str | None, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``preimage=None`` means :data:`SCORING_PREIMAGE`, with ``options`` overriding its defaults."""
    if preimage is None:
        defaults = {k: v for k, v in SCORING_PREIMAGE.items() if k != "preimage"}
        return SCORING_PREIMAGE["preimage"], {**defaults, **options}
    return preimage, dict(options)


def reconstruction_samples(
    model: Any, X: ArrayLike, preimage: str | None = None, **preimage_options: Any
) -> np.ndarray | torch.Tensor:
    """Per-point squared input-space error ``|x_j - x_hat_j|^2`` of the MAP reconstruction.

    Parameters
    ----------
    model, X, preimage, **preimage_options
        As in :func:`reconstruction_error`.

    Returns
    -------
    ndarray or Tensor of shape (M,)
        The type of ``X``.
    """
    if not all(hasattr(model, name) for name in ("transform", "inverse_transform", "_validate_new_input")):
        raise TypeError(f"model must be a fitted kppca.PrimalPPCA or kppca.DualPPCA, got {type(model).__name__}.")
    model._check_fitted("reconstruction_error")
    preimage, preimage_options = _scoring_preimage(preimage, preimage_options)
    Xt = model._validate_new_input(X, method="reconstruction_error")  # a validated copy: X is never touched
    X_hat = torch.as_tensor(model.inverse_transform(model.transform(Xt), preimage, **preimage_options))
    return model._to_output(((Xt - X_hat) ** 2).sum(1), X)


def reconstruction_error(model: Any, X: ArrayLike, preimage: str | None = None, **preimage_options: Any) -> float:
    """Mean squared input-space error ``mean_j |x_j - inverse_transform(transform(x_j))|^2``.

    Comparable across kernels, bandwidths and feature maps, on held-out data only (see
    :ref:`comparing-kernels`). Not a criterion for ``q`` (more components reconstruct better): choose ``q``
    with ``score`` or Minka's evidence, then compare kernels at that ``q``.

    Parameters
    ----------
    model : fitted PrimalPPCA or DualPPCA
    X : array-like of shape (M, D)
        Points not used to fit ``model``.
    preimage : str, optional
        Pre-image method (:data:`kppca.models.generation.PREIMAGE_METHODS`); default :data:`SCORING_PREIMAGE`
        (options given with ``preimage=None`` override its defaults). Ignored by the primal model with the identity
        map (then ``x_hat = W h_MAP + m``).
    **preimage_options
        Options of that method (:data:`kppca.models.generation.PREIMAGE_OPTIONS`).

    Returns
    -------
    float
        Non-negative; lower is better.
    """
    return float(torch.as_tensor(reconstruction_samples(model, X, preimage, **preimage_options)).mean())


class ReconstructionScorer:
    """The scorer of :func:`make_reconstruction_scorer`; picklable, so it also works with ``n_jobs > 1``.

    Parameters
    ----------
    preimage : str, optional
    **preimage_options
        As in :func:`reconstruction_error`.
    """

    def __init__(self, preimage: str | None = None, **preimage_options: Any):
        from ..models.generation import resolve_preimage

        method, options = _scoring_preimage(preimage, preimage_options)
        resolve_preimage(method, options)  # fail now on a misspelt method or option, not inside a grid search
        self.preimage = preimage
        self.preimage_options = dict(preimage_options)

    def __call__(self, estimator: Any, X: ArrayLike, y: Any = None) -> float:
        """``-reconstruction_error(estimator, X, ...)``; ``y`` is ignored."""
        return -reconstruction_error(estimator, X, self.preimage, **self.preimage_options)

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.preimage_options.items())
        return f"make_reconstruction_scorer(preimage={self.preimage!r}{opts})"


def make_reconstruction_scorer(preimage: str | None = None, **preimage_options: Any) -> ReconstructionScorer:
    """A scikit-learn scorer: ``-reconstruction_error`` (greater is better).

    Use as ``GridSearchCV(DualPPCA(...), grid, scoring=make_reconstruction_scorer())``
    or ``cross_val_score(model, X, scoring=...)``.

    Parameters
    ----------
    preimage, **preimage_options
        As in :func:`reconstruction_error` (validated now, not at the first call).

    Returns
    -------
    ReconstructionScorer
        Callable ``scorer(estimator, X, y=None) -> float``.
    """
    return ReconstructionScorer(preimage, **preimage_options)


#: ``-reconstruction_error`` with the default pre-image (:data:`SCORING_PREIMAGE`), as a scorer.
reconstruction_scorer = make_reconstruction_scorer()
