"""The dense spectrum's failure modes (kppca._linalg.spectra)."""

import pytest
import torch

from kppca._linalg import eigen, solve_spectrum


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dense_spectrum_that_does_not_converge_is_a_clear_error(monkeypatch, dtype):
    """LAPACK's eigensolver can stop on a spectrum clustered at rounding level (the robustness sweep met one
    in float32): a ValueError that names the matrix and the remedy, not torch's LinAlgError."""

    def fails(A):
        raise torch.linalg.LinAlgError("linalg.eigh: The algorithm failed to converge (error code: 7).")

    monkeypatch.setattr(eigen.torch.linalg, "eigh", fails)
    with pytest.raises(ValueError, match="eigendecomposition of the centered test matrix did not converge") as info:
        solve_spectrum(torch.eye(4, dtype=dtype), "dense", what="centered test matrix")
    assert ("float64" in str(info.value)) == (dtype == torch.float32)
