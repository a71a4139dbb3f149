"""Reductions over axes: sum, max, min (and mean, variance built on them).

The ``reduce_sum`` primitive lives with ``broadcast_to``, its transpose
(:mod:`s4tf.ops.broadcasting`).
"""

from __future__ import annotations

import builtins

import numpy as np

from ..tensor import Tensor, from_numpy
from .broadcasting import broadcast_to_, kept_shape, reduce_sum, reduction_batch, unreduce
from .elementwise import cast, equal, mul
from .primitive import GenericRule, primitive
from .shapes import reshape, shape_of
from .tracer import innermost

__all__ = ["argmax", "argmin", "max", "mean", "min", "reduce_max", "reduce_min", "sum",
           "variance"]


def normalize_axes(axis, rank: int):
    """``axis`` as a sorted tuple of non-negative ints (None means every axis)."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < builtins.max(rank, 1):
            raise ValueError(
                f"axis {a} is out of range for a tensor of rank {rank}; "
                f"use an axis in [{-rank}, {rank - 1}]."
            )
        out.append(a % rank if rank else 0)
    return tuple(sorted(set(out)))


def _extremum_vjp(g, x, out, axis, keepdims):
    # S4TF's convention: ties inside a max/min split the derivative evenly.
    kept = out if keepdims else reshape(out, shape=kept_shape(shape_of(x), axis))
    mask = cast(equal(x, kept), dtype=x.dtype)
    count = reduce_sum(mask, axis=axis, keepdims=True)
    return unreduce(g, x, axis, keepdims) * mask / count


def _extremum_jvp(t, x, out, axis, keepdims):
    kept = out if keepdims else reshape(out, shape=kept_shape(shape_of(x), axis))
    mask = cast(equal(x, kept), dtype=x.dtype)
    weights = mask / reduce_sum(mask, axis=axis, keepdims=True)
    return reduce_sum(mul(t, weights), axis=axis, keepdims=keepdims)


_EXTREMUM_DOC = """The {which} of ``x`` over the axes ``axis`` (what ``x.{method}()`` calls).

    Ties share the derivative equally.

    Parameters
    ----------
    x : Tensor
    axis : tuple of int
        Non-negative and sorted (``x.{method}(axis=...)`` normalises any axis
        argument to this).
    keepdims : bool
        Whether the reduced axes stay, as size 1.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops import reduce_{method}
    >>> reduce_{method}(s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]]), axis=(1,), keepdims=True).tolist()
    {result}
    """
reduce_max = primitive("reduce_max", vjp=(_extremum_vjp,), jvp=(_extremum_jvp,),
                       batch=reduction_batch,
                       signature="x, *, axis, keepdims",
                       doc=_EXTREMUM_DOC.format(which="maximum", method="max",
                                                result="[[2.0], [4.0]]"))
reduce_min = primitive("reduce_min", vjp=(_extremum_vjp,), jvp=(_extremum_jvp,),
                       batch=reduction_batch,
                       signature="x, *, axis, keepdims",
                       doc=_EXTREMUM_DOC.format(which="minimum", method="min",
                                                result="[[1.0], [3.0]]"))


def _arg_batch(primitive, args, dims, *, axis):
    # One axis, skipped like a reduction's; the batch axis moves down if it came after.
    d = dims[0]
    return primitive(args[0], axis=axis + (axis >= d)), d - (axis < d)


_argmax = primitive("argmax", batch=GenericRule(_arg_batch))
_argmin = primitive("argmin", batch=GenericRule(_arg_batch))


def _reducer(prim, doc):
    def reduce(x, axis=None, keepdims=False):
        axes = normalize_axes(axis, len(shape_of(x)))
        return prim(x, axis=axes, keepdims=bool(keepdims))

    reduce.__name__ = prim.name.replace("reduce_", "")
    reduce.__doc__ = doc
    return reduce


sum = _reducer(reduce_sum, """Sum over ``axis`` (all axes when None).

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]]).sum(axis=0).tolist()
[4.0, 6.0]
""")
max = _reducer(reduce_max, """Maximum over ``axis``; a tie splits the derivative evenly.

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([1.0, 5.0, 3.0]).max().item()
5.0
""")
min = _reducer(reduce_min, """Minimum over ``axis``; a tie splits the derivative evenly.

