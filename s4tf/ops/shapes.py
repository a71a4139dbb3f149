"""Shape primitives: reshape and transpose, and the functions built on them.

Broadcasting lives with its transpose, summing over axes
(:mod:`s4tf.ops.broadcasting`); joining and cutting along an axis (concat,
stack, split, pad), whose pullbacks slice, in :mod:`s4tf.ops.joining`.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from ..tensor import Tensor
from .primitive import primitive
from .tracer import Tracer

__all__ = ["expand_dims", "reshape", "shape_of", "squeeze", "transpose"]


def shape_of(value) -> tuple[int, ...]:
    """The shape of a Tensor (or tracer); ``()`` for a Python number."""
    # Asked several times per op and per derivative rule, so without the properties'
    # frames: a tracer's shape is its innermost primal's (a float's is ()), unless a
    # batch tracer (s4tf.vmap) on the way hides its batch axis.
    if type(value) is Tensor:  # the common case, without the isinstance chain
        return tuple(value._data.shape)
    while isinstance(value, Tracer):
        if value.hides_axis:
            return value.shape
        value = value._primal
    if isinstance(value, Tensor):
        return tuple(value._data.shape)
    return np.shape(value)


def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


def move_axis_to_front(x, axis):
    """``x`` with its axis ``axis`` moved to the front (the batch axis of a batching rule).

    ``axis`` None or 0 returns ``x`` itself: nothing moves unless it must.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import move_axis_to_front
    >>> move_axis_to_front(s4tf.zeros([2, 3, 4]), 2).shape
    (4, 2, 3)
    """
    if not axis:
        return x
    rank = len(shape_of(x))
    return _transpose(x, perm=(axis, *(i for i in range(rank) if i != axis)))


# Batching rules (s4tf.vmap): the batch goes in front; a permutation or a new shape
# of the example is one of the whole batch with the batch axis kept first.
def _reshape_batch(args, dims, *, shape):
    x = move_axis_to_front(args[0], dims[0])
    return _reshape(x, shape=(shape_of(x)[0], *shape)), 0


def _transpose_batch(args, dims, *, perm):
    d = dims[0]
    return _transpose(args[0], perm=(d, *(p + (p >= d) for p in perm))), 0


_reshape = primitive("reshape",
                     vjp=(lambda g, x, out, shape: _reshape(g, shape=shape_of(x)),),
                     jvp=(lambda t, x, out, shape: _reshape(t, shape=shape),),
                     batch=_reshape_batch)
_transpose = primitive("transpose",
                       vjp=(lambda g, x, out, perm: _transpose(g, perm=_inverse(perm)),),
                       jvp=(lambda t, x, out, perm: _transpose(t, perm=perm),),
                       batch=_transpose_batch)


def _dimension(n):
    # A JAX symbolic dimension (the batch axis of an exported function) stays symbolic;
    # JAX checks it against the others. JAX is loaded whenever one exists.
    jax_export = sys.modules.get("jax.export")
    if jax_export is not None and jax_export.is_symbolic_dim(n):
        return n
    return int(n)


def _resolve_shape(shape, size):
    shape = tuple(_dimension(n) for n in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: only one axis may be -1; got {shape}.")
    known = 1
    for n in shape:
        if n != -1:
            known *= n
    if -1 in shape:
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape {size} elements into shape {shape}.")
        shape = tuple(size // known if n == -1 else n for n in shape)
    elif known != size:
        raise ValueError(
            f"reshape: cannot reshape {size} elements into shape {shape} ({known} elements); "
            "the element count must stay the same (one axis may be -1)."
        )
    return shape


def reshape(x, shape):
    """``x`` with a new shape; one axis may be -1.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.reshape(s4tf.arange(6), (2, -1)).shape
    (2, 3)
    """
    current = shape_of(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(current)
    shape = _resolve_shape(shape, size)
    if shape == current:
        return x
    return _reshape(x, shape=shape)


def transpose(x, perm=None):
    """Permute the axes of ``x`` (reverse them when ``perm`` is None).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.transpose(s4tf.zeros([2, 3, 4]), (2, 0, 1)).shape
    (4, 2, 3)
    """
    rank = len(shape_of(x))
    perm = tuple(reversed(range(rank))) if perm is None else tuple(int(p) % max(rank, 1) for p in perm)
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"transpose: {perm} is not a permutation of the {rank} axes of shape {shape_of(x)}.")
    if perm == tuple(range(rank)):
        return x
    return _transpose(x, perm=perm)


def expand_dims(x, axis):
    """``x`` with a new axis of size 1 at ``axis``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.expand_dims(s4tf.zeros([3]), 0).shape
    (1, 3)
    """
    shape = list(shape_of(x))
    axis = int(axis)
    if axis < 0:
        axis += len(shape) + 1
    shape.insert(axis, 1)
    return _reshape(x, shape=tuple(shape))


def squeeze(x, axis=None):
    """``x`` without axes of size 1 (only ``axis`` when given).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.squeeze(s4tf.zeros([1, 3, 1])).shape
    (3,)
    """
    shape = shape_of(x)
    if axis is None:
        axes = {i for i, n in enumerate(shape) if n == 1}
    else:
        axes = {int(a) % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)}
        for a in axes:
            if shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} of shape {shape} has size {shape[a]}, not 1.")
    return reshape(x, tuple(n for i, n in enumerate(shape) if i not in axes))
