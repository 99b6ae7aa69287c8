"""A small digit classifier whose hidden layer gives the features of the Fréchet distance.

The Fréchet Inception Distance compares generated and real images in the feature
space of a network trained on real images. Inception needs a download; for
28 x 28 digits a multilayer perceptron (``D -> 256 -> 64 -> classes``, ReLU)
trained for a few seconds on CPU is enough: its 64 hidden units (the layer before
the classifier) separate the classes and respond to strokes, so blur, noise and
class mixtures all move the feature distribution. Train it on real digits that the
generative model never saw (held-out digits); :func:`digit_features` keeps trained
networks in memory, keyed by the training data and settings, so repeated reports
do not retrain.

Training is deterministic: the weights are initialised and the mini-batches
shuffled from a ``torch.Generator`` seeded by ``random_state``; it runs in float32
on the CPU on one thread, whatever ``torch.get_num_threads()`` says: matrix products
of another thread count round differently, and over the training's steps that moves
the Fréchet distances in their third or fourth digit, so a report would depend on how
busy the machine was when it was made; mini-batches of 64 gain little from a second
thread, which spin-waits when another process holds the second core. The features are
evaluated on one thread too.

The optimiser is Adam written out in a few tensor operations (:class:`_Adam`),
not ``torch.optim.Adam``: constructing any ``torch.optim`` optimiser imports
``torch._dynamo``, a cost of the order of the training itself that every
``kppca sample --report`` would pay, and its ``foreach=False`` path does not avoid
it. The update is the same arithmetic as ``torch.optim.Adam``'s single-tensor path
(L2 weight decay added to the gradient), in the same order, so the trained weights
are bitwise those that ``torch.optim.Adam`` gives (``tests/metrics/test_frechet.py``
checks it).
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


def _init_layers(sizes: list[int], gen: torch.Generator) -> list[torch.nn.Linear]:
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layer = torch.nn.Linear(fan_in, fan_out)
        bound = (6.0 / fan_in) ** 0.5  # He-uniform: keeps ReLU activations at unit scale
        with torch.no_grad():
            layer.weight.copy_((torch.rand((fan_out, fan_in), generator=gen) * 2 - 1) * bound)
            layer.bias.zero_()
        layers.append(layer)
    return layers


class _Adam:
    """Adam on ``params``, updated in place from their gradients: ``torch.optim.Adam``'s arithmetic, written out.

    The parameters and their gradients are views into one flat buffer each (the backward pass
    accumulates into ``.grad`` in place), so a step is eight elementwise operations on the whole
    parameter vector instead of eight per tensor, with no temporaries; every element goes through the
    same operations as in ``torch.optim.Adam``'s single-tensor update (L2 weight decay added to the gradient), so the
    result is the same bit for bit (see the module docstring for why it is written out).
    """

    def __init__(self, params: list[torch.Tensor], *, lr: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        sizes = [p.numel() for p in params]
        self.flat = torch.cat([p.detach().reshape(-1) for p in params])
        self.grad = torch.zeros_like(self.flat)
        self.params = [v.view(p.shape).requires_grad_() for v, p in zip(self.flat.split(sizes), params)]
        self._grads = [g.view(p.shape) for g, p in zip(self.grad.split(sizes), params)]
        for p, g in zip(self.params, self._grads):
            p.grad = g
        self.exp_avg, self.exp_avg_sq = torch.zeros_like(self.flat), torch.zeros_like(self.flat)
        self._denom = torch.empty_like(self.flat)
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.steps = 0

    def zero_grad(self) -> None:
        self.grad.zero_()

    def step(self) -> None:
        beta1, beta2 = self.betas
        for p, g in zip(self.params, self._grads):
            if p.grad is not g:  # the backward pass replaced .grad rather than accumulating into it
                g.copy_(p.grad)
                p.grad = g
        self.steps += 1
        step_size = self.lr / (1 - beta1**self.steps)
        bias_correction2_sqrt = (1 - beta2**self.steps) ** 0.5
        with torch.no_grad():
            # In place, into buffers allocated once: at this size a fresh temporary costs more than
            # the arithmetic on it.
            grad = self.grad.add_(self.flat, alpha=self.weight_decay) if self.weight_decay != 0 else self.grad
            self.exp_avg.lerp_(grad, 1 - beta1)
            self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = torch.sqrt(self.exp_avg_sq, out=self._denom).div_(bias_correction2_sqrt).add_(self.eps)
            self.flat.addcdiv_(self.exp_avg, denom, value=-step_size)


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
    """Train the feature network on real inputs ``X`` (n, D) with labels ``y`` (n,).

    Adam with mini-batches and a small weight decay, on one thread; deterministic for a given
    ``random_state`` (see the module docstring; the same weights as ``torch.optim.Adam``).
    """
    with _one_thread():
        return _train(X, y, hidden=hidden, epochs=epochs, batch_size=batch_size, lr=lr,
                      weight_decay=weight_decay, random_state=random_state)


def _train(X: ArrayLike, y: ArrayLike, *, hidden: tuple[int, ...], epochs: int, batch_size: int, lr: float,
           weight_decay: float, random_state: int) -> DigitFeatures:
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
    opt = _Adam([p for layer in layers for p in (layer.weight, layer.bias)], lr=lr, weight_decay=weight_decay)
    weights, biases = opt.params[0::2], opt.params[1::2]
    Xt, yt = torch.as_tensor(Xa), torch.as_tensor(target.astype(np.int64))

    def forward(h: torch.Tensor) -> torch.Tensor:
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = torch.nn.functional.linear(h, w, b)  # what torch.nn.Linear computes
            if i < len(weights) - 1:
                h = torch.relu(h)
        return h

    for _ in range(int(epochs)):
        order = torch.randperm(Xt.shape[0], generator=gen)
        # One gather per epoch: every mini-batch is then a view of contiguous rows, the same values in the
        # same layout as a gather of its own (so the same products), without a copy per step.
        X_epoch, y_epoch = Xt[order], yt[order]
        for start in range(0, Xt.shape[0], batch_size):
            opt.zero_grad()
            batch = slice(start, start + batch_size)
            torch.nn.functional.cross_entropy(forward(X_epoch[batch]), y_epoch[batch]).backward()
            opt.step()
    with torch.no_grad():
        acc = float((forward(Xt).argmax(1) == yt).double().mean())
    return DigitFeatures(
        tuple(w.detach().clone() for w in weights),
        tuple(b.detach().clone() for b in biases),
        classes,
        acc,
    )


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
