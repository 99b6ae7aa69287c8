"""Classifiers on small disjoint subsets, combined by ridge regression (deep-RKM paper §6.2.3)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import numpy as np
import torch
from joblib import Parallel, delayed, parallel_config
from sklearn.base import ClassifierMixin, clone

from .._dask import dask_client
from .._linalg.threads import compute_section
from .._param_validation import Integral, Interval, Real, StrOptions, check_sequence, fit_context
from .._progress import tqdm
from .._validation import ArrayLike, numpy_rng
from ..base import RUNTIME_CONSTRAINTS, KernelEstimator
from ..io import ArraySpec, ListOf, TensorSpec, register
from ..io.record import EstimatorState, fitted
from .deep import DeepLSSVMClassifier
from .ridge_combiner import NORMAL_RIDGE_GRID, Moments, errors, loo_ridge, solved, targets

__all__ = ["SubsetEnsembleClassifier", "stratified_subsets"]


def stratified_subsets(codes: np.ndarray, subset_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Partition ``0..N-1`` into ``max(1, N // subset_size)`` disjoint, class-stratified subsets.

    Each holds ``subset_size`` to ``2 subset_size - 1`` points, nearly the same number of every class.
    """
    per_class = [rng.permutation(np.flatnonzero(codes == c)) for c in np.unique(codes)]
    n = max(len(p) for p in per_class)
    # position of the k-th point of a class in the interleaving: k / n_c, so classes stay proportional
    keys = np.concatenate([(np.arange(len(p)) + rng.uniform(0, 1)) / len(p) * n for p in per_class])
    order = np.concatenate(per_class)[np.argsort(keys, kind="stable")]
    n_subsets = max(1, len(codes) // int(subset_size))
    return np.array_split(order, n_subsets)


def _fit_one(template: Any, seed: int, X: np.ndarray, y: np.ndarray, k: int) -> Any:
    """A clone of ``template`` with its own seed (as scikit-learn's ensembles), fitted on subset ``k``."""
    est = clone(template)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=int(seed))
    if len(np.unique(y)) < 2:
        raise ValueError(f"subset {k} holds a single class; increase subset_size (or pass more data per class).")
    return est.fit(X, y)


