"""Broadcasting and its transpose, summing over axes.

``broadcast_to`` and ``reduce_sum`` are each other's derivative (the pullback of
a broadcast sums over the broadcast axes; that of a sum broadcasts back), so the
two primitives are defined together here. The differentiation engines use
:func:`sum_to_shape` to undo NumPy broadcasting on a cotangent and
:func:`broadcast_to` to widen a tangent.
"""

from __future__ import annotations

import numpy as np

from .primitive import GenericRule, primitive
from .shapes import _reshape, move_axis_to_front, shape_of

__all__ = ["broadcast_to", "kept_shape", "reduce_sum", "reduction_batch", "sum_to_shape",
           "unreduce"]


def kept_shape(shape, axes):
    """``shape`` with the reduced ``axes`` kept as size 1 (a ``keepdims=True`` result's shape)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def unreduce(g, x, axis, keepdims):
    """A reduction's cotangent broadcast back to the input's shape."""
    shape = shape_of(x)
    # The shapes are known to fit, so the primitives are called without the
    # user-facing functions' checks (a measurable share of a small op's backward).
    # Broadcasting aligns trailing axes: g needs its reduced axes back as 1s only
    # when one of them is not leading (a full reduction's scalar broadcasts as is).
    if not keepdims and axis != tuple(range(len(axis))):
        g = _reshape(g, shape=kept_shape(shape, axis))
    return g if shape_of(g) == shape else broadcast_to_(g, shape=shape)


def _broadcast_batch(args, dims, *, shape):
    # The example's axes align with the target's last ones: the batch goes in front,
    # with 1s between it and the example for the axes broadcasting adds.
    x = move_axis_to_front(args[0], dims[0])
    size, example = shape_of(x)[0], shape_of(x)[1:]
    if len(example) < len(shape):
        x = _reshape(x, shape=(size, *(1,) * (len(shape) - len(example)), *example))
    return broadcast_to_(x, shape=(size, *shape)), 0


def _reduce_batch(primitive, args, dims, *, axis, keepdims):
    """Batching rule of reductions over ``axis``: the same reduction, the batch axis skipped."""
    d = dims[0]
    out = primitive(args[0], axis=tuple(a + (a >= d) for a in axis), keepdims=keepdims)
    return out, d if keepdims else d - sum(a < d for a in axis)


# Shared with reduce_max and reduce_min (s4tf.ops.reductions); s4tf.ops.batching_helpers
# lists it with the other rules written for many primitives.
reduction_batch = GenericRule(_reduce_batch)

broadcast_to_ = primitive("broadcast_to",
                          vjp=(lambda g, x, out, shape: sum_to_shape(g, shape_of(x)),),
                          jvp=(lambda t, x, out, shape: broadcast_to_(t, shape=shape),),
                          batch=_broadcast_batch)
reduce_sum = primitive(
    "reduce_sum",
    vjp=(lambda g, x, out, axis, keepdims: unreduce(g, x, axis, keepdims),),
    jvp=(lambda t, x, out, axis, keepdims: reduce_sum(t, axis=axis, keepdims=keepdims),),
    batch=reduction_batch,
    signature="x, *, axis, keepdims",
    doc="""The sum of ``x`` over the axes ``axis`` (what ``x.sum()`` calls).

    Parameters
    ----------
    x : Tensor
    axis : tuple of int
        Non-negative and sorted (``x.sum(axis=...)`` and :func:`s4tf.ops.sum`
        normalise any axis argument to this).
    keepdims : bool
        Whether the summed axes stay, as size 1.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops import reduce_sum
    >>> reduce_sum(s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]]), axis=(0,), keepdims=False).tolist()
    [4.0, 6.0]
    """,
)


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


def sum_to_shape(g, shape):
    """Sum ``g`` down to ``shape``, undoing NumPy broadcasting.

    Called by the backward pass on every broadcast operand (a bias), so it
    calls the primitives directly: the shapes are known to fit. Axes that
    broadcasting added with size 1 (a batch of one) need no sum, only a reshape.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.ops.sum_to_shape(s4tf.ones([4, 2, 3]), (2, 1)).tolist()
    [[12.0], [12.0]]
    """
    g_shape = shape_of(g)
    shape = tuple(shape)
    if g_shape == shape:
        return g
    lead = len(g_shape) - len(shape)
    axes = tuple(i for i in range(lead) if g_shape[i] != 1) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g_shape[lead + i] != 1
    )
    if axes:
        g = reduce_sum(g, axis=axes, keepdims=True)
    return g if shape_of(g) == shape else _reshape(g, shape=shape)
