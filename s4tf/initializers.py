"""Parameter initializers: functions ``(shape, dtype=float32, seed=None) -> Tensor``.

The variance-scaling family uses TensorFlow's fans: for a shape
``(..., fan_in, fan_out)`` the receptive field (the product of the leading
axes, e.g. a convolution's ``h * w``) multiplies both fans. The ``*_normal``
variants draw from a normal truncated at two standard deviations whose
standard deviation is corrected for the truncation, as S4TF and Keras do.
Numbers come from :mod:`s4tf.random`, so ``seed=`` gives the same values on
every backend.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as _dtypes
from . import random as _random
from ._sizes import shape as _shape
from .tensor import Tensor, from_numpy

__all__ = [
    "constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal",
    "lecun_uniform", "ones", "orthogonal", "truncated_normal", "zeros",
]

# Standard deviation of a standard normal truncated to [-2, 2].
_TRUNCATED_STDDEV = 0.87962566103423978


def _fans(shape) -> tuple[int, int]:
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _tensor(values: np.ndarray, dtype) -> Tensor:
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"initializers make floating tensors; got dtype {dtype}. Pass a float dtype.")
    return from_numpy(values.astype(dtype.numpy), dtype)


def _truncated(shape, stddev, mean, seed) -> np.ndarray:
    rng = _random.generator(seed)
    values = rng.standard_normal(shape)
    # Redraw the (about 4.6%) values outside two standard deviations until none remain.
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2.0
    return values * stddev + mean


def _uniform(limit, shape, dtype, seed) -> Tensor:
    return _tensor(_random.generator(seed).uniform(-limit, limit, size=shape), dtype)


def glorot_uniform(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Uniform on ``[-l, l]`` with ``l = sqrt(6 / (fan_in + fan_out))`` (S4TF's default weights).

    Examples
    --------
    >>> import s4tf
    >>> w = s4tf.initializers.glorot_uniform([300, 200], seed=0)
    >>> bool(abs(w).max() <= (6 / 500) ** 0.5)
    True
    """
    shape = _shape(shape, "glorot_uniform")
    fan_in, fan_out = _fans(shape)
    return _uniform(math.sqrt(6.0 / (fan_in + fan_out)), shape, dtype, seed)


def glorot_normal(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Truncated normal with standard deviation ``sqrt(2 / (fan_in + fan_out))``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.glorot_normal([3, 4], seed=0).shape
    (3, 4)
    """
    shape = _shape(shape, "glorot_normal")
    fan_in, fan_out = _fans(shape)
    stddev = math.sqrt(2.0 / (fan_in + fan_out)) / _TRUNCATED_STDDEV
    return _tensor(_truncated(shape, stddev, 0.0, seed), dtype)


def he_uniform(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Uniform on ``[-l, l]`` with ``l = sqrt(6 / fan_in)`` (for ReLU networks).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.he_uniform([3, 3, 8, 16], seed=0).shape
    (3, 3, 8, 16)
    """
    shape = _shape(shape, "he_uniform")
    fan_in, _ = _fans(shape)
    return _uniform(math.sqrt(6.0 / fan_in), shape, dtype, seed)


def he_normal(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Truncated normal with standard deviation ``sqrt(2 / fan_in)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.he_normal([4, 2], seed=0).shape
    (4, 2)
    """
    shape = _shape(shape, "he_normal")
    fan_in, _ = _fans(shape)
    return _tensor(_truncated(shape, math.sqrt(2.0 / fan_in) / _TRUNCATED_STDDEV, 0.0, seed), dtype)


def lecun_uniform(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Uniform on ``[-l, l]`` with ``l = sqrt(3 / fan_in)`` (for SELU networks).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.lecun_uniform([4, 2], seed=0).dtype
    float32
    """
    shape = _shape(shape, "lecun_uniform")
    fan_in, _ = _fans(shape)
    return _uniform(math.sqrt(3.0 / fan_in), shape, dtype, seed)


def lecun_normal(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """Truncated normal with standard deviation ``sqrt(1 / fan_in)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.lecun_normal([4, 2], dtype=s4tf.float64, seed=0).dtype
    float64
    """
    shape = _shape(shape, "lecun_normal")
    fan_in, _ = _fans(shape)
    return _tensor(_truncated(shape, math.sqrt(1.0 / fan_in) / _TRUNCATED_STDDEV, 0.0, seed), dtype)


def truncated_normal(shape, dtype=_dtypes.float32, seed=None, mean=0.0, stddev=1.0) -> Tensor:
    """Normal values redrawn until they lie within two ``stddev`` of ``mean``.

    Examples
    --------
    >>> import s4tf
    >>> t = s4tf.initializers.truncated_normal([1000], seed=0)
    >>> bool(abs(t).max() <= 2.0)
    True
    """
    return _tensor(_truncated(_shape(shape, "truncated_normal"), stddev, mean, seed), dtype)


def orthogonal(shape, dtype=_dtypes.float32, seed=None, gain=1.0) -> Tensor:
    """A (semi-)orthogonal matrix, reshaped to ``shape`` (Saxe et al. 2014).

    The shape is viewed as ``(prod(shape[:-1]), shape[-1])``; rows or columns,
    whichever are fewer, are orthonormal, times ``gain``.

    Examples
    --------
    >>> import s4tf, numpy as np
    >>> q = s4tf.initializers.orthogonal([4, 4], dtype=s4tf.float64, seed=0).numpy()
    >>> bool(np.allclose(q.T @ q, np.eye(4)))
    True
    """
    shape = _shape(shape, "orthogonal")
    if len(shape) < 2:
        raise ValueError(
            f"orthogonal: needs a shape of rank >= 2, got {shape}; use e.g. (fan_in, fan_out)."
        )
    rows, cols = math.prod(shape[:-1]), shape[-1]
    matrix = _random.generator(seed).standard_normal((max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(matrix)
    # Fix the signs so the result is uniformly distributed over orthogonal matrices.
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _tensor(gain * q.reshape(shape), dtype)


def zeros(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """All zeros (S4TF's default biases); ``seed`` is accepted for a uniform signature.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.zeros([2]).tolist()
    [0.0, 0.0]
    """
    return _tensor(np.zeros(_shape(shape, "zeros")), dtype)


def ones(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
    """All ones (normalization scales).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.ones([2]).tolist()
    [1.0, 1.0]
    """
    return _tensor(np.ones(_shape(shape, "ones")), dtype)


def constant(value):
    """An initializer filling every element with ``value``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.initializers.constant(0.5)([2]).tolist()
    [0.5, 0.5]
    """
    def initializer(shape, dtype=_dtypes.float32, seed=None) -> Tensor:
        return _tensor(np.full(_shape(shape, "constant"), value, dtype=np.float64), dtype)

    initializer.__name__ = f"constant({value!r})"
    return initializer
