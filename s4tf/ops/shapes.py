"""Shape primitives: reshape, transpose, broadcast, concatenate, pad (and helpers)."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .primitive import primitive

__all__ = ["broadcast_to", "concat", "expand_dims", "pad", "reshape", "shape_of", "split",
           "squeeze", "stack", "transpose"]


def shape_of(value) -> tuple[int, ...]:
    """The shape of a Tensor (or tracer); ``()`` for a Python number."""
    if isinstance(value, Tensor):
        return value.shape
    return np.shape(value)


def _inverse(perm):
    return tuple(int(i) for i in np.argsort(perm))


def _concat_vjp(g, *xs, out, axis):
    cotangents, start = [], 0
    for x in xs:
        size = shape_of(x)[axis]
        key = (slice(None),) * axis + (slice(start, start + size),)
        cotangents.append(_getitem(g, key=key))
        start += size
    return tuple(cotangents)


def _concat_jvp(tangents, *xs, out, axis):
    from ..creation import zeros_like

    return concat_(*[t if t is not None else zeros_like(x) for t, x in zip(tangents, xs, strict=False)], axis=axis)


def _unpad(g, paddings):
    key = tuple(slice(before, before + n) for (before, _), n in
                zip(paddings, _unpadded_shape(shape_of(g), paddings), strict=False))
    return _getitem(g, key=key)


def _unpadded_shape(shape, paddings):
    return tuple(n - before - after for n, (before, after) in zip(shape, paddings, strict=False))


def _getitem(x, key):
    from .indexing import getitem_

    return getitem_(x, key=key)


_reshape = primitive("reshape",
                     vjp=lambda g, x, out, shape: _reshape(g, shape=shape_of(x)),
                     jvp=lambda t, x, out, shape: _reshape(t, shape=shape))
_transpose = primitive("transpose",
                       vjp=lambda g, x, out, perm: _transpose(g, perm=_inverse(perm)),
                       jvp=lambda t, x, out, perm: _transpose(t, perm=perm))
broadcast_to_ = primitive("broadcast_to",
                          vjp=lambda g, x, out, shape: _sum_to(g, shape_of(x)),
                          jvp=lambda t, x, out, shape: broadcast_to_(t, shape=shape))
concat_ = primitive("concat", promote=True, vjp=_concat_vjp, jvp=_concat_jvp)
_pad = primitive("pad",
                 vjp=lambda g, x, out, paddings, value: _unpad(g, paddings),
                 jvp=lambda t, x, out, paddings, value: _pad(t, paddings=paddings, value=0.0))


def _sum_to(g, shape):
    from .reductions import sum_to_shape

    return sum_to_shape(g, shape)


def _resolve_shape(shape, size):
    shape = tuple(int(n) for n in shape)
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
    size = int(np.prod(current)) if current else 1
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


def broadcast_to(x, shape):
    """``x`` broadcast to ``shape`` (NumPy rules).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.broadcast_to(s4tf.ones([3]), (2, 3)).shape
    (2, 3)
    """
    shape = tuple(int(n) for n in shape)
    if shape_of(x) == shape:
        return x
    try:
        np.broadcast_shapes(shape_of(x), shape)
    except ValueError:
        raise ValueError(
            f"broadcast_to: cannot broadcast shape {shape_of(x)} to {shape}; axes must match "
            "or be 1 in the input."
        ) from None
    return broadcast_to_(x, shape=shape)


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


def concat(tensors, axis=0):
    """Join ``tensors`` along an existing ``axis``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.concat([s4tf.zeros([2, 3]), s4tf.ones([1, 3])], axis=0).shape
    (3, 3)
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concat needs at least one tensor.")
    rank = len(shape_of(tensors[0]))
    axis = int(axis) % max(rank, 1)
    shapes = [shape_of(t) for t in tensors]
    for s in shapes:
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0], strict=False)) if i != axis):
            raise ValueError(
                f"concat: shapes {shapes} differ outside axis {axis}; every tensor must have "
                "the same rank and the same sizes on the other axes."
            )
    if len(tensors) == 1:
        return tensors[0]
    return concat_(*tensors, axis=axis)


def stack(tensors, axis=0):
    """Join ``tensors`` of one shape along a new ``axis``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.stack([s4tf.zeros([3]), s4tf.ones([3])], axis=1).shape
    (3, 2)
    """
    tensors = list(tensors)
    shapes = {shape_of(t) for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack: all tensors need one shape; got {sorted(shapes)}.")
    rank = len(shapes.pop()) + 1
    axis = int(axis) % rank
    return concat([expand_dims(t, axis) for t in tensors], axis=axis)


def split(x, num_or_sizes, axis=0):
    """Split ``x`` along ``axis`` into equal parts or parts of the given sizes.

    Examples
    --------
    >>> import s4tf
    >>> [t.shape for t in s4tf.split(s4tf.zeros([6, 2]), [1, 5])]
    [(1, 2), (5, 2)]
    """
    shape = shape_of(x)
    axis = int(axis) % len(shape)
    n = shape[axis]
    if isinstance(num_or_sizes, int):
        if n % num_or_sizes:
            raise ValueError(f"split: axis {axis} of size {n} does not divide into {num_or_sizes} parts.")
        sizes = [n // num_or_sizes] * num_or_sizes
    else:
        sizes = [int(s) for s in num_or_sizes]
        if sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} add up to {sum(sizes)}, not the axis size {n}.")
    parts, start = [], 0
    for size in sizes:
        parts.append(_getitem(x, key=(slice(None),) * axis + (slice(start, start + size),)))
        start += size
    return parts


def pad(x, paddings, value=0.0):
    """Pad ``x`` with ``value``; ``paddings`` is one ``(before, after)`` pair per axis.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.pad(s4tf.ones([2]), [(1, 2)]).tolist()
    [0.0, 1.0, 1.0, 0.0, 0.0]
    """
    rank = len(shape_of(x))
    paddings = tuple((int(a), int(b)) for a, b in paddings)
    if len(paddings) != rank:
        raise ValueError(f"pad: give one (before, after) pair per axis: {rank} for shape {shape_of(x)}, got {len(paddings)}.")
    return _pad(x, paddings=paddings, value=float(value))
