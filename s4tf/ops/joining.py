"""Joining and cutting along an axis: concat, stack, split and pad.

Their pullbacks slice the cotangent (``getitem``), so they sit above
:mod:`s4tf.ops.indexing`.
"""

from __future__ import annotations

from .batching_helpers import batch_size, broadcast_batch, move_axis_to_front
from .indexing import IndexAdd, getitem_
from .primitive import EachArgument, primitive
from .shapes import expand_dims, shape_of

__all__ = ["concat", "pad", "split", "stack"]


def _concat_key(i, xs, axis):
    """The slice of ``concat(xs, axis)`` that argument ``i`` fills."""
    start = 0
    for x in xs[:i]:
        start += shape_of(x)[axis]
    return (slice(None),) * axis + (slice(start, start + shape_of(xs[i])[axis]),)


def _unpad(g, paddings):
    key = tuple(slice(before, before + n) for (before, _), n in
                zip(paddings, _unpadded_shape(shape_of(g), paddings), strict=False))
    return getitem_(g, key=key)


def _unpadded_shape(shape, paddings):
    return tuple(n - before - after for n, (before, after) in zip(shape, paddings, strict=False))


def _concat_batch(args, dims, *, axis):
    # Every part needs the batch, in one place: the unbatched ones are broadcast to it.
    return concat_(*broadcast_batch(args, dims, batch_size(args, dims)), axis=axis + 1), 0


def _pad_batch(args, dims, *, paddings, value):
    x = move_axis_to_front(args[0], dims[0])
    return _pad(x, paddings=((0, 0), *paddings), value=value), 0


# Any number of arguments: argument i's cotangent is its slice of g; its tangent
# fills its slice of the output's, added in place into one buffer (IndexAdd).
concat_ = primitive(
    "concat",
    promote=True,
    vjp=EachArgument(lambda i, g, *xs, out, axis: getitem_(g, key=_concat_key(i, xs, axis))),
    jvp=EachArgument(lambda i, t, *xs, out, axis: IndexAdd(_concat_key(i, xs, axis), t)),
    batch=_concat_batch,
)
_pad = primitive("pad",
                 vjp=(lambda g, x, out, paddings, value: _unpad(g, paddings),),
                 jvp=(lambda t, x, out, paddings, value: _pad(t, paddings=paddings, value=0.0),),
                 batch=_pad_batch)


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
        parts.append(getitem_(x, key=(slice(None),) * axis + (slice(start, start + size),)))
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
