"""Functions that make new tensors on the current backend."""

from __future__ import annotations

import numpy as np

from . import dtypes as _dtypes
from ._sizes import shape as _shape
from ._sizes import size as _size
from .tensor import Tensor, from_numpy

__all__ = ["arange", "eye", "full", "ones", "ones_like", "zeros", "zeros_like"]


def full(shape, value, dtype=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.full([2], 7.0).tolist()
    [7.0, 7.0]
    """
    return _full(_shape(shape, "full"), value, dtype)


def _full(shape: tuple[int, ...], value, dtype) -> Tensor:
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.as_dtype(type(value))
    return from_numpy(np.full(shape, value, dtype=dtype.numpy), dtype)


def zeros(shape, dtype=_dtypes.float32) -> Tensor:
    """A tensor of zeros.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros([2, 3]).shape
    (2, 3)
    """
    return _full(_shape(shape, "zeros"), 0, _dtypes.as_dtype(dtype))


def ones(shape, dtype=_dtypes.float32) -> Tensor:
    """A tensor of ones.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.ones([2]).tolist()
    [1.0, 1.0]
    """
    return _full(_shape(shape, "ones"), 1, _dtypes.as_dtype(dtype))


def _like(t, value, dtype):
    if not isinstance(t, Tensor):
        return 0.0 * value if isinstance(t, float | int) else full(np.shape(t), value, dtype)
    dtype = _dtypes.as_dtype(dtype) if dtype is not None else t.dtype
    backend = t._backend
    if backend.lazy or not all(isinstance(n, (int, np.integer)) for n in t.shape):
        # A symbolic size (the batch axis of s4tf.export, on the jax backend) fits no host
        # array: the backend broadcasts the scalar, as jnp.full does. On a lazy backend a
        # broadcast node also beats a host array: the array would be uploaded at every
        # step (megabytes for the zeros a slice's cotangent is added into) and enter the
        # compiled step as a buffer XLA must copy before writing into it.
        data = backend.kernels.broadcast_to(backend.scalar(value, dtype), shape=t.shape)
        return Tensor._wrap(data, backend)
    return from_numpy(np.full(t.shape, value, dtype=dtype.numpy), dtype, like=t)


def zeros_like(t, dtype=None) -> Tensor:
    """Zeros of ``t``'s shape, dtype and backend (a constant, even for traced ``t``).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.zeros_like(s4tf.ones([2], dtype=s4tf.int32)).tolist()
    [0, 0]
    """
    return _like(t, 0, dtype)


def ones_like(t, dtype=None) -> Tensor:
    """Ones of ``t``'s shape, dtype and backend.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.ones_like(s4tf.zeros([2])).tolist()
    [1.0, 1.0]
    """
    return _like(t, 1, dtype) if isinstance(t, Tensor) else 1.0


def arange(start, stop=None, step=1, dtype=None) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; int32 for int arguments.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.arange(3).tolist(), s4tf.arange(0.0, 1.0, 0.5).tolist()
    ([0, 1, 2], [0.0, 0.5])
    """
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        is_int = all(isinstance(v, int | np.integer) for v in (start, stop, step))
        dtype = _dtypes.int32 if is_int else _dtypes.float32
    dtype = _dtypes.as_dtype(dtype)
    return from_numpy(np.arange(start, stop, step, dtype=dtype.numpy), dtype)


def eye(n: int, m: int | None = None, dtype=_dtypes.float32) -> Tensor:
    """The identity matrix (``n`` by ``m``).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.eye(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    dtype = _dtypes.as_dtype(dtype)
    n = _size(n, "n", "eye", 0)
    m = None if m is None else _size(m, "m", "eye", 0)
    return from_numpy(np.eye(n, m, dtype=dtype.numpy), dtype)
