"""Non-linear auto-regression with a two-view kernel PCA: recursive forecasting, with no refit per step."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import torch

from .._linalg.threads import compute_section
from .._param_validation import Integral, Interval, Real, check_scalar, fit_context
from .._linalg import rounding_tolerance
from .._resources import check_memory
from .._validation import ArrayLike, as_tensor, is_numpy_like, precision_advice, to_output
from ..base import RUNTIME_CONSTRAINTS, KernelEstimator
from ..features import FeatureMap
from ..io import TensorSpec, TupleOf, register
from ..io.record import EstimatorState, derived, fitted
from .multiview import SOLVER_CONSTRAINTS, MultiViewKPCA

__all__ = ["NARForecaster", "lag_windows", "plot_forecasts", "stable_mean_std"]


def lag_windows(series: ArrayLike, p: int) -> tuple[Any, Any]:
    """Lag windows and next values of a series: inputs ``series[l-p .. l]``, targets ``series[l+1]``.

    Parameters
    ----------
    series : array-like of shape (T,) or (n_series, T)
        One series, or several of the same length (their windows stacked, series by series).
    p : int
        Lag order; each window holds ``p + 1`` values.

    Returns
    -------
    X : ndarray or Tensor of shape (n_series * (T - p - 1), p + 1)
        Windows, oldest value first, for ``l = p .. T-2``.
    y : ndarray or Tensor of shape (n_series * (T - p - 1),)
    """
    p = int(check_scalar(p, "p (the lag order)", [Interval(Integral, 0, None, closed="left")]))
    numpy_out = is_numpy_like(series)
    dtype = series.dtype if isinstance(series, torch.Tensor) and series.is_floating_point() else None
    S = as_tensor(series, "series", ndim=(1, 2), dtype=dtype, device=series.device if isinstance(series, torch.Tensor) else None)
    S = S[None] if S.ndim == 1 else S
    T = S.shape[1]
    if T < p + 2:
        raise ValueError(
            f"series has {T} values ({T} feature(s) per row of a 2-D input); lag order p={p} needs at least "
            f"p + 2 = {p + 2} (one window and its target)."
        )
    windows = S.unfold(1, p + 1, 1)[:, : T - p - 1]  # (n_series, T-p-1, p+1)
    X = windows.reshape(-1, p + 1).clone()
    y = S[:, p + 1 :].reshape(-1).clone()
    return to_output(X, numpy_out), to_output(y, numpy_out)


def stable_mean_std(S: torch.Tensor) -> tuple[float, float]:
    """Mean and standard deviation (ddof 1) of all entries of ``S`` (finite, >= 2 entries), computed on
    ``S / max|S|`` so they neither under- nor overflow; ``std`` is 0.0 for a spread at rounding level."""
    flat = S.reshape(-1)
    m = float(flat.abs().max())
    if m == 0.0:
        return 0.0, 0.0
    Z = flat / m
    mean_z = float(Z.mean())
    std_z = float(Z.std(correction=1))
    if not std_z > rounding_tolerance(S.dtype, 1, 1.0) * max(abs(mean_z), 1.0):
        return mean_z * m, 0.0  # a spread at rounding level: constant in this dtype
    return mean_z * m, std_z * m


@dataclasses.dataclass(frozen=True, kw_only=True)
class NARState(EstimatorState):
    """:class:`NARForecaster`'s record: the two-view model, the standardisation, the end of the training series
    and its range. The lag order and the form follow from the last window and the model."""

    mean_: float = fitted(Interval(Real, None, None))
    scale_: float = fitted(Interval(Real, 0, None, closed="neither"))
    model_: MultiViewKPCA = fitted(MultiViewKPCA)
    last_window_: torch.Tensor = fitted(TensorSpec(ndim=2))
    training_range_: tuple = fitted(TupleOf([Interval(Real, None, None)], [Interval(Real, None, None)]))

    #: Format version 3 stored these; they are derived now.
    derived_in_old_files = ("n_lags_", "form_")

    def check(self) -> str | None:
        """The last window holds the lags the model reads."""
        width, reads = self.last_window_.shape[1], self.model_.view_widths_[0]
        if width != reads or self.last_window_.shape[0] < 1:
            return f"last_window_ has shape {tuple(self.last_window_.shape)} and the model reads windows of {reads}"
        return None

    @derived
    def n_lags_(self) -> int:
        """The lag order ``p``: a window holds ``p + 1`` values."""
        return self.last_window_.shape[1] - 1

    @derived
    def form_(self) -> str:
        """The two-view model's form, ``"primal"`` or ``"dual"``."""
        return self.model_.form_


