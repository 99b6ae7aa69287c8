"""A small digit classifier whose hidden layer gives the features of the Fréchet distance.

An MLP (``D -> 256 -> 64 -> classes``, ReLU) trains in seconds on CPU with no download; its hidden units
respond to strokes. Training is deterministic: seeded, float32, one CPU thread (another count rounds
differently). Backward pass and fused Adam step are written out (importing ``torch.optim`` costs as much
as the training), bitwise ``torch.optim.Adam(fused=True)``'s weights (tested).
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch

from .._validation import ArrayLike

__all__ = ["DigitFeatures", "train_digit_features", "digit_features"]

#: Hidden layer widths; the last one is the feature dimension.
HIDDEN: tuple[int, ...] = (256, 64)

# Networks trained in this process, by a digest of (data, labels, settings).
_TRAINED: dict[str, "DigitFeatures"] = {}
_MAX_TRAINED = 8


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """torch on one thread for the block (a process-wide setting: restored after it)."""
    previous = torch.get_num_threads()
    if previous != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if previous != 1:
            torch.set_num_threads(previous)


@dataclass(frozen=True, eq=False)
class DigitFeatures:
    """A trained MLP: ``features(X)`` (the last hidden layer) and ``predict_proba(X)``.

    Attributes
    ----------
    weights, biases : tuple of Tensor
        Layer parameters (float32, CPU); layer ``l`` maps ``x -> x @ weights[l].T + biases[l]``.
    classes : ndarray of shape (n_classes,)
    train_accuracy : float
    """

    weights: tuple[torch.Tensor, ...]
    biases: tuple[torch.Tensor, ...]
    classes: np.ndarray
    train_accuracy: float

    def _forward(self, X: ArrayLike, upto: int) -> torch.Tensor:
        if isinstance(X, torch.Tensor):
            h = X.detach().to(device="cpu", dtype=torch.float32)
        else:
            h = torch.as_tensor(np.asarray(X, dtype=np.float32))
        if h.ndim != 2 or h.shape[1] != self.weights[0].shape[1]:
            raise ValueError(f"X must have shape (n, {self.weights[0].shape[1]}), got {tuple(h.shape)}.")
        with torch.no_grad(), _one_thread():
            for layer in range(upto):
                h = h @ self.weights[layer].T + self.biases[layer]
                if layer < len(self.weights) - 1:
                    h = torch.relu(h)
        return h

    def features(self, X: ArrayLike) -> np.ndarray:
        """Hidden features of the last hidden layer, shape (n, HIDDEN[-1]), float64."""
        return self._forward(X, len(self.weights) - 1).double().numpy()

    __call__ = features

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities, shape (n, n_classes)."""
        return torch.softmax(self._forward(X, len(self.weights)).double(), 1).numpy()


