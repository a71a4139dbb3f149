"""Nearest-neighbour upsampling and zero padding: composites of shape primitives."""

from __future__ import annotations

from .._sizes import as_int
from .broadcasting import broadcast_to
from .joining import pad
from .shapes import reshape
from .window_geometry import check_input, expand

__all__ = ["upsampling1d", "upsampling2d", "upsampling3d", "zero_padding1d", "zero_padding2d",
           "zero_padding3d"]


def _upsample(x, n, size, op):
    shape = check_input(x, n, op)
    size = expand(size, n, "size", op)
    # Repeat each element along a new axis after its own, then merge the pairs.
    spread = (shape[0],) + sum(((s, 1) for s in shape[1:-1]), ()) + (shape[-1],)
    target = (shape[0],) + sum(((s, k) for s, k in zip(shape[1:-1], size, strict=True)), ()) + (shape[-1],)
    out = broadcast_to(reshape(x, spread), target)
    return reshape(out, (shape[0],) + tuple(s * k for s, k in zip(shape[1:-1], size, strict=True)) + (shape[-1],))


def zero_padding_pairs(padding, n, op):
    """A zero padding's ``padding`` as one ``(before, after)`` pair per spatial axis.

    Shared by the ``zero_padding*d`` ops and the ``ZeroPadding*`` layers, which
    validate it at construction; ``op`` names the caller in the error.

    Examples
    --------
    >>> from s4tf.ops.resampling import zero_padding_pairs
    >>> zero_padding_pairs(1, 2, "zero_padding2d"), zero_padding_pairs([1, 2], 2, "zero_padding2d")
    (((1, 1), (1, 1)), ((1, 1), (2, 2)))
    """
    error = ValueError(
        f"{op}: padding must be an int, {n} ints (symmetric per axis), or {n} (before, after) "
        f"pairs of non-negative ints{' (or one pair for the one axis)' if n == 1 else ''}; "
        f"got {padding!r}."
    )
    if as_int(padding) is not None:
        padding = ((padding, padding),) * n
    elif not isinstance(padding, tuple | list):
        raise error
    elif n == 1 and len(padding) == 2 and all(as_int(p) is not None for p in padding):
        padding = (tuple(padding),)  # ZeroPadding1D's (before, after)
    elif len(padding) == n and all(as_int(p) is not None for p in padding):
        padding = tuple((p, p) for p in padding)
    if len(padding) != n or not all(
        isinstance(p, tuple | list) and len(p) == 2
        and all(as_int(v) is not None and as_int(v) >= 0 for v in p) for p in padding
    ):
        raise error
    return tuple((int(a), int(b)) for a, b in padding)


def _zero_pad(x, n, padding, op):
    check_input(x, n, op)
    return pad(x, ((0, 0),) + zero_padding_pairs(padding, n, op) + ((0, 0),))


def _make(kind, n):
    op = f"{kind}{n}d"
    if kind == "upsampling":
        def fn(input, size=2):
            return _upsample(input, n, size, op)
    else:
        def fn(input, padding=1):
            return _zero_pad(input, n, padding, op)
    fn.__name__ = fn.__qualname__ = op
    return fn


upsampling1d, upsampling2d, upsampling3d = (_make("upsampling", n) for n in (1, 2, 3))
zero_padding1d, zero_padding2d, zero_padding3d = (_make("zero_padding", n) for n in (1, 2, 3))

_UP_DOC = """Nearest-neighbour upsampling: repeat each of {n} spatial axes ``size`` times.

Parameters
----------
input : Tensor
    ``(batch, *spatial, channels)`` with {n} spatial axes.
size : int or tuple of {n} ints
    The repeat factor per axis (default 2).

Returns
-------
Tensor
    ``(batch, *(spatial * size), channels)``.

Examples
--------
>>> import s4tf
>>> s4tf.nn.upsampling{n}d(s4tf.ones([1{dims}, 3]), size=2).shape
{result}
"""
_PAD_DOC = """Zero padding of {n} spatial axes (channels-last ``input``).

Parameters
----------
input : Tensor
    ``(batch, *spatial, channels)`` with {n} spatial axes.
padding : int, tuple of {n} ints, or tuple of {n} (before, after) pairs
    Zeros added on each side (default 1).

Returns
-------
Tensor

Examples
--------
>>> import s4tf
>>> s4tf.nn.zero_padding{n}d(s4tf.ones([1{dims}, 3]), padding=1).shape
{padded}
"""
for _n, _dims, _up, _padded in ((1, ", 2", "(1, 4, 3)", "(1, 4, 3)"),
                                (2, ", 2, 2", "(1, 4, 4, 3)", "(1, 4, 4, 3)"),
                                (3, ", 2, 2, 2", "(1, 4, 4, 4, 3)", "(1, 4, 4, 4, 3)")):
    (upsampling1d, upsampling2d, upsampling3d)[_n - 1].__doc__ = _UP_DOC.format(
        n=_n, dims=_dims, result=_up)
    (zero_padding1d, zero_padding2d, zero_padding3d)[_n - 1].__doc__ = _PAD_DOC.format(
        n=_n, dims=_dims, padded=_padded)