@register(name="kppca.NARForecaster")
class NARForecaster(KernelEstimator):
    """Recursive multi-step forecasting with a two-view kernel PCA (non-linear auto-regression).

    Parameters
    ----------
    lags : int, default 10
        Lag order ``p``; a window holds ``p + 1`` values.
    n_components : int, default 4
        Hidden features ``s`` of the two-view model.
    kernel_x, kernel_y : Kernel, str, FeatureMap or None, default None (linear)
        Kernels or explicit maps (:class:`~kppca.features.FeatureMap`) of the window and next-value views.
    form, solver, rotate, rescale, stiefel_method, max_iter, tol, progress, random_state, dtype, device
        Passed to :class:`MultiViewKPCA` (``rescale=False`` is the paper's failing ablation).
    standardize : bool, default True
        Fit on ``(series - mean) / std`` (training mean and std, ddof 1); forecasts are on the original scale.

    Attributes
    ----------
    model_ : MultiViewKPCA
        The fitted two-view model (view 0: windows, view 1: next values).
    mean_, scale_ : float
        Standardisation of the training series (0 and 1 when ``standardize=False``).
    n_features_in_ : int
        Length ``T`` of the training series.
    last_window_ : Tensor of shape (n_series, p + 1)
        The end of each training series (the default forecast start), on the original scale.
    training_range_ : tuple of float
        ``(min, max)`` of the training series; :meth:`forecast` warns when a forecast leaves it by more than its width.
    """

    _state_type = NARState

    _parameter_constraints = {
        "lags": [Interval(Integral, 0, None, closed="left")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "kernel_x": [object, None],
        "kernel_y": [object, None],
        **SOLVER_CONSTRAINTS,
        "standardize": ["boolean"],
        **RUNTIME_CONSTRAINTS,
    }
    _fitted_marker = "model_"

    def __init__(
        self,
        lags: int = 10,
        n_components: int = 4,
        *,
        kernel_x: Any = None,
        kernel_y: Any = None,
        form: str = "auto",
        solver: str = "eig",
        rotate: bool = True,
        rescale: bool = True,
        standardize: bool = True,
        stiefel_method: str = "sgd",
        max_iter: int = 5000,
        tol: float = 1e-8,
        progress: bool = False,
        random_state: Any = None,
        dtype: Any = None,
        device: Any = None,
    ):
        self._store_params(locals())

    def _two_view_model(self) -> MultiViewKPCA:
        """The unfitted two-view model (windows, next values) of these parameters."""
        specs = [self.kernel_x, self.kernel_y]
        common = dict(
            form=self.form, solver=self.solver, rotate=self.rotate, rescale=self.rescale, center=True,
            stiefel_method=self.stiefel_method, max_iter=self.max_iter, tol=self.tol, progress=self.progress,
            random_state=self.random_state, dtype=self.dtype, device=self.device,
        )
        if any(isinstance(k, FeatureMap) for k in specs) and all(k is None or isinstance(k, FeatureMap) for k in specs):
            return MultiViewKPCA(self.n_components, feature_maps=specs, **common)
        # Kernels (a FeatureMap among them is fitted on its view by MultiViewKPCA).
        return MultiViewKPCA(self.n_components, kernels=specs, **common)

    @fit_context
    @compute_section
    def fit(self, series: ArrayLike, y: Any = None) -> NARForecaster:
        """Fit on a series (T,) or several series (n_series, T) of the same length. Returns ``self``."""
        self._begin_fit(series)
        S = as_tensor(series, "series", ndim=(1, 2), dtype=self._dtype, device=self._device)
        S = S[None] if S.ndim == 1 else S
        p = int(self.lags)
        n_windows = S.shape[0] * (S.shape[1] - p - 1)
        if n_windows < 2:
            raise ValueError(
                f"series has {S.shape[1]} values per series (n_features = {S.shape[1]}, {S.shape[0]} series): "
                f"lag order lags={p} makes "
                f"{max(n_windows, 0)} window(s) of p + 1 = {p + 1} values with their next value, and the model "
                f"needs at least 2; pass at least lags + 3 = {p + 3} values, or lower lags."
            )
        if self.standardize:
            self.mean_, self.scale_ = stable_mean_std(S)
            if not self.scale_ > 0:
                raise ValueError("series is constant: it cannot be standardized; pass standardize=False or a varying "
                                 "series." + precision_advice(S.dtype))
        else:
            self.mean_, self.scale_ = 0.0, 1.0
        Z = (S - self.mean_) / self.scale_
        X, target = lag_windows(Z, p)
        self.model_ = self._two_view_model().fit([X, target[:, None]])
        self.last_window_ = S[:, S.shape[1] - p - 1 :].clone()
        self.n_features_in_ = S.shape[1]  # series length: the columns of a 2-D (n_series, T) input
        self.training_range_ = (float(S.min()), float(S.max()))
        return self

    def forecast(self, n_steps: int, history: ArrayLike | None = None, *, standardized: bool = False) -> Any:
        """Recursive forecast of the next ``n_steps`` values.

        Parameters
        ----------
        n_steps : int
        history : array-like of shape (L,) or (m, L), ``L >= p + 1``, optional
            Past values (original scale) whose last ``p + 1`` start the recursion; default: the training series.
        standardized : bool, default False
            Return the forecast on the standardized scale instead of the original one.

        Returns
        -------
        ndarray or Tensor of shape (n_steps,) for one series, (m, n_steps) for several

        Raises
        ------
        kppca._resources.InsufficientMemoryError
            A ``ValueError`` (and ``MemoryError``): the forecast would need more memory than is available.
        """
        self._check_fitted("forecast")
        n_steps = int(check_scalar(n_steps, "n_steps", [Interval(Integral, 1, None, closed="left")]))
        check_scalar(standardized, "standardized", ["boolean"])
        p = self.n_lags_
        H = self.model_.hidden_features_
        if history is None:
            W, single, numpy_out = self.last_window_, self.last_window_.shape[0] == 1, self._numpy_fit_
        else:
            numpy_out = is_numpy_like(history)
            W = as_tensor(history, "history", ndim=(1, 2), dtype=H.dtype, device=H.device)
            single = W.ndim == 1
            W = W[None] if single else W
            if W.shape[1] < p + 1:
                raise ValueError(f"history has {W.shape[1]} values per series; the model needs the last p + 1 = {p + 1}.")
            W = W[:, W.shape[1] - p - 1 :]
        window = (W - self.mean_) / self.scale_
        # The forecast, its original-scale copy and the range test's temporaries, before the first step.
        check_memory(3 * W.shape[0] * n_steps * W.element_size(), f"forecast(n_steps={n_steps})",
                     "forecast fewer steps per call and continue from them (history=the values so far)", W.device)
        out = torch.empty(window.shape[0], n_steps, dtype=H.dtype, device=H.device)
        for step in range(n_steps):  # recursion over time: each step needs the previous one
            nxt = self.model_.predict_view([window, None], 1)[:, 0]
            out[:, step] = nxt
            window = torch.cat([window[:, 1:], nxt[:, None]], dim=1)
        original = out * self.scale_ + self.mean_
        # A forecast leaving the training range by more than its width: the recursion runs away.
        lo, hi = self.training_range_
        width = hi - lo
        below, above = float(original.min()), float(original.max())
        if below < lo - width or above > hi + width:
            far = below if lo - below > above - hi else above
            steps = ((original < lo - width) | (original > hi + width)).any(0).nonzero()
            first = int(steps[0]) + 1 if steps.numel() else 1
            warnings.warn(
                f"the forecast leaves the training range [{lo:.3g}, {hi:.3g}] by more than its width "
                f"(from step {first}; it reaches {far:.3g}): the recursion is running away from the data. "
                "Use a kernel whose scale matches the standardized windows (e.g. an RBF bandwidth near 1-10), "
                "more training data or lags, fewer components, or fewer steps.",
                UserWarning,
                stacklevel=2,
            )
        out = out if standardized else original
        out = out[0] if single else out
        return to_output(out, numpy_out)


def plot_forecasts(
    train: ArrayLike, test: ArrayLike, forecasts: dict[str, ArrayLike], *, n_context: int = 200, ax: Any = None,
    title: str | None = None,
) -> Any:
    """Plot the end of a training series, the test continuation and forecasts (MSE against ``test`` in the legend).

    Parameters
    ----------
    train : array-like of shape (T,)
    test : array-like of shape (n_steps,)
    forecasts : dict label -> array-like of shape (n_steps,)
    n_context : int, default 200
        Training values shown before the forecast origin.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    train = np.asarray(train, dtype=float).ravel()
    test = np.asarray(test, dtype=float).ravel()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    T = train.size
    start = max(0, T - int(n_context))
    ax.plot(np.arange(start, T), train[start:], color="0.6", lw=1, label="train")
    ax.plot(np.arange(T, T + test.size), test, color="k", lw=1.5, label="test")
    for label, f in forecasts.items():
        f = np.asarray(f, dtype=float).ravel()
        mse = float(np.mean((f[: test.size] - test[: f.size]) ** 2))
        ax.plot(np.arange(T, T + f.size), f, lw=1.2, ls="--", label=f"{label} (MSE {mse:.3g})")
    ax.axvline(T - 0.5, color="0.8", lw=0.8)
    ax.set_xlabel("time step")
    ax.legend(fontsize=7, loc="upper left")
    if title:
        ax.set_title(title)
    return ax
