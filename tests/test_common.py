"""scikit-learn's own estimator checks, run over every estimator of the package.

New estimators (the RKM family) join ``ESTIMATORS``. An expected failure must
name the check and say why it cannot pass; today there is none.
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from kppca import DualPPCA, PrimalPPCA
from kppca.features import RandomFourierFeatures
from kppca.kernels import RBF

ESTIMATORS = [
    DualPPCA(),
    DualPPCA(kernel=RBF(3.0), random_state=0),
    PrimalPPCA(),
    PrimalPPCA(feature_map=RandomFourierFeatures(bandwidth=3.0, n_features=50, random_state=0)),
]

#: check name -> reason, per estimator class name (none are needed today).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {}


@parametrize_with_checks(
    ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(type(est).__name__, {})
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_estimator_list_covers_every_public_estimator():
    import kppca

    public = {name for name in kppca.__all__ if name.endswith("PPCA")}
    assert public == {type(e).__name__ for e in ESTIMATORS}


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_tags_declare_dense_input_and_dtype_preservation(estimator):
    tags = estimator.__sklearn_tags__()
    assert tags.input_tags.sparse is False
    assert tags.input_tags.allow_nan is False
    assert tags.transformer_tags.preserves_dtype == ["float64", "float32"]
