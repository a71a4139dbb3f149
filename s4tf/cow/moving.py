"""``moved(along=)`` with copy-on-write: S4TF's ``move(along:)`` as a value update.

``s4tf.moved(value, along)`` and ``value.moved(along=)`` are entry points like
``opt.update``: each measures its argument's reference count first and calls
:func:`moved` here, which adds every leaf's tangent in place where nobody else
can see the buffer (consuming the old root) and out of place everywhere else.
Both call shapes are calibrated at import, since a method call passes ``self``
differently from a function call on some interpreters.
"""

from __future__ import annotations

import numpy as np

from ..differentiable import Differentiable, _is_zero
from ..differentiable import moved as moved_function
from ..tensor import Tensor
from ..tree import tree_flatten
from . import calibration, callsite
from .engine import update

__all__ = ["moved"]


def moved(value, along, count: int, caller, *, method: bool, consume: bool = True):
    """``value`` moved along ``along``; the body of both ``moved`` entry points.

    ``count`` is ``sys.getrefcount(value)`` measured first thing by the entry
    point, and ``caller`` the frame that called it.

    Examples
    --------
    >>> import s4tf
    >>> class Point(s4tf.Differentiable):
    ...     x: s4tf.Tensor
    >>> p = Point(s4tf.Tensor([1.0, 2.0]))
    >>> p = p.moved(along=Point.TangentVector(x=s4tf.Tensor([0.5, 0.5])))
    >>> p.x.tolist()
    [1.5, 2.5]
    """
    if calibration.probing is not None:
        calibration.record_probe(value, count, caller)
    if _is_zero(along):
        return value
    tangents = _tangents(value, along)

    def new_leaf(i, leaf, in_place):
        tangent = tangents[i]
        if tangent is None:
            return leaf
        if in_place and _adds_in_place(leaf, tangent):
            leaf._data += tangent._data if isinstance(tangent, Tensor) else tangent
            return leaf
        return leaf + tangent

    if method:
        return update(value, count, _METHOD, consume, new_leaf, "moved", caller,
                      callsite.MOVED_METHOD)
    return update(value, count, _FUNCTION, consume, new_leaf, "moved", caller, callsite.MOVED)


def _tangents(value, along) -> list:
    """Each leaf's tangent (None for zero), checked before anything is written."""
    leaves, treedef = tree_flatten(value, differentiable=True)
    tangents = treedef.tangent_leaves(along, f"moved(along=): the tangents of this {type(value).__name__}")
    for i, (leaf, tangent) in enumerate(zip(leaves, tangents, strict=True)):
        if isinstance(leaf, Tensor) and isinstance(tangent, Tensor):
            try:
                shape = np.broadcast_shapes(tangent.shape, leaf.shape)
            except ValueError:
                shape = None
            if shape != leaf.shape:
                raise ValueError(
                    f"moved(along=): the tangent of {_path(value, i)!r} has shape {tangent.shape}, "
                    f"but the value has shape {leaf.shape}. Pass a tangent of the value's shape."
                )
    return tangents


def _path(value, i: int) -> str:
    from ..optimizers._paths import leaf_paths

    return leaf_paths(value)[i]


def _adds_in_place(leaf, tangent) -> bool:
    """Whether ``leaf += tangent`` on the storage gives exactly ``leaf + tangent``."""
    if isinstance(tangent, float | int) and not isinstance(tangent, bool):
        return True
    return (type(tangent) is Tensor and tangent._backend is leaf._backend
            and tangent.dtype == leaf.dtype
            and type(tangent._data) is getattr(leaf._backend, "array_type", None))


class _Probe(Differentiable):
    w: float


def _calibrate(entry, calls):
    return calibration.calibrate_root(entry, lambda: _Probe(0.0), calls=calls,
                                      args=(_Probe.TangentVector(w=1.0),))


_FUNCTION = _calibrate(moved_function, ("entry({value}, args[0])", "entry({value}, along=args[0])"))
_METHOD = _calibrate(None, ("{value}.moved(args[0])", "{value}.moved(along=args[0])"))