def _init_layers(sizes: list[int], gen: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(weight (fan_out, fan_in), bias)`` per layer, from ``gen`` only (``nn.Linear`` draws from the global one)."""
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = (6.0 / fan_in) ** 0.5  # He-uniform: keeps ReLU activations at unit scale
        layers.append(((torch.rand((fan_out, fan_in), generator=gen) * 2 - 1) * bound, torch.zeros(fan_out)))
    return layers


class _FusedAdam:
    """Adam (L2 weight decay) as one call of torch's fused kernel on flat parameter and gradient vectors."""

    def __init__(self, params: list[torch.Tensor], *, lr: float, weight_decay: float):
        sizes = [p.numel() for p in params]
        self.flat = torch.cat([p.detach().reshape(-1) for p in params])
        self.grad = torch.zeros_like(self.flat)
        self.params = [v.view(p.shape) for v, p in zip(self.flat.split(sizes), params)]
        self.grads = [g.view(p.shape) for g, p in zip(self.grad.split(sizes), params)]
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self.steps = torch.zeros((), dtype=torch.float32)  # the kernel reads the count from a tensor
        self.options = dict(lr=lr, beta1=0.9, beta2=0.999, weight_decay=weight_decay, eps=1e-8, amsgrad=False,
                            maximize=False)

    def step(self) -> None:
        self.steps += 1
        torch._fused_adam_([self.flat], [self.grad], [self.exp_avg], [self.exp_avg_sq], [], [self.steps],
                           **self.options)


def train_digit_features(
    X: ArrayLike,
    y: ArrayLike,
    *,
    hidden: tuple[int, ...] = HIDDEN,
    epochs: int = 30,
    batch_size: int = 64,
    lr: float = 1e-3,
    weight_decay: float = 1e-4,
    random_state: int = 0,
) -> DigitFeatures:
    """Train the feature network (mini-batch Adam) on real inputs ``X`` (n, D), labels ``y`` (n,), deterministically."""
    Xa = np.asarray(X, dtype=np.float32)
    ya = np.asarray(y)
    if Xa.ndim != 2 or ya.shape != (Xa.shape[0],):
        raise ValueError(f"X must be (n, D) and y (n,), got {Xa.shape} and {ya.shape}.")
    if not np.isfinite(Xa).all():
        raise ValueError("X contains NaN or inf.")
    classes, target = np.unique(ya, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"y needs at least two classes to train the feature network, got {len(classes)}.")
    gen = torch.Generator().manual_seed(int(random_state))
    layers = _init_layers([Xa.shape[1], *hidden, len(classes)], gen)
    with _one_thread(), torch.no_grad():
        opt = _FusedAdam([p for layer in layers for p in layer], lr=lr, weight_decay=weight_decay)
        weights, biases = opt.params[0::2], opt.params[1::2]
        weight_grads, bias_grads = opt.grads[0::2], opt.grads[1::2]
        Xt, yt = torch.as_tensor(Xa), torch.as_tensor(target.astype(np.int64))
        rows = torch.arange(batch_size)
        for _ in range(int(epochs)):
            order = torch.randperm(Xt.shape[0], generator=gen)
            # One gather per epoch: every mini-batch is then a view of contiguous rows, the same values in the
            # same layout as a gather of its own (so the same products), without a copy per step.
            X_epoch, y_epoch = Xt[order], yt[order]
            for start in range(0, Xt.shape[0], batch_size):
                batch = slice(start, start + batch_size)
                _backward(X_epoch[batch], y_epoch[batch], weights, biases, weight_grads, bias_grads, rows)
                opt.step()
        acc = float((_logits(Xt, weights, biases)[-1].argmax(1) == yt).double().mean())
    return DigitFeatures(tuple(w.clone() for w in weights), tuple(b.clone() for b in biases), classes, acc)


def _logits(h: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every layer's input and the logits: ``[h, relu(h W1^T + b1), ..., logits]`` (as ``torch.nn.Linear``)."""
    outputs = [h]
    for i, (w, b) in enumerate(zip(weights, biases)):
        h = torch.addmm(b, h, w.T)
        outputs.append(h.relu_() if i < len(weights) - 1 else h)
    return outputs


def _backward(X: torch.Tensor, y: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor],
              weight_grads: list[torch.Tensor], bias_grads: list[torch.Tensor], rows: torch.Tensor) -> None:
    """The gradient of the mean cross-entropy of the batch ``(X, y)``, written into ``weight_grads``, ``bias_grads``."""
    outputs = _logits(X, weights, biases)
    log_p = torch.log_softmax(outputs.pop(), 1)
    n = X.shape[0]
    d_log_p = torch.zeros_like(log_p)
    d_log_p[rows[:n], y] = -(torch.ones((), dtype=log_p.dtype) / n)  # float32 arithmetic, as nll_loss's backward
    g = torch._log_softmax_backward_data(d_log_p, log_p, 1, log_p.dtype)
    for layer in range(len(weights) - 1, -1, -1):
        h = outputs[layer]
        torch.mm(g.T, h, out=weight_grads[layer])
        torch.sum(g, 0, out=bias_grads[layer])
        if layer:
            g = torch.ops.aten.threshold_backward(g @ weights[layer], h, 0)


def digit_features(X: ArrayLike, y: ArrayLike, *, random_state: int = 0, **options: object) -> DigitFeatures:
    """:func:`train_digit_features` on ``(X, y)``, trained once per process for the same data and settings."""
    Xa = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    ya = np.ascontiguousarray(np.asarray(y))
    digest = hashlib.sha256()
    for part in (Xa.tobytes(), str(Xa.shape).encode(), ya.tobytes(), str(ya.dtype).encode(),
                 repr((random_state, sorted(options.items()))).encode()):
        digest.update(part)
    key = digest.hexdigest()
    if key not in _TRAINED:
        if len(_TRAINED) >= _MAX_TRAINED:
            _TRAINED.pop(next(iter(_TRAINED)))
        _TRAINED[key] = train_digit_features(Xa, ya, random_state=random_state, **options)
    return _TRAINED[key]
