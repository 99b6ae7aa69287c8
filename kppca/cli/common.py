"""What the commands of ``kppca`` share: stages with timings, data, model, output checks, and the errors.

Module level imports only the standard library (the parser reads :data:`DEFAULTS` and :data:`PROG`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

PROG = "kppca"

#: Defaults of the model options: the closest samples to held-out digits (Fréchet feature distance) under
#: confidence, balance, novelty and time constraints.
DEFAULTS = {"n_train": "auto", "bandwidth": 5.0, "n_components": 30, "seed": 0, "dtype": "float64"}

#: ``--n-train auto``: fit + 2,000 digits within this many seconds on 2 cores (a cost of N^2 measured at 60,000),
#: the peak memory of the fit (bytes per N^2, README's scaling table) within this share of the available memory.
AUTO_TIME_BUDGET_S = 300.0
AUTO_SECONDS_PER_N2 = 3.2e-8  # the main job at N = 60,000 float32 (q = 50): 95 s end to end on 2 idle cores, +20 %
AUTO_BYTES_PER_N2 = {"float64": 8.32, "float32": 4.16}
AUTO_MEMORY_SHARE = 0.85


#: The default q follows N (``benchmarks/mnist_data_size.py``, held-out digits): 30 up to ``AUTO_Q_KNEE`` training
#: digits, rising log-linearly to ``AUTO_Q_MAX`` at twice that. With 10,000 samples per model on two selection
#: splits of the full set, q = 50 gave closer digits than 30 at 10,000, 20,000 and 50,000 digits (by 0.8-1.5 FD)
#: and q = 60 none closer than 50 at 50,000; at 5,000 the full set gained 0.5-1.1 but the bundled digits none
#: (5.77 against 5.61 over eight draws), so the bundled default keeps q = 30.
AUTO_Q_KNEE, AUTO_Q_MAX = 5_000, 50


def auto_n_components(n_train: int) -> int:
    """The default latent dimension for ``n_train`` training digits: 30 up to 5,000, 50 from 10,000 on,
    ``30 + 20 log2(N / 5,000)`` in between."""
    q0 = DEFAULTS["n_components"]
    if n_train <= AUTO_Q_KNEE:
        return q0
    return int(min(AUTO_Q_MAX, round(q0 + (AUTO_Q_MAX - q0) * math.log2(n_train / AUTO_Q_KNEE))))


def auto_n_train(n_available: int, dtype: str | None, available_bytes: float | None) -> tuple[int, str]:
    """``--n-train auto``: the largest N (and the dtype, float64 first unless given) within time and memory.

    ``available_bytes`` None (unknown) sets no memory bound; float32 only where it allows a larger N than float64.
    """
    by_time = int((AUTO_TIME_BUDGET_S / AUTO_SECONDS_PER_N2) ** 0.5)

    def largest(dt: str) -> int:
        if available_bytes is None:
            return min(n_available, by_time)
        by_memory = int((AUTO_MEMORY_SHARE * available_bytes / AUTO_BYTES_PER_N2[dt]) ** 0.5)
        return min(n_available, by_time, by_memory)

    if dtype is None:
        dtype = "float64" if largest("float64") >= largest("float32") else "float32"
    return largest(dtype), dtype

# Errors a user can fix once the options are accepted (missing files, data that do not fit the settings,
# numbers out of floating-point range): one line, exit status 1.
USER_ERRORS = (ValueError, TypeError, OSError, NotImplementedError, LookupError, ArithmeticError)


class UserError(Exception):
    """An error in what the user asked for, reported without a traceback (exit status 1)."""


class OptionError(UserError):
    """An option value the library refuses, found before any work: ``argument --bandwidth: ...``, exit status 2."""

    def __init__(self, option: str, message: str):
        super().__init__(f"argument {option}: {message}")


class Stages:
    """A tqdm bar over the named stages of a command (stderr), plus timings for the report."""

    def __init__(self, names: Sequence[str], enabled: bool):
        from tqdm.std import tqdm  # a text bar: the command writes to a terminal, never to a notebook

        self.bar = tqdm(total=len(names), file=sys.stderr, disable=not enabled, leave=False,
                        bar_format="{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]")
        self.timings: dict[str, float] = {}
        self.current: str | None = None  # the stage running (or that failed), for the error messages
        self._start = time.perf_counter()

    def run(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as stage ``name``; once torch is loaded, on the threads the machine has free."""
        self.bar.set_description_str(name)
        self.current = name
        t0 = time.perf_counter()
        section = contextlib.nullcontext()
        if "torch" in sys.modules:
            from .._linalg.threads import compute_threads

            section = compute_threads()
        with self._ticking(), section:
            out = fn(*args, **kwargs)
        self.timings[name] = time.perf_counter() - t0
        self.bar.update(1)
        return out

    @contextlib.contextmanager
    def _ticking(self) -> Iterator[None]:
        """Redraw the bar every half second (a long stage shows its elapsed time, not a frozen line)."""
        if self.bar.disable:
            yield
            return
        done = threading.Event()

        def tick() -> None:
            while not done.wait(0.5):
                self.bar.refresh()

        ticker = threading.Thread(target=tick, name="kppca-progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()

    def close(self) -> float:
        self.bar.close()
        return time.perf_counter() - self._start


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a ``KeyError``'s without the quotes of its repr)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, KeyError):  # str(KeyError) is the repr of the key
        text = text.strip("'\"")
    return text or type(exc).__name__


#: Library parameters that options set: a message about their values names the flag the user typed.
PARAMETER_FLAGS = {"n_components": "--n-components", "sigma2": "--sigma2"}
#: What to change, per stage, when a stage needs more memory than the machine has.
_MEMORY_OPTIONS = {"fit model": "--dtype float32 or a smaller --n-train", "generate": "a smaller --n-samples"}


def in_option_words(exc: BaseException, args: argparse.Namespace, stage: str | None) -> str:
    """The one-line message of a library error raised in ``stage``, naming the options (flags) that set or help it."""
    text = one_line(exc)
    if not getattr(args, "model", None):
        for name, flag in PARAMETER_FLAGS.items():
            text = re.sub(rf"\b{name}\b(?!_)", flag, text)  # not sigma2_ or n_components_ (fitted attributes)
        n_train = getattr(args, "n_train", None)
        if stage == "fit model" and "smaller than the rank" in text and isinstance(n_train, int):
            text += (f" The rank is at most --n-train {n_train} digits - 1 = {n_train - 1}: raise --n-train or "
                     "lower --n-components.")
    if isinstance(exc, MemoryError) and stage in _MEMORY_OPTIONS:
        text += f" Here: {_MEMORY_OPTIONS[stage]}."
    return text


def load_training_data(args: argparse.Namespace) -> tuple[Any, Any, str]:
    from ..datasets import MNIST_ENV_VAR, MNISTNotFoundError, load_mnist

    path = args.mnist_dir  # an existing folder (check_paths)
    # Everything of the selected classes first (parsed files are cached), to size the subset.
    try:
        _, y_all = load_mnist(digits=args.digits, path=path)
    except MNISTNotFoundError:  # its message lists every accepted spelling: too long for one line
        where = f"--mnist-dir {path!r}" if path is not None else f"${MNIST_ENV_VAR} {os.environ.get(MNIST_ENV_VAR)!r}"
        raise UserError(f"{where} has no train-images-idx3-ubyte and train-labels-idx1-ubyte (.gz allowed); "
                        "put them there, or leave it out to use the bundled digits.") from None
    n = args.n_train
    if n is None:  # every digit at hand that fits: all 5,000 bundled ones, up to 60,000 of a folder
        n = DEFAULTS["n_train"]
    if n == "auto":
        from .._resources import available_memory

        # --report judges on the digits left out: leave it 10,000 (a sixth of fewer), as benchmarks/ hold out
        spare = min(10_000, len(y_all) // 6) if getattr(args, "report", False) else 0
        # RAM alone (psutil's "available"): a model sized to run fast must not count on swap
        memory = available_memory(getattr(args, "device", None) or "cpu", swap=False)  # the GPU's with --device cuda
        n, args.dtype = auto_n_train(len(y_all) - spare, args.dtype, memory)
        print(f"--n-train auto: N = {n} of {len(y_all)} digits in {args.dtype} (fit + sampling within about "
              f"{AUTO_TIME_BUDGET_S:.0f} s and {AUTO_MEMORY_SHARE:.0%} of the available memory)")
    if n > len(y_all):
        raise UserError(f"--n-train {n} exceeds the {len(y_all)} digits available for the selected classes.")
    if n < 3:
        raise UserError(f"--n-train {n} is too small; the model needs at least 3 digits.")
    X, y = load_mnist(digits=args.digits, n_samples=n, random_state=args.seed, path=path)
    source = path or os.environ.get(MNIST_ENV_VAR) or "the bundled 5,000-digit sample"
    return X, y, str(source)


def build_model(args: argparse.Namespace) -> Any:
    """The unfitted model of the options, its kernel tried on two points; a refused value is an :class:`OptionError`."""
    import numpy as np

    from ..kernels import RBF
    from ..models import DualPPCA

    try:
        kernel = RBF(args.bandwidth)
        probe = np.asarray(kernel(np.zeros((1, 1)), np.full((1, 1), 28.0)))  # 28: the farthest two images
    except (ValueError, TypeError, ArithmeticError) as exc:  # ZeroDivisionError, OverflowError: too extreme
        raise OptionError("--bandwidth", f"{args.bandwidth:g} cannot be used, the RBF kernel is not computable "
                          f"with it ({one_line(exc)}); pixels are in [0, 1], the default is {DEFAULTS['bandwidth']}"
                          ) from None
    if not np.isfinite(probe).all():
        raise OptionError("--bandwidth", f"{args.bandwidth:g} cannot be used, the RBF kernel is not finite with it; "
                          f"pixels are in [0, 1], the default is {DEFAULTS['bandwidth']}")
    if 1.0 - float(probe.ravel()[0]) < 1e-8:  # the kernel is 1 to 8 digits between any two 784-pixel images
        raise OptionError("--bandwidth", f"{args.bandwidth:g} is so wide that the RBF kernel is 1 between any two "
                          f"digits (pixels in [0, 1]): the model would see no variation; the default is "
                          f"{DEFAULTS['bandwidth']}")
    q = args.n_components
    if q is None and args.sigma2 is None:
        q = DEFAULTS["n_components"]
    return DualPPCA(q, sigma2=args.sigma2, kernel=kernel, dtype=args.dtype or DEFAULTS["dtype"],
                    device=checked_device(args), random_state=args.seed)


def checked_device(args: argparse.Namespace) -> str | None:
    """``--device`` (None: the CPU) once it is known to exist here; else an :class:`OptionError`."""
    device = getattr(args, "device", None)
    if device is None or device == "cpu":
        return device
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise OptionError("--device", f"{device} asks for a GPU, but torch sees no CUDA device here "
                          f"(torch {torch.__version__}, torch.cuda.is_available() is False); leave --device out to "
                          "compute on the CPU")
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise OptionError("--device", f"{device} does not exist: this machine has {count} CUDA device(s), "
                          f"cuda:0 to cuda:{count - 1}")
    return device


def load_model(path: str, device: str | None = None) -> Any:
    """The model saved in ``path`` (an existing file: :func:`check_paths`), on ``device`` (default: the CPU)."""
    from .. import ModelFileError, load

    try:
        return load(path, map_location=device or "cpu")
    except (ModelFileError, OSError) as exc:  # a bad or unreadable file, from the user's point of view
        raise UserError(f"cannot read model file {path!r}: {exc}") from exc


def describe(model: Any) -> str:
    kernel = getattr(model, "kernel_", None)
    kind = type(model).__name__
    kern = f", kernel {kernel!r}" if kernel is not None else ""
    ev = float(model.explained_variance_ratio_.sum())
    return (
        f"model: {kind}{kern}, N = {model.n_samples_}, q = {model.n_components_}, rank r = {model.rank_}, "
        f"sigma2 = {model.sigma2_:.4g} ({100 * model.sigma2_ / model.total_variance_:.3g} % of the total "
        f"variance per direction), explained variance {100 * ev:.2f} %"
    )


def prepare(args: argparse.Namespace, stages: Stages) -> Any:
    if getattr(args, "model", None):
        ignored = [f"--{k.replace('_', '-')}" for k in ("digits", "n_train", "bandwidth", "n_components", "sigma2",
                                                       "mnist_dir") if getattr(args, k) is not None]
        if ignored:
            print(f"{PROG}: note: --model given, ignoring {', '.join(ignored)}", file=sys.stderr)
        model = stages.run("load model", load_model, args.model, checked_device(args))
        print(f"loaded {args.model}")
    else:
        unfitted = build_model(args)  # option errors before the data are read
        X, y, source = stages.run("load data", load_training_data, args)
        unfitted.set_params(dtype=args.dtype or DEFAULTS["dtype"])  # --n-train auto may choose float32
        if args.n_components is None and args.sigma2 is None:  # the default q follows the training digits
            unfitted.set_params(n_components=auto_n_components(len(y)))
        classes = sorted(set(int(v) for v in y))
        print(f"data: {len(y)} MNIST digits of classes {','.join(map(str, classes))} from {source}")
        model = stages.run("fit model", unfitted.fit, X, y)
    print(describe(model))
    return model


def image_shape(model: Any) -> tuple[int, int]:
    from ..plotting.images import image_shape_for

    try:
        return image_shape_for(model.n_features_in_)
    except ValueError:
        raise UserError(
            f"the model's inputs have {model.n_features_in_} features, not square images; cannot draw them."
        ) from None


def check_paths(args: argparse.Namespace, outputs: Sequence[tuple[str, str]]) -> None:
    """``--model`` is a readable file, ``--mnist-dir`` a folder and each ``(path, what)`` of ``outputs`` writable."""
    model = getattr(args, "model", None)
    if model:
        from .._resources import path_kind

        kind = path_kind(model)
        if kind == "missing":
            raise UserError(f"model file {model!r} does not exist (write one with 'kppca fit --save FILE').")
        if kind is not None:  # a folder, a pipe, a device (a link to /dev/zero): never opened
            link = f" (a link to {os.path.realpath(model)})" if os.path.islink(model) else ""
            raise UserError(f"--model {model!r} is {kind}{link}, not a model file; give a file written by "
                            "'kppca fit --save FILE'.")
        if not os.access(model, os.R_OK):
            raise UserError(f"cannot read model file {model!r}: permission denied.")
    mnist_dir = getattr(args, "mnist_dir", None)
    if mnist_dir is not None and not os.path.isdir(mnist_dir):
        raise UserError(f"--mnist-dir {mnist_dir!r} is not an existing folder.")
    for out, what in outputs:
        check_writable(out, what)


def check_image_format(out: str) -> None:
    """Fail before any fitting when matplotlib cannot write the format of ``out`` (its suffix, PNG when none)."""
    from matplotlib.backend_bases import FigureCanvasBase

    fmt = Path(out).suffix[1:].lower() or "png"
    if fmt not in FigureCanvasBase.get_supported_filetypes():
        raise UserError(f"cannot write {out!r}: unsupported image format {fmt!r}; use .png.")


def check_writable(out: str, what: str) -> None:
    """``out`` can be created or overwritten (standard library only)."""
    path = Path(out)
    if not path.parent.is_dir():
        raise UserError(f"cannot write {out!r}: folder {str(path.parent)!r} does not exist.")
    if path.is_dir():
        raise UserError(f"cannot write {out!r}: it is a folder; give a file name for the {what}.")
    if what == "model" and path.exists() and not path.is_file():  # a model replaces its file: never a device
        raise UserError(f"cannot write {out!r}: it is not a regular file (e.g. a device); give a file name.")
    # Permission bits do not tell (root ignores them, /proc refuses anyway): try to open the file for
    # appending, which never truncates an existing file, and remove it again if it is new.
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write {out!r}: {exc.strerror or exc}; choose a writable folder.") from exc
    if not existed:
        try:
            path.unlink()
        except OSError:  # left as an empty file: harmless, it is overwritten at the end
            pass


def save_model(model: Any, out: str) -> None:
    """Write ``model`` to ``out``; any failure is one line naming the file, not the serializer's internals."""
    try:
        model.save(out)
    except OSError as exc:
        raise UserError(f"cannot write the model to {out!r}: {exc.strerror or exc}.") from exc
    except RuntimeError as exc:  # C++ serializers (torch's) report I/O failures as RuntimeError('[enforce fail ...]')
        reason = str(exc).rpartition("strerror: ")[2].strip() if "strerror: " in str(exc) else "write failed"
        raise UserError(f"cannot write the model to {out!r}: {reason}; check the folder and free space.") from exc
