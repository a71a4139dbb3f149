"""Softmax, log-softmax and log-sum-exp, stable for large inputs.

Composites of primitives: their derivatives come from the primitives' rules.
"""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..tensor import Tensor
from .elementwise import cast, exp, log
from .reductions import normalize_axes, reduce_max, reduce_sum
from .shapes import shape_of, squeeze
from .tracer import strip

__all__ = ["log_softmax", "reduce_logsumexp", "softmax"]


def _floating(x):
    """Int and bool tensors as float32: the dtype rule of ``exp`` and every floating-valued op."""
    if isinstance(x, Tensor) and not x.dtype.is_floating:
        return cast(x, dtype=_dtypes.float32)
    return x


def reduce_logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis))`` without overflow.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.reduce_logsumexp(s4tf.Tensor([1000.0, 1000.0])).item(), 3)
    1000.693
    """
    x = _floating(x)
    axes = normalize_axes(axis, len(shape_of(x)))
    # The shift is a constant: its derivative cancels, so it need not be traced.
    shift = strip(reduce_max(x, axis=axes, keepdims=True))
    out = log(reduce_sum(exp(x - shift), axis=axes, keepdims=True)) + shift
    return out if keepdims else squeeze(out, axes)


def log_softmax(x, axis=-1):
    """``x - logsumexp(x, axis)``: log-probabilities.

    Examples
    --------
    >>> import s4tf
    >>> [round(v, 4) for v in s4tf.log_softmax(s4tf.Tensor([0.0, 0.0])).tolist()]
    [-0.6931, -0.6931]
    """
    x = _floating(x)
    return x - reduce_logsumexp(x, axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, shifted for stability.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.softmax(s4tf.Tensor([0.0, 0.0])).tolist()
    [0.5, 0.5]
    """
    x = _floating(x)
    axes = normalize_axes(axis, len(shape_of(x)))
    e = exp(x - strip(reduce_max(x, axis=axes, keepdims=True)))
    return e / reduce_sum(e, axis=axes, keepdims=True)