def _features(estimators: list, classes: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``tanh`` of the submodels' outputs on ``X`` (m, D): (m, n_est) binary, else (m, n_est * n_classes); a
    submodel that saw only some classes scores the missing ones ``-1``."""
    C, blocks = len(classes), []
    # one conversion for all the package's submodels (they take tensors as they are); a worker's memory-mapped
    # X is read-only, which torch refuses to share
    Xt = torch.as_tensor(X if X.flags.writeable else X.copy())
    for est in estimators:
        d = est.decision_function(Xt if isinstance(est, KernelEstimator) else X)
        d = np.asarray(d.detach().cpu() if isinstance(d, torch.Tensor) else d, dtype=np.float64)
        if C == 2:
            blocks.append(np.tanh(d.reshape(len(X), -1)[:, :1]))
            continue
        cols = np.full((len(X), C), -1.0)
        cols[:, np.searchsorted(classes, est.classes_)] = np.tanh(d if d.ndim == 2 else np.column_stack([-d, d]))
        blocks.append(cols)
    return np.concatenate(blocks, axis=1)


def _chunk_outputs(estimators: list, classes: np.ndarray, X: np.ndarray, coef: np.ndarray | None,
                   batch_size: int) -> np.ndarray:
    """One worker's share: the features of its submodels on ``X`` (coef None), else their part of the
    combined outputs ``features @ coef`` (m, n_outputs), ``batch_size`` rows at a time."""
    parts = []
    for a in range(0, len(X), batch_size):
        Z = _features(estimators, classes, X[a:a + batch_size])
        parts.append(Z if coef is None else Z @ coef)
    return np.concatenate(parts)


def _backend(n_jobs: int | None) -> contextlib.AbstractContextManager:
    """joblib's dask backend when a Client exists (its workers, scattered data), else loky processes."""
    if dask_client() is not None:
        return parallel_config(backend="dask")
    return parallel_config(backend="loky", n_jobs=n_jobs)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SubsetEnsembleState(EstimatorState):
    """:class:`SubsetEnsembleClassifier`'s record: the fitted submodels (nested estimators) and the combiner."""

    classes_: np.ndarray = fitted(ArraySpec(shape=("n_classes",)))
    estimators_: list = fitted(ListOf([KernelEstimator], length="n_submodels"))
    subsets_: list = fitted(ListOf([ArraySpec("iu", ndim=1)], length="n_submodels"))
    holdout_indices_: np.ndarray = fitted(ArraySpec("iu", ndim=1))
    coef_: torch.Tensor = fitted(TensorSpec(shape=(None, "n_outputs")))
    intercept_: torch.Tensor = fitted(TensorSpec(shape=("n_outputs",)))
    ridge_: float | None = fitted(Interval(Real, 0, None, closed="neither"), None)

    def check(self) -> str | None:
        """What the fields' constraints cannot say: the combiner's sizes and the submodels' classes."""
        C, M = len(self.classes_), len(self.estimators_)
        rows, outputs = (M, 1) if C == 2 else (M * C, C)
        if tuple(self.coef_.shape) != (rows, outputs):
            return f"coef_ has shape {tuple(self.coef_.shape)}, expected ({rows}, {outputs}) for {M} submodels"
        for k, est in enumerate(self.estimators_):
            if getattr(est, "n_features_in_", None) != self.n_features_in_:
                return f"estimators_[{k}] reads {getattr(est, 'n_features_in_', None)} features, not n_features_in_"
            if not np.isin(est.classes_, self.classes_).all():
                return f"estimators_[{k}] has classes {est.classes_!r} outside classes_"
        return None


@register(name="kppca.SubsetEnsembleClassifier")
class SubsetEnsembleClassifier(ClassifierMixin, KernelEstimator):
    """Classifiers fitted on disjoint class-stratified subsets, tanh outputs combined by ridge regression.

    Parameters
    ----------
    estimator : classifier or None, default None
        Template of the submodels, with ``decision_function`` (None: :class:`~kppca.rkm.DeepLSSVMClassifier`).
    subset_size : int >= 2, default 50
        Points per subset (the paper: 50, five per class).
    validation_fraction : float in (0, 1) or None, default 0.2
        Class-stratified fraction of the training data held out from the submodels to fit the combiner.
        None: the combiner is fitted on all training rows (noisy copies excepted), the submodels' own, as
        the paper's "overdetermined linear system": each row is in one subset, so one submodel in
        ``n_submodels`` has seen it. Its normal equations are accumulated over row blocks (memory
        ``n_features^2``, not rows x features), which pays when the rows outnumber the features.
    ridge : float > 0 or "loo", default "loo"
        Ridge of the combiner. ``"loo"``: the one of a log grid with the fewest errors, or the members'
        mean output (a soft vote) when it errs no more often; errors are exact leave-one-out errors on the
        held-out part, or with ``validation_fraction=None`` errors on the clean rows of a tenth of the
        submodels, left out of the combiner with those submodels while it chooses (rows none of its
        submodels trained on; it is then refitted on all rows and submodels).
    noise : float > 0 or None, default None
        Standard deviation of noisy copies appended to the submodels' training part (the paper: 0.5).
    clip : (float, float) or None, default (0.0, 1.0)
        Range the noisy copies are clipped to.
    n_jobs : int or None, default None
        joblib worker processes fitting the submodels (None: one, -1: all cores). When a
        ``dask.distributed`` Client exists, the submodels are fitted on its workers (joblib's dask
        backend) instead. The results do not depend on the workers: each submodel's seed is drawn first.
    batch_size : int >= 1, default 2048
        Rows evaluated at once in :meth:`decision_function` and for the combiner: memory holds
        ``batch_size x n_submodels x n_classes`` features, not one row per input.
    progress : bool, default False
        Show tqdm progress bars over the submodels (fit) and row batches (evaluation).
    random_state : int, Generator or None
        Seeds the hold-out split, the subsets, the noise and each submodel's ``random_state``.

    Attributes
    ----------
    estimators_ : list of fitted classifiers
    subsets_ : list of ndarray of int
        Each submodel's training rows in the training part, noisy copies appended (from ``N_train`` on).
    holdout_indices_ : ndarray of int
        Rows of ``X`` used to fit the combiner (all rows with ``validation_fraction=None``).
    coef_ : Tensor of shape (n_submodel_features, n_outputs)
        Combiner weights; ``n_outputs`` is 1 (binary) or ``n_classes``.
    intercept_ : Tensor of shape (n_outputs,)
    ridge_ : float or None
        The combiner's ridge; None when the combiner is the members' mean output.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    """

    _state_type = SubsetEnsembleState

    _parameter_constraints = {
        "subset_size": [Interval(Integral, 2, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "ridge": [Interval(Real, 0, None, closed="neither"), StrOptions({"loo"})],
        "noise": [Interval(Real, 0, None, closed="neither"), None],
        "clip": [tuple, list, None],
        "n_jobs": [int, None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        **RUNTIME_CONSTRAINTS,
    }
    _fitted_marker = "intercept_"

    def __init__(self, estimator: Any = None, *, subset_size: int = 50, validation_fraction: float = 0.2,
                 ridge: float | str = "loo", noise: float | None = None, clip: tuple[float, float] | None = (0.0, 1.0),
                 n_jobs: int | None = None, batch_size: int = 2048, progress: bool = False, random_state: Any = None,
                 dtype: Any = None, device: Any = None):
        self._store_params(locals())

    def _holdout(self, codes: np.ndarray, rng: np.random.Generator,
                 fraction: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Stratified split: per class ``max(1, round(f n_c))`` held out when ``n_c >= 2``, none otherwise
        (``f``: ``fraction``, else ``validation_fraction``)."""
        fraction = float(self.validation_fraction if fraction is None else fraction)
        hold, train = [], []
        for c in np.unique(codes):
            idx = rng.permutation(np.flatnonzero(codes == c))
            m = 0 if len(idx) < 2 else max(1, int(round(fraction * len(idx))))
            hold.append(idx[:m])
            train.append(idx[m:])
        return np.sort(np.concatenate(hold)), np.sort(np.concatenate(train))

    def _evaluate(self, X: np.ndarray, coef: np.ndarray | None, desc: str) -> np.ndarray:
        """The submodel features (coef None; (m, q)) or the combined outputs without intercept ((m, o)) on ``X``,
        by chunks of submodels on the joblib backend (each chunk shipped once, ``X`` memory-mapped by loky)."""
        M, C = len(self.estimators_), len(self.classes_)
        width = 1 if C == 2 else C
        n_chunks = min(M, 1 if self.n_jobs in (None, 1) else 8 * max(1, abs(int(self.n_jobs))))
        bounds = np.linspace(0, M, n_chunks + 1).astype(int)
        jobs = (delayed(_chunk_outputs)(self.estimators_[a:b], self.classes_, X,
                                        None if coef is None else coef[a * width:b * width], int(self.batch_size))
                for a, b in zip(bounds[:-1], bounds[1:]))
        with _backend(self.n_jobs):
            parts = tqdm(Parallel(return_as="generator")(jobs), total=n_chunks, desc=desc, leave=False,
                         disable=not self.progress)
            if coef is None:
                return np.concatenate(list(parts), axis=1)
            return sum(parts)

    @fit_context
    @compute_section
    def fit(self, X: ArrayLike, y: ArrayLike) -> SubsetEnsembleClassifier:
        """Fit the submodels on disjoint subsets and the ridge combiner on the held-out part (or all rows).
        Returns ``self``."""
        Xt, codes_t = self._validate_fit_input(X, y, target="classes")
        template = DeepLSSVMClassifier() if self.estimator is None else self.estimator
        if not hasattr(template, "decision_function") or not hasattr(template, "fit"):
            raise TypeError(f"estimator must be a classifier with fit and decision_function, got "
                            f"{type(template).__name__}.")
        if self.clip is not None:
            low, high = check_sequence(self.clip, "clip", [Interval(Real, None, None)], length=2, what="(low, high)")
            if not low < high:
                raise ValueError(f"clip must be (low, high) with low < high, or None; got {self.clip!r}.")
        rng = numpy_rng(self.random_state)
        Xn = Xt.cpu().numpy()
        codes = codes_t.cpu().numpy()
        labels = self.classes_[codes]
        if self.validation_fraction is None:  # the combiner fits the submodels' rows (the paper's way)
            hold = train = np.arange(len(codes))
        else:
            hold, train = self._holdout(codes, rng)
        Xtr, ytr, ctr = Xn[train], labels[train], codes[train]
        if self.noise is not None:  # noisy copies of the submodels' training part (paper: N(0, 0.5^2) in [0, 1])
            noisy = Xtr + rng.normal(0.0, float(self.noise), size=Xtr.shape).astype(Xtr.dtype)
            if self.clip is not None:
                noisy = np.clip(noisy, self.clip[0], self.clip[1])
            Xtr, ytr, ctr = np.concatenate([Xtr, noisy]), np.concatenate([ytr, ytr]), np.concatenate([ctr, ctr])
        subsets = stratified_subsets(ctr, int(self.subset_size), rng)
        seeds = rng.integers(0, 2**31 - 1, size=len(subsets))
        jobs = (delayed(_fit_one)(template, seed, Xtr[s], ytr[s], k) for k, (s, seed) in enumerate(zip(subsets, seeds)))
        with _backend(self.n_jobs):
            runner = Parallel(return_as="generator")
            self.estimators_ = list(tqdm(runner(jobs), total=len(subsets), disable=not self.progress,
                                         desc="submodels", leave=False))
        self.subsets_, self.holdout_indices_ = subsets, hold
        if self.validation_fraction is None:
            coef, intercept = self._combine_all_rows(Xn, codes, rng)
        else:
            coef, intercept = self._combine_held_out(Xn[hold], codes[hold])
        self.coef_ = torch.as_tensor(coef, dtype=self._dtype, device=self._device)
        self.intercept_ = torch.as_tensor(intercept, dtype=self._dtype, device=self._device)
        return self

    def _vote(self, n_outputs: int, n_members: int | None = None) -> np.ndarray:
        """The members' mean output (a soft vote) as combiner weights (q, o), over all or ``n_members`` submodels."""
        n = len(self.estimators_) if n_members is None else int(n_members)
        return np.kron(np.ones((n, 1)), np.eye(n_outputs)) / n

    def _combine_held_out(self, X: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ridge regression of the ±1 codes on the tanh features of held-out rows (intercept unpenalised: centre
        first), its ridge by exact leave-one-out errors; sets ``ridge_`` and returns ``(coef, intercept)``."""
        Z = self._evaluate(X, None, "combiner features")
        T = targets(codes, len(self.classes_))
        zbar, tbar = Z.mean(0), T.mean(0)
        Zc = Z - zbar
        # The members' mean output (a soft vote, nothing fitted on the held-out part) is the
        # candidate to beat: with few held-out points per weight the ridge combiner loses to it.
        vote = self._vote(T.shape[1])
        # One thin SVD serves the ridge search and the solve: with 1,000+ submodels the features outnumber
        # the held-out rows, and the (q, q) normal equations would cost q^3.
        svd = np.linalg.svd(Zc, full_matrices=False)
        if self.ridge == "loo":
            ridge, n_errors = loo_ridge(Zc, T, codes, svd)
            self.ridge_ = None if errors(Z @ vote, codes) <= n_errors else ridge
        else:
            self.ridge_ = float(self.ridge)
        if self.ridge_ is None:
            return vote, np.zeros(T.shape[1])
        U, sv, Vt = svd  # (Zc^T Zc + r I)^-1 Zc^T = V diag(s / (s^2 + r)) U^T
        coef = Vt.T @ ((sv / (sv**2 + self.ridge_))[:, None] * (U.T @ (T - tbar)))
        return coef, tbar - zbar @ coef

    def _combine_all_rows(self, X: np.ndarray, codes: np.ndarray,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Ridge regression on all training rows (the paper's overdetermined system) by normal equations
        accumulated over row blocks, so no (m, q) feature matrix exists; ``ridge="loo"`` is chosen on rows that
        the combiner and their submodels leave out while choosing (:meth:`_ridge_fold`; exact leave-one-out
        would cost an eigendecomposition of order q). Sets ``ridge_``."""
        C = len(self.classes_)
        T = targets(codes, C)
        q = len(self.estimators_) * T.shape[1]
        fold, members = self._ridge_fold(codes, rng)
        columns = np.flatnonzero(np.repeat(members, T.shape[1]))  # the choosing combiner's features
        every, left_out = Moments(q, T.shape[1]), []
        rows = max(1, int(self.batch_size), 2**27 // q)  # about 1 GiB of float64 features per block
        for a in range(0, len(X), rows):
            Z = self._evaluate(X[a:a + rows], None, f"combiner features, rows {a}-{min(a + rows, len(X))}")
            every.add(Z, T[a:a + rows])
            left_out.append(Z[np.ix_(fold[a:a + rows], columns)])
        if self.ridge != "loo":
            self.ridge_ = float(self.ridge)
            return solved(every, self.ridge_)
        Zf, Tf = np.concatenate(left_out), T[fold]
        kept = every.without(Zf, Tf, columns)
        vote = self._vote(T.shape[1], members.sum())
        best, best_key = None, (errors(Zf @ vote, codes[fold]), -np.inf)  # the vote wins ties
        for lam in max(kept.trace(), np.finfo(float).tiny) * NORMAL_RIDGE_GRID:
            solution = kept.solve(lam)
            if solution is None:  # too small a ridge for the rounding of G: not a candidate
                continue
            F = Zf @ solution[0] + solution[1]
            key = (errors(F, codes[fold]), float(((F - Tf) ** 2).sum()))
            if key < best_key:
                best, best_key = float(lam), key
        del kept  # frees one (q', q') matrix before the final factor
        self.ridge_ = best
        if best is None:
            return self._vote(T.shape[1]), np.zeros(T.shape[1])
        return solved(every, best)

    def _ridge_fold(self, codes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(fold, members)``, boolean over the rows and the submodels: the rows ``ridge="loo"`` is chosen on, by
        a combiner of the ``members`` fitted on the other rows (all rows and members: no choice to make).

        The fold holds the clean rows of a random tenth of the submodels, which are left out with them: rows no
        member trained on (their noisy copies aside), as test rows (on rows their own submodel had seen, 50,000
        MNIST digits chose a ridge ten times too large; docs/papers.md). With one submodel, or no clean row among
        those, a stratified tenth of the rows.
        """
        fold, members = np.zeros(len(codes), dtype=bool), np.ones(len(self.estimators_), dtype=bool)
        if self.ridge != "loo":
            return fold, members
        if len(members) >= 2:
            left = rng.permutation(len(members))[:max(1, int(round(0.1 * len(members))))]
            rows = np.concatenate([self.subsets_[k] for k in left])
            fold[rows[rows < len(codes)]] = True  # subsets index [clean rows; noisy copies]
            if fold.any():
                members[left] = False
                return fold, members
        fold[self._holdout(codes, rng, 0.1)[0]] = True
        return fold, members

    def decision_function(self, X: ArrayLike) -> np.ndarray | torch.Tensor:
        """Combined outputs: (M,) for binary problems (positive means ``classes_[1]``), else (M, n_classes)."""
        Xn = self._validate_new_input(X, method="decision_function").cpu().numpy()
        coef = self.coef_.detach().cpu().numpy().astype(np.float64)
        F = torch.as_tensor(self._evaluate(Xn, coef, "submodel outputs"), dtype=self._dtype,
                            device=self._device) + self.intercept_
        if len(self.classes_) == 2:
            F = F[:, 0]
        return self._to_output(F, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Class labels (M,): the sign (binary) or the argmax of :meth:`decision_function`."""
        F = self.decision_function(X)
        F = F.detach().cpu().numpy() if isinstance(F, torch.Tensor) else F
        idx = (F > 0).astype(int) if F.ndim == 1 else F.argmax(1)
        return self.classes_[idx]
