"""LeNet-5 training step on the naive backend next to a hand-written NumPy im2col LeNet.

One process, side by side, as JSON (benchmarks/README.md: performance claims live
here, never as timing assertions in tests). Both sides train the same network
from the same weights on the same batch, float32, channels-last:
``s4tf.models.LeNet()`` (conv 5x5x6 "same" + ReLU, average pool 2, conv 5x5x16
"valid" + ReLU, average pool 2, dense 400-120-84-10) with
``s4tf.softmax_cross_entropy`` and ``optimizers.SGD``, against
:class:`NumPyLeNet`, the same step written by hand the way a careful NumPy
programmer would: im2col as one strided-view copy and one GEMM per
convolution, the forward's columns kept for the filter gradient, col2im as one
GEMM and one strided add per window offset, pools as strided slices, SGD in place.

The two step functions take turns (:mod:`side_by_side`), so both see the same
background load; each run reports the median step time of each side and their
throughput ratio (s4tf / NumPy; above 1 means s4tf is faster). ``--runs``
repeats that, and ``ratio_range`` gives the spread.

BLAS threads: both sides run on NumPy's OpenBLAS, so they share one setting,
``OPENBLAS_NUM_THREADS`` (``--threads`` sets it before NumPy loads; the JSON
records it).

Run: ``python benchmarks/lenet_naive.py [--batch 128] [--steps 20] [--runs 3] [--threads 1]``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import arguments, blas_threads, compare  # noqa: E402

BLAS_THREADS = blas_threads(sys.argv)

import json  # noqa: E402  (OPENBLAS_NUM_THREADS must be set before NumPy loads)

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

import s4tf  # noqa: E402

LEARNING_RATE = 0.01


def _im2col(x, size, padding):
    """``(N * H' * W', size * size * C)`` columns of ``x`` (NHWC), offset-major like HWIO."""
    if padding:
        x = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    windows = sliding_window_view(x, (size, size), axis=(1, 2))  # (N, H', W', C, kh, kw)
    n, h, w = windows.shape[:3]
    cols = np.ascontiguousarray(windows.transpose(0, 1, 2, 4, 5, 3))
    return cols.reshape(n * h * w, -1), (n, h, w)


def _col2im(dcols, out_shape, input_shape, size, padding):
    """Adjoint of :func:`_im2col`: each column added back at its window offset."""
    n, h, w = out_shape
    height, width, channels = input_shape[1] + 2 * padding, input_shape[2] + 2 * padding, input_shape[3]
    dx = np.zeros((n, height, width, channels), dtype=dcols.dtype)
    dcols = dcols.reshape(n, h, w, size, size, channels)
    for i in range(size):
        for j in range(size):
            dx[:, i:i + h, j:j + w, :] += dcols[:, :, :, i, j, :]
    if padding:
        dx = dx[:, padding:-padding, padding:-padding, :]
    return dx


def _pool(x):
    # Four strided slices: about five times faster than reshape(...).mean(axis=(2, 4)).
    return (x[:, ::2, ::2] + x[:, 1::2, ::2] + x[:, ::2, 1::2] + x[:, 1::2, 1::2]) * 0.25


def _unpool(g):
    n, h, w, c = g.shape
    return np.broadcast_to((g * 0.25)[:, :, None, :, None, :], (n, h, 2, w, 2, c)).reshape(
        n, 2 * h, 2 * w, c)


class NumPyLeNet:
    """LeNet-5's training step in plain NumPy: forward, hand-derived backward, SGD in place.

    ``weights`` maps ``conv1, b1, conv2, b2, fc1, b3, fc2, b4, fc3, b5`` to
    float32 arrays (HWIO filters, ``(in, out)`` dense weights).
    """

    def __init__(self, weights: dict) -> None:
        self.p = {name: np.array(value, dtype=np.float32) for name, value in weights.items()}

    def step(self, x, labels) -> float:
        p = self.p
        n = x.shape[0]
        cols1, shape1 = _im2col(x, 5, 2)
        z1 = (cols1 @ p["conv1"].reshape(-1, 6) + p["b1"]).reshape(*shape1, 6)
        a1 = np.maximum(z1, 0)
        s1 = _pool(a1)
        cols2, shape2 = _im2col(s1, 5, 0)
        z2 = (cols2 @ p["conv2"].reshape(-1, 16) + p["b2"]).reshape(*shape2, 16)
        a2 = np.maximum(z2, 0)
        s2 = _pool(a2).reshape(n, -1)
        z3 = s2 @ p["fc1"] + p["b3"]
        a3 = np.maximum(z3, 0)
        z4 = a3 @ p["fc2"] + p["b4"]
        a4 = np.maximum(z4, 0)
        logits = a4 @ p["fc3"] + p["b5"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[np.arange(n), labels].mean()

        d = np.exp(log_probs)
        d[np.arange(n), labels] -= 1
        d /= n
        grads = {"fc3": a4.T @ d, "b5": d.sum(axis=0)}
        d = (d @ p["fc3"].T) * (z4 > 0)
        grads.update(fc2=a3.T @ d, b4=d.sum(axis=0))
        d = (d @ p["fc2"].T) * (z3 > 0)
        grads.update(fc1=s2.T @ d, b3=d.sum(axis=0))
        d = _unpool((d @ p["fc1"].T).reshape(n, 5, 5, 16)) * (z2 > 0)
        d2 = d.reshape(-1, 16)
        grads.update(conv2=(cols2.T @ d2).reshape(p["conv2"].shape), b2=d2.sum(axis=0))
        d = _col2im(d2 @ p["conv2"].reshape(-1, 16).T, shape2, s1.shape, 5, 0)
        d1 = (_unpool(d) * (z1 > 0)).reshape(-1, 6)
        grads.update(conv1=(cols1.T @ d1).reshape(p["conv1"].shape), b1=d1.sum(axis=0))
        for name, grad in grads.items():
            p[name] -= LEARNING_RATE * grad
        return float(loss)


def _weights_of(model) -> dict:
    return {
        "conv1": model.conv1.filter.numpy(), "b1": model.conv1.bias.numpy(),
        "conv2": model.conv2.filter.numpy(), "b2": model.conv2.bias.numpy(),
        "fc1": model.fc1.weight.numpy(), "b3": model.fc1.bias.numpy(),
        "fc2": model.fc2.weight.numpy(), "b4": model.fc2.bias.numpy(),
        "fc3": model.fc3.weight.numpy(), "b5": model.fc3.bias.numpy(),
    }


class S4TFLeNet:
    """``s4tf.models.LeNet`` trained with ``value_with_gradient`` and ``optimizers.SGD``."""

    def __init__(self, model) -> None:
        self.model = model
        self.optimizer = s4tf.optimizers.SGD(model, learning_rate=LEARNING_RATE)

    def step(self, x, labels) -> float:
        loss, grads = s4tf.value_with_gradient(
            self.model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=labels))
        self.model = self.optimizer.update(self.model, grads)
        return float(loss)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], batch=128, steps=20,
                     threads="OPENBLAS_NUM_THREADS for both sides (read before NumPy loads)")
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(args.batch, 28, 28, 1)).astype(np.float32)
    labels = rng.integers(0, 10, size=args.batch).astype(np.int32)
    s4tf.random.seed(0)
    with s4tf.backend("naive"):
        model = s4tf.models.LeNet()
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
    reference = NumPyLeNet(_weights_of(model))
    mine = S4TFLeNet(model)
    # Same weights, same batch: the first steps' losses agree, so both do the same work.
    first = {"s4tf": mine.step(x, y), "numpy": reference.step(images, labels)}
    timings = compare(lambda: mine.step(x, y), lambda: reference.step(images, labels),
                      steps=args.steps, runs=args.runs)
    print(json.dumps({
        "benchmark": "lenet_naive_step",
        "peer": "hand-written NumPy im2col LeNet-5 (NumPyLeNet)",
        "batch": args.batch,
        "steps_per_run": args.steps,
        "openblas_threads": BLAS_THREADS,
        "numpy": np.__version__,
        "first_loss": {name: round(value, 5) for name, value in first.items()},
        **timings,
        "ratio_means": "examples/s of s4tf naive / examples/s of the peer",
    }, indent=2))


if __name__ == "__main__":
    main()
