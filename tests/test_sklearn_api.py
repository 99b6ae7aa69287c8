"""What users of scikit-learn expect beyond ``check_estimator``: atomic refits, parameters,
feature names, pandas output, dtype preservation, and clear errors for bad devices, seeds
and inputs."""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest
import scipy.sparse
import torch

from kppca import DualPPCA, PrimalPPCA
from kppca._param_validation import InvalidParameterError
from kppca.features import PolynomialFeatures
from kppca.kernels import RBF

BOTH = [PrimalPPCA, DualPPCA]


@pytest.fixture
def X(structured_data):
    return structured_data  # (40, 6), rank 6 after centering


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _snapshot(model) -> dict:
    """A deep copy of the whole instance state (tensors cloned), to compare bit for bit."""
    return {k: copy.deepcopy(v) for k, v in model.__dict__.items()}


def _assert_same(old, new, path: str) -> None:
    """Bit-for-bit equality of tensors, arrays, scalars, containers and plain objects."""
    if isinstance(old, torch.Tensor):
        assert isinstance(new, torch.Tensor) and new.dtype == old.dtype and new.device == old.device, path
        assert torch.equal(new, old), path
    elif isinstance(old, np.ndarray):
        assert np.array_equal(new, old), path
    elif isinstance(old, (tuple, list)):
        assert type(new) is type(old) and len(new) == len(old), path
        for i, (a, b) in enumerate(zip(old, new)):
            _assert_same(a, b, f"{path}[{i}]")
    elif isinstance(old, dict):
        assert set(new) == set(old), path
        for key in old:
            _assert_same(old[key], new[key], f"{path}[{key!r}]")
    elif isinstance(old, _LOCK_TYPES):  # a cache's or Gram object's lock: state of no result
        assert type(new) is type(old), path
    elif callable(old) and not hasattr(old, "__dict__"):
        assert new is old, path
    elif hasattr(old, "__dict__") and not isinstance(old, type):
        assert type(new) is type(old), path
        _assert_same(vars(old), vars(new), path)
    else:
        assert new == old and type(new) is type(old), path


def _assert_state_identical(before: dict, model) -> None:
    _assert_same(before, dict(model.__dict__), type(model).__name__)


# ----------------------------------------------------------------------------- atomic refits


def _failing_refits(model_cls, X):
    """(description, change of parameters, data) for each way a refit can fail."""
    rng = np.random.default_rng(1)
    bad_nan = X.copy()
    bad_nan[2, 3] = np.nan
    cases = [
        ("invalid parameter", {"n_components": -1}, X),
        ("NaN in X", {}, bad_nan),
        ("1-D X", {}, X[0]),
        ("one sample", {}, X[:1]),
        ("torch sparse X", {}, torch.tensor(X).to_sparse()),  # scipy.sparse is accepted (issue 27)
        ("complex X", {}, X + 1j),
        ("q not below the rank", {"n_components": 45}, X),
        ("sigma2 above lambda_q / N", {"n_components": 2, "sigma2": 1e6}, X),
        ("fraction with sigma2", {"n_components": 0.5, "sigma2": 0.1}, X),
        ("partial solver, fraction too large", {"n_components": 0.9999999, "eigen_solver": "partial"}, X),
        ("different shape, rank too low", {"n_components": 3}, X[:3, :2]),
        ("float32 data, q too large", {"n_components": 30}, rng.normal(size=(30, 3)).astype(np.float32)),
    ]
    if model_cls is DualPPCA:
        cases += [
            ("non-PSD callable kernel", {"kernel": lambda A, B: -(A @ B.T)}, X),
            ("asymmetric callable kernel", {"kernel": lambda A, B: A @ B.T + A[:, :1]}, X),
            ("unknown kernel name", {"kernel": "nope"}, X),
        ]
    else:
        cases += [("feature map of another width", {"feature_map": PolynomialFeatures(2).fit(X[:, :3])}, X)]
    return cases


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("center", [True, False])
def test_failed_refit_leaves_the_fitted_model_bit_identical(model_cls, X, center):
    for description, params, data in _failing_refits(model_cls, X):
        kwargs = {"kernel": RBF(4.0)} if model_cls is DualPPCA else {"feature_map": PolynomialFeatures(2)}
        model = model_cls(2, center=center, **kwargs).fit(X)
        H = model.transform(X[:5])
        before = _snapshot(model)
        original = {key: getattr(model, key) for key in params}
        model.set_params(**params)
        with pytest.raises((ValueError, TypeError)):
            model.fit(data)
        model.set_params(**original)  # parameters are the user's to change; fitted state is not
        _assert_state_identical(before, model)
        np.testing.assert_array_equal(model.transform(X[:5]), H, err_msg=description)


