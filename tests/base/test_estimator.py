"""The estimator scaffold (kppca.base.KernelEstimator): fit preamble, fitted check, tags, outputs."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.exceptions import DataConversionWarning, NotFittedError
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted

from kppca._param_validation import fit_context
from kppca.base import KernelEstimator, KernelTransformerMixin
from kppca.io import TensorSpec
from kppca.io.record import EstimatorState, fitted


@dataclasses.dataclass(frozen=True, kw_only=True)
class _ToyState(EstimatorState):
    mean_: torch.Tensor = fitted(TensorSpec(shape=("n_features_in_",)))
    y_seen_: torch.Tensor = fitted(TensorSpec("any_float", ndim=1), TensorSpec("int", ndim=1), None)


class _Toy(KernelTransformerMixin, KernelEstimator):
    """The smallest estimator on the scaffold: transform returns X times the training mean."""

    _parameter_constraints = {"dtype": ["dtype"], "device": ["device"], "target": [None, str]}
    _state_type = _ToyState

    def __init__(self, target=None, dtype=None, device=None):
        self.target = target
        self.dtype = dtype
        self.device = device

    @fit_context
    def fit(self, X, y=None):
        Xt, yt = self._validate_fit_input(X, y, target=self.target)
        self.mean_ = Xt.mean(0)
        self.y_seen_ = yt
        self._cache.set("mean2", self.mean_ * 2)
        return self

    def transform(self, X):
        Xt = self._validate_new_input(X, method="transform")
        return self._to_output(Xt * self.mean_, X)


class _NoParams(KernelEstimator):
    def fit(self, X):
        self._validate_fit_input(X)
        return self


X = np.arange(12.0).reshape(6, 2)


def test_fit_records_metadata_and_dtype_device():
    m = _Toy().fit(X)
    assert m.n_features_in_ == 2 and m._numpy_fit_ is True
    assert m._dtype == torch.float64 and m._device == torch.device("cpu")
    assert not hasattr(m, "feature_names_in_")
    m32 = _Toy().fit(X.astype(np.float32))
    assert m32._dtype == torch.float32 and m32.mean_.dtype == torch.float32
    assert _Toy(dtype="float32").fit(X).mean_.dtype == torch.float32
    assert _Toy().fit(torch.as_tensor(X))._numpy_fit_ is False


def test_estimator_without_dtype_params_uses_input_dtype_on_cpu():
    m = _NoParams().fit(X.astype(np.float32))
    assert m._dtype == torch.float32 and m._device == torch.device("cpu")
    assert _NoParams().fit(X)._dtype == torch.float64


def test_feature_names_recorded_and_checked():
    df = pd.DataFrame(X, columns=["a", "b"])
    m = _Toy().fit(df)
    assert list(m.feature_names_in_) == ["a", "b"]
    with pytest.raises(ValueError, match="feature names should match"):
        m.transform(pd.DataFrame(X, columns=["b", "a"]))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        m.transform(X)
    m.fit(X)  # a refit without names forgets them
    assert not hasattr(m, "feature_names_in_")


def test_new_input_checks_width_and_converts_to_fit_dtype():
    m = _Toy(dtype="float32").fit(X)
    out = m.transform(torch.ones(3, 2, dtype=torch.float64))
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert torch.equal(out, m.mean_.expand(3, 2))
    assert isinstance(m.transform(np.ones((3, 2))), np.ndarray)
    with pytest.raises(ValueError, match="X has 3 features, but _Toy is expecting 2"):
        m.transform(np.ones((1, 3)))


def test_not_fitted_message_is_uniform():
    with pytest.raises(NotFittedError, match=r"This _Toy instance is not fitted yet; call fit\(X\) before transform\(\)"):
        _Toy().transform(X)
    with pytest.raises(NotFittedError):
        check_is_fitted(_Toy())
    check_is_fitted(_Toy().fit(X))


def test_fitted_marker_class_attribute():
    class Late(_NoParams):  # an estimator without a record keeps plain attributes
        _fitted_marker = "late_"

    m = Late().fit(X)
    assert not m.__sklearn_is_fitted__()
    m.late_ = 1
    assert m.__sklearn_is_fitted__()


def test_fitted_state_is_the_record_and_read_only():
    m = _Toy().fit(X)
    assert isinstance(m.state_, _ToyState) and m.mean_ is m.state_.mean_
    with pytest.raises(AttributeError, match="'mean_' is fitted state of _Toy.*read-only"):
        m.mean_ = torch.zeros(2)
    record = m.state_
    m.fit(X + 1)
    assert m.state_ is not record and torch.equal(record.mean_, torch.as_tensor(X).mean(0))  # never mutated


def test_refit_drops_cache_and_failed_fit_restores_it():
    m = _Toy().fit(X)
    first = m._cache
    assert "mean2" in first
    m.fit(X + 1)
    assert m._cache is not first and torch.equal(m._cache.peek("mean2"), (m.mean_ * 2))
    kept = m._cache
    with pytest.raises(ValueError, match="NaN"):
        m.fit(np.full((4, 2), np.nan))
    assert m._cache is kept  # fit_context restored the previous fit, cache included


def test_min_samples():
    with pytest.raises(ValueError, match="X has 1 sample"):
        _Toy().fit(X[:1])


def test_class_targets_encoded():
    m = _Toy(target="classes").fit(X, np.array(["b", "a", "b", "c", "a", "c"]))
    assert list(m.classes_) == ["a", "b", "c"]
    assert m.y_seen_.dtype == torch.long and m.y_seen_.tolist() == [1, 0, 1, 2, 0, 2]


def test_class_targets_requires_grad_tensor_and_column_vector():
    y = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0], requires_grad=True)
    m = _Toy(target="classes").fit(X, y)
    assert m.y_seen_.tolist() == [0, 1, 0, 1, 0, 1]
    with pytest.warns(DataConversionWarning):
        _Toy(target="classes").fit(X, np.array([[0], [1], [0], [1], [0], [1]]))


@pytest.mark.parametrize("y", [np.array([0.0, 1.0, np.nan, 1.0, 0.0, 1.0]),
                               np.array(["a", "b", np.nan, "a", "b", "a"], dtype=object)])
def test_nan_class_labels_name_y(y):
    with pytest.raises(ValueError, match=r"^y \(the class labels\) contains NaN"):
        _Toy(target="classes").fit(X, y)


def test_class_target_errors():
    with pytest.raises(ValueError, match="requires y to be passed"):
        _Toy(target="classes").fit(X)
    with pytest.raises(ValueError, match="only 1 class"):
        _Toy(target="classes").fit(X, np.zeros(6))
    with pytest.raises(ValueError, match="X has 6 rows but y has 5"):
        _Toy(target="classes").fit(X, np.arange(5) % 2)
    with pytest.raises(ValueError, match="Unknown label type"):
        _Toy(target="classes").fit(X, np.linspace(0, 1, 6))


def test_continuous_target():
    y = torch.arange(6.0, requires_grad=True)
    m = _Toy(target="continuous", dtype="float32").fit(X, y)
    assert m.y_seen_.dtype == torch.float32 and not m.y_seen_.requires_grad
    assert m.y_seen_.tolist() == list(range(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the fit preamble alone: on an estimator without a record (a record's fields are set only in fit)
        Xt, Y = _NoParams()._validate_fit_input(X, np.ones((6, 3)), target="continuous", multi_output=True)
    assert Y.shape == (6, 3)
    with pytest.raises(ValueError, match="y must be 1-D"):
        _Toy(target="continuous").fit(X, np.ones((6, 3)))
    with pytest.raises(ValueError, match="y contains NaN"):
        _Toy(target="continuous").fit(X, np.array([0, 1, np.nan, 1, 0, 1.0]))


def test_tags():
    tags = get_tags(_Toy())
    assert tags.input_tags.sparse is False and tags.input_tags.allow_nan is False
    assert tags.transformer_tags.preserves_dtype == ["float64", "float32"]
    assert get_tags(_NoParams()).transformer_tags is None


def test_inputs_never_modified():
    Xc = X.copy()
    _Toy().fit(Xc).transform(Xc)
    assert np.array_equal(Xc, X)


def test_detach_target_for_score_mixins():
    from kppca.base import detach_target

    y = torch.arange(3.0, requires_grad=True)
    Xn, yn = detach_target(torch.ones(3, 2), y)
    assert isinstance(Xn, np.ndarray) and isinstance(yn, np.ndarray) and yn.tolist() == [0.0, 1.0, 2.0]
    lst = [1, 2]
    assert detach_target(lst, lst) == (lst, lst)  # non-tensors pass through untouched


def test_rounding_tolerance_is_n_eps_scale():
    from kppca._linalg import rounding_tolerance

    assert rounding_tolerance(torch.float64, 10, 3.0) == 10 * np.finfo(np.float64).eps * 3.0
    assert rounding_tolerance(torch.float32, 10, 3.0) == pytest.approx(10 * np.finfo(np.float32).eps * 3.0, rel=1e-15)
    # float32's level is 2^29 times float64's: the ratio of the two machine epsilons.
    assert rounding_tolerance(torch.float32, 7, 1.0) / rounding_tolerance(torch.float64, 7, 1.0) == 2.0**29
