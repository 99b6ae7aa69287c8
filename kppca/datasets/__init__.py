"""Data sets for examples, tests and benchmarks: MNIST, 8x8 digits, toy sets, time series; nothing is downloaded.

Image loaders return flat rows: ``X[0].reshape(MNIST_SHAPE)`` (or :data:`DIGITS_SHAPE`) is an image.
"""

from .augment import augmented_mnist
from .mnist import MNIST_ENV_VAR, MNIST_SHAPE, MNISTNotFoundError, bundled_mnist_path, load_mnist, read_idx, write_idx
from .toy import DIGITS_SHAPE, load_digits, load_santafe, make_circles, make_moons, make_swiss_roll, sum_of_sines

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