@pytest.mark.parametrize("model_cls", BOTH)
def test_failed_first_fit_leaves_an_unfitted_model(model_cls, X):
    model = model_cls(6)
    with pytest.raises(ValueError):
        model.fit(X)
    assert not any(k.endswith("_") and not k.startswith("__") for k in vars(model)), vars(model)


# ----------------------------------------------------------------------------- parameters and defaults


@pytest.mark.parametrize("model_cls", BOTH)
def test_default_n_components_fits_rank_two_data(model_cls):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))  # centered rank 2: two components would leave no noise direction
    model = model_cls().fit(X)
    assert model.n_components_ == 1 and model.rank_ == 2
    assert model_cls().fit(rng.normal(size=(20, 5))).n_components_ == 2


def test_fitted_kernel_is_a_private_copy(X):
    kernel = RBF(4.0)
    model = DualPPCA(2, kernel=kernel).fit(X)
    H = model.transform(X)
    model.set_params(kernel__bandwidth=1.0)  # changes the parameter, not the fitted model
    assert kernel.bandwidth == 1.0 and model.kernel_.bandwidth == 4.0
    np.testing.assert_array_equal(model.transform(X), H)


@pytest.mark.parametrize("model_cls", BOTH)
def test_random_state_is_checked_at_fit(model_cls, X):
    for bad in ["x", 2**64, -1, 1.5]:
        with pytest.raises(InvalidParameterError, match=r"'random_state' parameter .* Got"):
            model_cls(2, random_state=bad).fit(X)
    model_cls(2, random_state=2**64 - 1).fit(X)  # the largest seed torch accepts


@pytest.mark.parametrize("model_cls", BOTH)
def test_bad_devices_are_clear_errors(model_cls, X):
    with pytest.raises(InvalidParameterError, match=r"'device' parameter .* Got 'gpu0'"):
        model_cls(2, device="gpu0").fit(X)
    if not torch.cuda.is_available():
        with pytest.raises(InvalidParameterError, match=r"'device' parameter .* Got 'cuda'"):
            model_cls(2, device="cuda").fit(X)


def test_bad_seed_for_sampling_is_a_clear_error(X):
    model = DualPPCA(2).fit(X)
    with pytest.raises(InvalidParameterError, match=r"random_state must be None, an int in the range"):
        model.sample_kernel(2, random_state=2**64)
    with pytest.raises(InvalidParameterError, match=r"random_state must be .* got 'x'"):
        model.sample_kernel(2, random_state="x")


# ----------------------------------------------------------------------------- inputs


@pytest.mark.parametrize("model_cls", BOTH)
def test_negative_strides_are_accepted_and_not_modified(model_cls, X):
    flipped = X[::-1]
    before = flipped.copy()
    model = model_cls(2).fit(flipped)
    np.testing.assert_array_equal(flipped, before)
    np.testing.assert_allclose(model.transform(np.flip(X, axis=0)), model.transform(flipped.copy()), rtol=0, atol=0)
    ref = model_cls(2).fit(np.ascontiguousarray(flipped))
    np.testing.assert_array_equal(model.transform(X), ref.transform(X))


@pytest.mark.parametrize("model_cls", BOTH)
@pytest.mark.parametrize("sparse", [scipy.sparse.csr_matrix, scipy.sparse.csr_array, scipy.sparse.csc_array])
def test_sparse_input_gives_the_dense_model(model_cls, X, sparse):
    # scipy.sparse X is accepted as by KernelPCA/PCA (issue 27): densified on entry, so the model and its
    # outputs are those of the dense X exactly (the same float operations on the same numbers).
    model = model_cls(2).fit(sparse(X))
    ref = model_cls(2).fit(X)
    np.testing.assert_array_equal(model.transform(sparse(X)), ref.transform(X))
    assert isinstance(model.transform(sparse(X)), np.ndarray)
    # torch's sparse layouts are still refused, with the fix
    with pytest.raises(TypeError, match=r"Sparse data.*to_dense"):
        model.transform(torch.tensor(X).to_sparse())


@pytest.mark.parametrize("model_cls", BOTH)
def test_zero_features_message(model_cls):
    with pytest.raises(ValueError, match=r"0 feature\(s\) \(shape=\(40, 0\)\) while a minimum of 1 is required"):
        model_cls(2).fit(np.empty((40, 0)))


@pytest.mark.parametrize("model_cls", BOTH)
def test_one_feature_message(model_cls):
    x = np.arange(10.0).reshape(-1, 1)
    with pytest.raises(ValueError, match=r"rank 1: X has 1 feature\(s\)"):
        model_cls().fit(x)


