"""Random tensors, reproducible on every backend.

Numbers are drawn on the host with NumPy's PCG64 generator and then moved to
the current backend, so a seed gives the same values on naive, cupy and xla.
"""

from __future__ import annotations

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


def _drawn(draw, dtype, seed) -> Tensor:
    """The tensor of ``draw()``'s host values in ``dtype``, on the current backend."""
    def host_values():
        return draw().astype(dtype.numpy)

    tensor = from_numpy(host_values(), dtype)
    if seed is None and hooks.on_draw is not None:
        # A captured step's recording (s4tf/capture): its replays draw again with host_values().
        hooks.on_draw(tensor, host_values)
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
    return _drawn(lambda: generator(seed).normal(mean, stddev, size=size), dtype, seed)


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
    return _drawn(lambda: generator(seed).uniform(low, high, size=size), dtype, seed)


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
    return _drawn(lambda: generator(seed).integers(low, high, size=size), dtype, seed)
