"""``s4tf.moved``: S4TF's ``move(along:)`` as a function, and the calibration of both
``moved`` entry points.

``s4tf.moved(value, along)`` and ``value.moved(along=)`` are copy-on-write
entry points like ``opt.update``: each measures its argument's reference count
on its first line and hands over to :func:`s4tf.cow.moving.moved`. Both call
shapes are calibrated here, at import, with a probe model, since a method call
passes ``self`` differently from a function call on some interpreters.
"""

from __future__ import annotations

import sys

from ..cow import callsite
from ..cow import moving as cow_moving
from .base import Differentiable

__all__ = ["moved"]


def moved(value, along, *, consume: bool = True):
    """``value`` moved along tangent ``along``: the exponential map, as a new value.

    Works on any Differentiable value (floats, tensors, lists, dicts, models).
    A model whose only reference is the caller's is updated in place and
    consumed, as by ``opt.update`` (HOW_IT_WORKS.md, Copy-on-write); ``consume=False`` always
    copies.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.moved([1.0, 2.0], along=[0.5, 0.5])
    [1.5, 2.5]
    """
    count = sys.getrefcount(value)
    return cow_moving.moved(value, along, count, sys._getframe(1), callsite.MOVED, consume=consume)


class _Probe(Differentiable):
    w: float


def _calibrate(entry: callsite.Entry, function, calls) -> None:
    cow_moving.calibrate(entry, function, lambda: _Probe(0.0), _Probe.TangentVector(w=1.0), calls)


_calibrate(callsite.MOVED, moved, ("entry({value}, args[0])", "entry({value}, along=args[0])"))
_calibrate(callsite.MOVED_METHOD, None, ("{value}.moved(args[0])", "{value}.moved(along=args[0])"))