@pytest.mark.parametrize("model_cls", BOTH)
def test_float32_input_stays_float32_unless_dtype_is_set(model_cls, X):
    X32 = X.astype(np.float32)
    model = model_cls(2).fit(X32)
    assert model.transform(X32).dtype == np.float32
    assert model.transform(X).dtype == np.float32  # the fitted dtype decides for new data
    assert model_cls(2).fit(X).transform(X32).dtype == np.float64
    assert model_cls(2, dtype="float64").fit(X32).transform(X32).dtype == np.float64
    assert model_cls(2).fit(torch.tensor(X32)).transform(torch.tensor(X32)).dtype == torch.float32
    # float32 agrees with float64 to the float32 rounding of the data (condition ~ lam_1 / lam_2)
    H64 = model_cls(2).fit(X).transform(X)
    np.testing.assert_allclose(model.transform(X32), H64, atol=1e-4 * np.abs(H64).max())


# ----------------------------------------------------------------------------- feature names and pandas


@pytest.mark.parametrize("model_cls", BOTH)
def test_feature_names_and_pandas_output(model_cls, X):
    pd = pytest.importorskip("pandas")
    columns = [f"pixel{i}" for i in range(X.shape[1])]
    df = pd.DataFrame(X, columns=columns)
    model = model_cls(2).fit(df)
    np.testing.assert_array_equal(model.feature_names_in_, columns)
    prefix = model_cls.__name__.lower()
    np.testing.assert_array_equal(model.get_feature_names_out(), [f"{prefix}0", f"{prefix}1"])
    with pytest.raises(ValueError, match="Feature names must be in the same order as they were in fit"):
        model.transform(df[columns[::-1]])
    with pytest.raises(ValueError, match="Feature names unseen at fit time"):
        model.transform(df.rename(columns={"pixel0": "other"}))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.transform(X)
    model.set_output(transform="pandas")
    out = model.transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == [f"{prefix}0", f"{prefix}1"]
    np.testing.assert_array_equal(out.to_numpy(), model_cls(2).fit(X).transform(X))
    # refitting on plain arrays forgets the names
    assert not hasattr(model_cls(2).fit(df).fit(X), "feature_names_in_")


# ----------------------------------------------------------------------------- blockwise evaluation


@pytest.mark.parametrize("model_cls", BOTH)
def test_blockwise_evaluation_equals_one_shot(model_cls, X):
    kwargs = {"kernel": RBF(4.0)} if model_cls is DualPPCA else {"feature_map": PolynomialFeatures(2)}
    model = model_cls(2, **kwargs).fit(X)
    Xnew = X[::-1] * 1.1  # not the training set, so the kernel blocks are really evaluated
    one_shot = {name: getattr(model, name)(Xnew) for name in ("transform", "score_samples", "novelty_score")}
    model.set_params(batch_size=3)  # read at use: 14 blocks of 3 rows (and a last one of 1)
    eps = np.finfo(np.float64).eps
    for name, ref in one_shot.items():
        got = getattr(model, name)(Xnew)
        # The same per-row arithmetic; a matrix product over fewer rows may sum in another order:
        # N eps relative to the largest magnitude of the result (a novelty fraction is relative to 1).
        scale = 1.0 if name == "novelty_score" else np.abs(ref).max()
        np.testing.assert_allclose(got, ref, rtol=0, atol=X.shape[0] * eps * scale, err_msg=name)
    with pytest.raises(InvalidParameterError, match=r"'batch_size' parameter .* Got 0 instead"):
        model_cls(2, batch_size=0).fit(X)


# ---------------------------------------------------------------------- the estimator scaffold
def _scaffold_cases():
    from kppca.rkm import KernelPCARKM, LSSVMClassifier, LSSVMRegressor, MultiViewKPCA, NARForecaster

    return [
        (DualPPCA(), "transform", "fit(X)"),
        (PrimalPPCA(), "transform", "fit(X)"),
        (LSSVMRegressor(), "predict", "fit(X, y)"),
        (LSSVMClassifier(), "predict", "fit(X, y)"),
        (KernelPCARKM(), "transform", "fit(X)"),
        (MultiViewKPCA(), "transform", "fit(views)"),
        (NARForecaster(), "forecast", "fit(series)"),
    ]


@pytest.mark.parametrize("model, method, call", _scaffold_cases(), ids=lambda v: getattr(v, "__name__", None))
def test_one_not_fitted_message_on_every_estimator(model, method, call):
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    from kppca.base import KernelEstimator

    assert isinstance(model, KernelEstimator)
    with pytest.raises(NotFittedError):
        check_is_fitted(model)
    pattern = f"This {type(model).__name__} instance is not fitted yet; call {call} before {method}"
    with pytest.raises(NotFittedError, match=pattern.replace("(", r"\(").replace(")", r"\)")):
        getattr(model, method)(np.zeros((3, 2)) if method != "forecast" else 3)
