"""The generation methods shared by the primal and dual models, implemented once.

Every method is one pipeline, latent codes -> feature-space points -> pre-image; a model provides the
hooks that make the points in its own representation (``_latent_points``, ``_points_to_inputs``, ...);
docs/architecture.md draws the whole path of ``sample``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np
import torch
from sklearn.utils.multiclass import type_of_target

from ..._cache import LazyCache
from ..._param_validation import Integral, Interval, Real, StrOptions, check_scalar, check_sequence
from ..._validation import ArrayLike, check_sample_memory, torch_generator
from ...preimage import TrainingContext
from ...preimage.strategies import Preimage, make_preimage
from .latent import (
    CLASS_MIXTURE_COMPONENTS, LATENTS, MIXTURE_COMPONENTS, LatentMixture, fit_latent_mixture, standard_normal_codes,
)

__all__ = ["GenerationMixin"]

#: How a model represents feature-space points: feature vectors (primal) or :class:`FeaturePoints` (dual).
Points = TypeVar("Points")


class GenerationMixin(ABC, Generic[Points]):
    """``sample``, ``inverse_transform``, ``reconstruct`` and ``latent_traversal`` (see the module docstring).

    A model declares the hooks below, each with one return type: ``Points`` is ``torch.Tensor`` for the
    primal model (feature vectors) and :class:`~kppca.preimage.FeaturePoints` for the dual one.
    """

    @abstractmethod
    def _training_context(self) -> TrainingContext:
        """The training set (or landmarks) that pre-images are built from."""

    @abstractmethod
    def _training_coordinates(self) -> torch.Tensor:
        """Principal coordinates of the training points, (N, q)."""

    @abstractmethod
    def _latent_points(self, h: torch.Tensor) -> Points:
        """The conditional means ``W h + m`` for codes ``h`` (M, q)."""

    @abstractmethod
    def _marginal_points(self, n: int, generator: torch.Generator, factor: str) -> Points:
        """``n`` draws of the model's marginal (the exact sample, noise included)."""

    @abstractmethod
    def _add_noise(self, points: Points, generator: torch.Generator) -> Points:
        """``points`` plus the model noise ``N(0, sigma2 I)`` on the feature subspace."""

    @abstractmethod
    def _reconstruction_points(self, X: torch.Tensor) -> Points:
        """The MAP reconstructions of validated inputs ``X`` (M, D)."""

    @abstractmethod
    def _points_to_inputs(
        self, points: Points, strategy: Preimage, candidates: torch.Tensor | None = None, sampled: bool = False
    ) -> torch.Tensor:
        """Inputs (M, D) for ``points`` by ``strategy``; ``candidates`` (M, N) restricts the training points."""

    def _gen_cache(self) -> LazyCache:
        """The model's cache, which also keeps what generation derives from the fit (context, mixtures, maps)."""
        return self._cache

    def _cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()``, kept under ``key`` in :meth:`_gen_cache` (computed once per fit, thread-safe)."""
        return self._gen_cache().get(key, compute)

    def preimage_context(self) -> TrainingContext:
        """The :class:`~kppca.preimage.TrainingContext` of this model (cached), for pre-image strategies."""
        self._check_fitted("preimage_context")
        return self._cached("context", self._training_context)

    def _remember_labels(self, y: Any, n_samples: int) -> None:
        """Keep class labels ``y`` for ``sample(n, y=...)``, forgetting old ones; other targets are ignored."""
        self._forget_state("sample_classes_", "_label_index", "_unkept_labels")
        if y is None:
            return
        labels = np.asarray(y)
        if labels.ndim != 1 or type_of_target(labels, input_name="y") not in ("binary", "multiclass"):
            self._unkept_labels = f"a {labels.ndim}-D y" if labels.ndim != 1 else "a y that is not class labels"
            return
        if labels.shape[0] != n_samples:
            raise ValueError(
                f"y must be one label per training point, shape ({n_samples},), got shape {labels.shape}; "
                "it is used only for class-conditional sampling (sample(n, y=...)). Pass y=None to ignore it."
            )
        classes, index = np.unique(labels, return_inverse=True)
        self.sample_classes_ = classes
        self._label_index = torch.as_tensor(index.astype(np.int64), device=self._device)

    def _has_training_codes(self) -> bool:
        """Whether the model keeps points for latent mixtures and pre-images (the primal model adds landmarks)."""
        return self._has_state("X_fit_")

    def sample(
        self,
        n: int,
        random_state: Any = None,
        preimage: str | Preimage | None = None,
        *,
        latent: str = "auto",
        y: Any = None,
        noise: bool | None = None,
        factor: str = "fast",
        qmc: bool = False,
        **preimage_options: Any,
    ) -> Any:
        """Draw ``n`` new inputs: feature-space points from a latent distribution, then a pre-image.

        Parameters
        ----------
        n : int
        random_state : int, Generator or None
        preimage : str or Preimage, optional
            A method of :data:`~kppca.preimage.PREIMAGE_METHODS` (default
            :data:`~kppca.preimage.DEFAULT_PREIMAGE`) or a strategy object.
        latent : {"auto", "prior", "mixture"}, default "auto"
            ``"prior"``: the model itself, ``h ~ N(0, I_q)`` (with ``noise``, the points of
            ``sample_kernel``/``sample_features`` for the same ``random_state``). ``"mixture"``: a
            Gaussian mixture fitted on the training codes, whose samples are closer to real data and
            spread more evenly over the classes. ``"auto"``: ``"mixture"`` when the model has training
            codes (not after ``partial_fit`` or a Dask fit without landmarks), else ``"prior"``.
        y : label or array-like of n labels, optional
            Class-conditional sampling (needs ``fit(X, y)``): codes and pre-images from that class's
            training points only. Implies ``latent="mixture"``.
        noise : bool, optional
            Add the model noise (``sigma2``) to the points. Default: True for ``latent="prior"``.
        factor : {"fast", "symmetric"}, default "fast"
            The dual exact sample's ``sampling_factor`` (same distribution); the primal model has one.
        qmc : bool, default False
            Draw the latent codes (not the noise, nor the exact sample of ``latent="prior"`` with ``noise``)
            from a scrambled Sobol sequence (quasi-Monte Carlo) instead of independently. Each code is still a
            draw from the latent distribution; together they cover it more evenly: the mixture's components
            (the classes) appear in proportion to their weights up to a draw or two, and statistics of the
            samples vary less between seeds (the Fréchet distance of 2,000 digits about 2.5x less, as
            ``kppca sample`` draws them). False: independent draws, as every ``sample`` in Pyro and PyTorch.
        **preimage_options
            Options of the pre-image method (:data:`~kppca.preimage.PREIMAGE_OPTIONS`).

        Returns
        -------
        ndarray or Tensor of shape (n, D)
            numpy when the model was fitted on numpy data.
        """
        self._check_fitted("sample")
        strategy = make_preimage(preimage, **preimage_options)
        latent = check_scalar(latent, "latent", [StrOptions(LATENTS)])
        if latent == "auto":
            latent = "mixture" if self._has_training_codes() else "prior"
        if y is not None and latent == "prior":
            latent = "mixture"
        if noise is None:
            noise = latent == "prior" and y is None
        noise = bool(check_scalar(noise, "noise", ["boolean"]))
        qmc = bool(check_scalar(qmc, "qmc", ["boolean"]))
        n = int(check_scalar(n, "n", [Interval(Integral, 1, None, closed="left")]))
        check_sample_memory(self, n, f"sample(n={n})")
        gen = torch_generator(random_state, self._device)
        candidates = None
        if latent == "prior" and noise:
            points = self._marginal_points(n, gen, factor)  # the exact model sample
        else:
            if latent == "prior":
                h = standard_normal_codes(n, self.n_components_, gen, qmc, self._dtype, self._device)
            elif y is None:
                h = self._latent_mixture(None).sample(n, gen, qmc)
            else:
                h, wanted = self._class_codes(y, n, gen, qmc)
                candidates = self._label_index[None, :] == wanted[:, None]
            points = self._latent_points(h)
            if noise:
                points = self._add_noise(points, gen)
        return self._to_output(self._points_to_inputs(points, strategy, candidates, sampled=True))

    def inverse_transform(self, h: ArrayLike, preimage: str | Preimage | None = None, **preimage_options: Any) -> Any:
        """Inputs generated by latent codes: the pre-image of the conditional mean.

        Dual: ``k_c = K_c A h`` (the mean of ``k_c | h``); primal: ``W h + m``.

        Parameters
        ----------
        h : array-like of shape (M, q) or (q,)
            Latent codes, e.g. from :meth:`transform`.
        preimage, **preimage_options
            As in :meth:`sample`.

        Returns
        -------
        ndarray or Tensor of shape (M, D)
            numpy unless ``h`` is a tensor.
        """
        self._check_fitted("inverse_transform")
        strategy = make_preimage(preimage, **preimage_options)
        return self._to_output(self._points_to_inputs(self._latent_points(self._latent(h)), strategy), h)

    def reconstruct(self, X: ArrayLike, preimage: str | Preimage | None = None, **preimage_options: Any) -> Any:
        """Denoised inputs: the pre-image of the MAP reconstruction, ``inverse_transform(transform(X))``.

        In feature space ``W h_MAP + m``; with ``sigma2 -> 0`` the kernel PCA projection.

        Parameters
        ----------
        X : array-like of shape (M, D)
        preimage, **preimage_options
            As in :meth:`sample`.

        Returns
        -------
        ndarray or Tensor of shape (M, D), the type of ``X``.
        """
        Xt = self._validate_new_input(X, method="reconstruct")
        strategy = make_preimage(preimage, **preimage_options)
        return self._to_output(self._points_to_inputs(self._reconstruction_points(Xt), strategy), X)

    def latent_traversal(
        self,
        components: tuple[int, ...] = (0, 1),
        n_steps: int = 8,
        extent: float | tuple[float, float] = 2.0,
        preimage: str | Preimage | None = None,
        *,
        return_codes: bool = False,
        **preimage_options: Any,
    ) -> Any:
        """Inputs over a regular grid of latent codes (paper, Fig. 4c).

        The chosen components run over ``n_steps`` values in ``[-extent, extent]`` (or ``[lo, hi]``),
        the others are 0; codes are mapped like :meth:`inverse_transform`.

        Parameters
        ----------
        components : tuple of one or two int, default (0, 1)
            Latent components (0-based, ``< q``). The first increases along the columns, the second
            decreases along the rows (as on a plot's vertical axis).
        n_steps : int, default 8
            Values per component (>= 2).
        extent : float or (float, float), default 2.0
            Range of each varied component, in prior standard deviations; the paper uses 1.
        preimage, **preimage_options
            As in :meth:`inverse_transform`; the default clips to the range of the training inputs.
        return_codes : bool, default False
            Also return the codes, shape (rows, n_steps, q).

        Returns
        -------
        grid : ndarray or Tensor of shape (rows, n_steps, D)
            ``rows = n_steps`` for two components, 1 for one; numpy when fitted on numpy data.
        codes : same type, shape (rows, n_steps, q), only if ``return_codes``
        """
        self._check_fitted("latent_traversal")
        strategy = make_preimage(preimage, **preimage_options)
        codes = self._traversal_codes(components, n_steps, extent)
        rows, cols, q = codes.shape
        X = self._points_to_inputs(self._latent_points(codes.reshape(-1, q)), strategy).reshape(rows, cols, -1)
        if preimage in (None, "auto") and self._has_state("X_fit_"):  # the default stays in the data's range
            X = X.clamp(float(self.X_fit_.min()), float(self.X_fit_.max()))
        if return_codes:
            return self._to_output(X), self._to_output(codes)
        return self._to_output(X)

    def _latent_mixture(self, label_index: int | None) -> LatentMixture:
        """The mixture on all training codes (None) or on those of one class (cached)."""
        if not self._has_training_codes():
            raise ValueError(
                f"latent='mixture' and y=... fit a mixture on the codes of the training inputs, which this "
                f"{type(self).__name__} does not keep (fitted with partial_fit or from a Dask array); use "
                "latent='prior', or refit with fit(X) on in-memory data."
            )

        def fit() -> LatentMixture:
            # transform(X_train), computed once for all the mixtures
            codes = self._cached("training-codes", lambda: self._training_coordinates() * self._gain)
            if label_index is None:
                return fit_latent_mixture(codes, MIXTURE_COMPONENTS)
            return fit_latent_mixture(codes[self._label_index == label_index], CLASS_MIXTURE_COMPONENTS)

        return self._cached(("latent-mixture", label_index), fit)

    def _class_codes(self, y: Any, n: int, gen: torch.Generator, qmc: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """Codes for the requested classes and their class indices, both (n, ...)."""
        if not self._has_state("sample_classes_"):
            unkept = getattr(self, "_unkept_labels", None)  # fit(X, y) with a y that is not 1-D class labels
            fix = f"fit was given {unkept}, and only 1-D class labels are kept" if unkept else "fit it with fit(X, y)"
            raise ValueError(f"class-conditional sampling (y=...) needs the model's training labels: {fix}.")
        classes = self.sample_classes_
        wanted_labels = np.asarray(y)
        if wanted_labels.ndim == 0:
            wanted_labels = np.full(n, wanted_labels[()])
        if wanted_labels.ndim != 1 or wanted_labels.shape[0] != n:
            raise ValueError(f"y must be one label or {n} labels (one per sample), got shape {wanted_labels.shape}.")
        pos = np.searchsorted(classes, wanted_labels)
        known = (pos < len(classes)) & (classes[np.minimum(pos, len(classes) - 1)] == wanted_labels)
        if not known.all():
            bad = sorted({repr(v.item() if isinstance(v, np.generic) else v) for v in wanted_labels[~known]})
            is_text = [np.asarray(a).dtype.kind in "USO" for a in (wanted_labels, classes)]  # '7' vs 7
            types = ("" if is_text[0] == is_text[1] else f" y holds {('numbers', 'strings')[is_text[0]]} but the "
                     f"labels seen in fit are {('numbers', 'strings')[is_text[1]]}: pass y of the same type.")
            raise ValueError(
                f"y asks for label(s) {', '.join(bad)} not seen in fit; the model knows: "
                f"{', '.join(str(c) for c in classes)}.{types}"
            )
        wanted = torch.as_tensor(pos.astype(np.int64), device=self._device)
        h = torch.empty((n, self.n_components_), dtype=self._dtype, device=self._device)
        for c in torch.unique(wanted).tolist():  # a loop over classes (<= number of labels), not samples
            rows = wanted == c
            h[rows] = self._latent_mixture(int(c)).sample(int(rows.sum()), gen, qmc)
        return h, wanted

    def _traversal_codes(self, components: Any, n_steps: Any, extent: Any) -> torch.Tensor:
        q = self.n_components_
        comps = [int(c) for c in check_sequence(components, "components", [Interval(Integral, 0, None, closed="left")],
                                                repeat=1, what="(component indices)")]
        if len(comps) > 2:
            raise ValueError(f"components must be one or two component indices, got {components!r}.")
        if any(c >= q for c in comps):
            raise ValueError(f"components {tuple(comps)} out of range: the model has q = {q} components (indices "
                             f"0..{q - 1}).")
        if len(comps) == 2 and comps[0] == comps[1]:
            raise ValueError(f"components must be two different indices, got {tuple(comps)}.")
        n_steps = int(check_scalar(n_steps, "n_steps", [Interval(Integral, 2, None, closed="left")]))
        if Interval(Real, 0, None, closed="neither").is_satisfied_by(extent):
            extent = (-extent, extent)
        lo, hi = (float(v) for v in check_sequence(extent, "extent", [Interval(Real, None, None)], length=2,
                                                   what="(lo, hi), or a positive number e for (-e, e)"))
        if not lo < hi:
            raise ValueError(f"extent must give a range lo < hi, got {extent!r}.")
        t = torch.linspace(lo, hi, int(n_steps), dtype=self._dtype, device=self._device)
        rows = len(t) if len(comps) == 2 else 1
        codes = torch.zeros((rows, len(t), q), dtype=self._dtype, device=self._device)
        codes[:, :, comps[0]] = t[None, :]
        if len(comps) == 2:
            codes[:, :, comps[1]] = t.flip(0)[:, None]
        return codes

    def _learned_dimension(self, n_coordinates: Any) -> tuple[int, str]:
        """Number of principal coordinates of the learned map and the basis that provides them."""
        q, r = self.n_components_, self.rank_
        if n_coordinates is None:
            return q, "top"
        p = int(check_scalar(n_coordinates, "n_coordinates (at most the rank r, or None for q)",
                             [Interval(Integral, 1, r, closed="both")]))
        return p, ("top" if p <= q else "full")
