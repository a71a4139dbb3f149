"""``moved(along=)`` with copy-on-write: S4TF's ``move(along:)`` as a value update.

``s4tf.moved(value, along)`` and ``value.moved(along=)`` are entry points like
``opt.update``: each measures its argument's reference count first and calls
:func:`moved` here, which adds every leaf's tangent in place where nobody else
can see the buffer (consuming the old root) and out of place everywhere else.
The module that defines the entry points calibrates each (:func:`calibrate`),
since a method call passes ``self`` differently from a function call on some
interpreters; an entry point not calibrated always copies.
"""

from __future__ import annotations

import numpy as np

from .. import liveness
from ..tensor import Tensor
from ..tree import is_zero, tree_flatten, tree_leaf_paths
from . import callsite
from .engine import UpdateRequest, update

__all__ = ["calibrate", "moved"]

# Entry point -> its RootBaseline (None: calibration failed, always copy).
_BASELINES: dict[callsite.Entry, liveness.RootBaseline | None] = {}


def calibrate(entry: callsite.Entry, function, make, tangent, calls) -> None:
    """Calibrate the ``moved`` entry point ``entry`` with probe values ``make()``.

    ``function`` is the entry point (``None`` for a method: ``calls`` name it),
    ``tangent`` a tangent of the probe values, and ``calls`` the call shapes
    (see :func:`s4tf.liveness.calibrate_root`).
    """
    _BASELINES[entry] = liveness.calibrate_root(function, make, calls=calls, args=(tangent,))


def moved(value, along, count: int, caller, entry: callsite.Entry, *, consume: bool = True):
    """``value`` moved along ``along``; the body of both ``moved`` entry points.

    ``count`` is ``sys.getrefcount(value)`` measured first thing by the entry
    point ``entry`` (``callsite.MOVED`` or ``callsite.MOVED_METHOD``), and
    ``caller`` the frame that called it.

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
    if liveness.probing is not None:
        liveness.record_probe(value, count, caller)
    if is_zero(along):
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

    return update(UpdateRequest(value=value, count=count, baseline=_BASELINES.get(entry),
                                consume=consume, new_leaf=new_leaf, what="moved", caller=caller,
                                entry=entry))


def _tangents(value, along) -> list:
    """Each leaf's tangent (None for zero), checked before anything is written."""
    leaves, treedef = tree_flatten(value, differentiable=True)
    tangents = treedef.tangent_leaves(along, f"moved(along=): the tangents of this {type(value).__name__}")
    for i, (leaf, tangent) in enumerate(zip(leaves, tangents, strict=True)):
        if isinstance(leaf, Tensor) and isinstance(tangent, Tensor):
            if tangent.shape == leaf.shape:
                continue  # the common tangent (a gradient), without broadcast_shapes' 2 us
            try:
                shape = np.broadcast_shapes(tangent.shape, leaf.shape)
            except ValueError:
                shape = None
            if shape != leaf.shape:
                path = tree_leaf_paths(value, differentiable=True)[i]
                raise ValueError(
                    f"moved(along=): the tangent of {path!r} has shape {tangent.shape}, "
                    f"but the value has shape {leaf.shape}. Pass a tangent of the value's shape."
                )
    return tangents


def _adds_in_place(leaf, tangent) -> bool:
    """Whether ``leaf += tangent`` on the storage gives exactly ``leaf + tangent``."""
    if isinstance(tangent, float | int) and not isinstance(tangent, bool):
        return True
    return (type(tangent) is Tensor and tangent._backend is leaf._backend
            and tangent.dtype == leaf.dtype
            and type(tangent._data) is getattr(leaf._backend, "array_type", None))