Examples
--------
>>> import s4tf
>>> s4tf.Tensor([1.0, 5.0, 3.0]).min().item()
1.0
""")


def _count(shape, axis):
    """How many elements of ``shape`` each result of a reduction over ``axis`` takes."""
    count = 1
    for a in axis:
        count *= shape[a]
    return count


# The mean of a floating tensor as one primitive: a sum and a division recorded as one
# node (one to pull back, one on the lazy backend). Its kernel and both rules compute
# what the two ops computed, in the same order (the sum, then one division by the
# count), so on the eager backends values and derivatives are the same to the bit (XLA
# may fuse the division by a constant count differently: within an ulp).
reduce_mean = primitive(
    "reduce_mean",
    vjp=(lambda g, x, out, axis, keepdims:
         unreduce(g / float(_count(shape_of(x), axis)), x, axis, keepdims),),
    jvp=(lambda t, x, out, axis, keepdims: reduce_mean(t, axis=axis, keepdims=keepdims),),
    batch=reduction_batch,
    signature="x, *, axis, keepdims",
    doc="""The mean of floating ``x`` over the axes ``axis`` (what ``x.mean()`` calls).

    Parameters
    ----------
    x : Tensor
        Of a floating dtype (:func:`mean` sums other dtypes and divides).
    axis : tuple of int
        Non-negative and sorted (``x.mean(axis=...)`` normalises any axis
        argument to this).
    keepdims : bool
        Whether the reduced axes stay, as size 1.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.reductions import reduce_mean
    >>> reduce_mean(s4tf.Tensor([[1.0, 2.0], [3.0, 5.0]]), axis=(1,), keepdims=False).tolist()
    [1.5, 4.0]
    """,
)


def _is_floating(x) -> bool:
    """Whether ``x`` is a floating tensor (or a tracer of one): its mean is one primitive."""
    return isinstance(innermost(x), Tensor) and x.dtype.is_floating


def mean(x, axis=None, keepdims=False):
    """Arithmetic mean over ``axis`` (all axes when None).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([1.0, 2.0, 6.0]).mean().item()
    3.0
    """
    shape = shape_of(x)
    axes = normalize_axes(axis, len(shape))
    count = _count(shape, axes)
    if isinstance(count, int) and _is_floating(x):
        return reduce_mean(x, axis=axes, keepdims=bool(keepdims))
    total = reduce_sum(x, axis=axes, keepdims=bool(keepdims))
    if not isinstance(count, (int, np.integer)):
        # A symbolic size (the batch axis of s4tf.export) has no number yet: count the
        # elements as the exported program will, by summing ones of x's shape.
        one = from_numpy(np.ones((), total.dtype.numpy), like=total)
        count = reduce_sum(broadcast_to_(one, shape=shape), axis=axes, keepdims=bool(keepdims))
        return total / count
    return total / float(count)


def variance(x, axis=None, keepdims=False):
    """Biased variance (divides by N) over ``axis``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([1.0, 3.0]).variance().item()
    1.0
    """
    centered = x - mean(x, axis=axis, keepdims=True)
    return mean(centered * centered, axis=axis, keepdims=keepdims)


def argmax(x, axis=None):
    """Index of the largest value along ``axis`` (of the flattened tensor when None), int32."""
    if axis is None:
        return _argmax(reshape(x, shape=(-1,)), axis=0)
    return _argmax(x, axis=normalize_axes(axis, len(shape_of(x)))[0])


def argmin(x, axis=None):
    """Index of the smallest value along ``axis`` (of the flattened tensor when None), int32."""
    if axis is None:
        return _argmin(reshape(x, shape=(-1,)), axis=0)
    return _argmin(x, axis=normalize_axes(axis, len(shape_of(x)))[0])
