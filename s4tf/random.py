"""Random tensors, reproducible on every backend.

Numbers are drawn on the host with NumPy's PCG64 generator and then moved to
the current backend, so a seed gives the same values on naive, cupy and xla.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from . import dtypes as _dtypes
from . import hooks
from ._sizes import shape as _shape
from .tensor import Tensor, from_numpy

__all__ = ["generator", "get_state", "normal", "randint", "seed", "set_state", "uniform"]

_generator = np.random.default_rng(0)


def seed(n: int) -> None:
    """Reset the global random stream.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.random.seed(0); a = s4tf.random.normal([2])
    >>> s4tf.random.seed(0); b = s4tf.random.normal([2])
    >>> a.tolist() == b.tolist()
    True
    """
    global _generator
    _generator = np.random.default_rng(int(n))


def generator(seed: int | None = None) -> np.random.Generator:
    """The NumPy generator for one draw: a fresh one for ``seed``, else the global one."""
    return _generator if seed is None else np.random.default_rng(int(seed))


def get_state() -> dict:
    """The global stream's state (for checkpoints that resume exactly)."""
    return _generator.bit_generator.state


def set_state(state: dict) -> None:
    """Restore a state from :func:`get_state`."""
    _generator.bit_generator.state = state


class _Batches(threading.local):
    """The vmap levels running in this thread, outermost first: ``(size, wrap)`` each."""

    levels: tuple = ()


_batches = _Batches()


# Shared with s4tf.vmap (s4tf/autodiff/vmap.py), not user API: left out of __all__.
@contextlib.contextmanager
def per_example(size: int, wrap):
    """Inside, every draw is made for ``size`` examples at once: each example its own numbers.

    :func:`s4tf.vmap` runs its function inside this: a draw of shape ``S``
    draws ``(size, *S)`` values (from the global stream, or the ``seed=``
    given) and ``wrap`` turns them into the batched value whose examples have
    shape ``S``. Nested vmaps draw ``(outer, ..., inner, *S)``.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.random.per_example(3, lambda t: t):  # no wrapping: see the whole draw
    ...     s4tf.random.normal([2], seed=0).shape
    (3, 2)
    """
    before = _batches.levels
    _batches.levels = (*before, (size, wrap))
    try:
        yield
    finally:
        _batches.levels = before


def _drawn(draw, shape, dtype, seed) -> Tensor:
    """The tensor of ``draw(shape)``'s host values in ``dtype``, on the current backend.

    Under :func:`per_example` the draw has the batch axes in front and is
    wrapped into one example's value of each level.
    """
    levels = _batches.levels
    if levels:
        shape = (*(size for size, _ in levels), *shape)

    def host_values():
        return draw(shape).astype(dtype.numpy)

    tensor = from_numpy(host_values(), dtype)
    if seed is None and hooks.on_draw is not None:
        # A captured step's recording (s4tf/capture): its replays draw again with host_values().
        hooks.on_draw(tensor, host_values)
    for _, wrap in levels:
        tensor = wrap(tensor)
    return tensor


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Normally distributed values.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.random.normal([2, 3], seed=1).shape
    (2, 3)
    """
    dtype = _dtypes.as_dtype(dtype)
    size = _shape(shape, "normal")
    return _drawn(lambda size: generator(seed).normal(mean, stddev, size=size), size, dtype, seed)


def uniform(shape, low=0.0, high=1.0, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Uniformly distributed values in ``[low, high)``.

    Examples
    --------
    >>> import s4tf
    >>> float(s4tf.random.uniform([100], seed=0).max()) < 1.0
    True
    """
    dtype = _dtypes.as_dtype(dtype)
    size = _shape(shape, "uniform")
    return _drawn(lambda size: generator(seed).uniform(low, high, size=size), size, dtype, seed)


def randint(low, high=None, shape=(), dtype=_dtypes.int32, seed=None) -> Tensor:
    """Random integers in ``[low, high)`` (``[0, low)`` when ``high`` is None).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.random.randint(0, 10, shape=[5], seed=0).dtype
    int32
    """
    if high is None:
        low, high = 0, low
    dtype = _dtypes.as_dtype(dtype)
    size = _shape(shape, "randint")
    return _drawn(lambda size: generator(seed).integers(low, high, size=size), size, dtype, seed)
