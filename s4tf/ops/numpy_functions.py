"""NumPy functions called on tensors (``np.sum(t)``), through NumPy's ``__array_function__``.

* Reductions with an s4tf equivalent (``np.sum``, ``np.mean``, ``np.max``,
  ``np.min``) answer with a Tensor computed by the op library on the tensor's
  backend; arguments s4tf has no equivalent for (``out=``, ``dtype=``,
  ``where=``, ``initial=``) raise a ``TypeError`` saying what to call instead.
* Shape queries (``np.shape``, ``np.ndim``, ``np.size``) read the shape,
  without computing anything (also on values being differentiated).
* Every other NumPy function sees the tensors as read-only NumPy arrays, as
  it would through ``__array__``.

On a value being differentiated, every other NumPy function raises
:class:`s4tf.NonDifferentiableError` (``Tracer.__array_function__``).

It is part of the op library: the answers are ops (``t.sum()`` and the other
reductions), and ``Tensor.__array_function__`` is installed with Tensor's other
methods by :mod:`s4tf.ops.tensor_methods`.
"""

from __future__ import annotations

import math

from ..tensor import Tensor

__all__ = ["call", "shape_query"]

# NumPy's parameter order for each reduction s4tf answers, after the array.
_REDUCTIONS = {
    "sum": ("sum", ("axis", "dtype", "out", "keepdims", "initial", "where")),
    "mean": ("mean", ("axis", "dtype", "out", "keepdims")),
    "max": ("max", ("axis", "out", "keepdims", "initial", "where")),
    "amax": ("max", ("axis", "out", "keepdims", "initial", "where")),
    "min": ("min", ("axis", "out", "keepdims", "initial", "where")),
    "amin": ("min", ("axis", "out", "keepdims", "initial", "where")),
}


def shape_query(func, args, kwargs):
    """The answer of ``np.shape``/``np.ndim``/``np.size`` from the shape; None for others."""
    name = func.__name__
    if name not in ("shape", "ndim", "size") or not args:
        return None
    shape = tuple(args[0].shape)
    if name == "shape":
        return shape
    if name == "ndim":
        return len(shape)
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    return math.prod(shape) if axis is None else shape[axis]


def call(func, args, kwargs):
    """``func(*args, **kwargs)`` for a NumPy function that met a Tensor."""
    query = shape_query(func, args, kwargs)
    if query is not None:
        return query
    entry = _REDUCTIONS.get(func.__name__)
    if entry is not None and args and isinstance(args[0], Tensor):
        method, names = entry
        bound = dict(zip(names, args[1:], strict=False))
        bound.update(kwargs)
        unsupported = [k for k, v in bound.items()
                       if k not in ("axis", "keepdims") and not _is_default(k, v)]
        if unsupported:
            raise TypeError(
                f"numpy.{func.__name__}(tensor, {unsupported[0]}=...) is not supported on s4tf "
                f"tensors (they are immutable values on a backend). Call "
                f"t.{method}(axis=..., keepdims=...) instead, then t.astype(dtype) for another "
                "dtype, or np.asarray(t) first for NumPy's own function."
            )
        return getattr(args[0], method)(axis=bound.get("axis"), keepdims=bool(bound.get("keepdims")))
    implementation = getattr(func, "_implementation", func)
    return implementation(*_host(args), **dict(zip(kwargs, _host(kwargs.values()), strict=True)))


def _is_default(name, value) -> bool:
    if name in ("dtype", "out"):
        return value is None
    return False  # initial=, where=: NumPy passes them only when the caller did


def _host(values):
    """``values`` with every Tensor (also inside lists and tuples) as a read-only array."""
    out = []
    for value in values:
        if isinstance(value, Tensor):
            value = value.numpy()
        elif isinstance(value, list | tuple):
            value = list(_host(value)) if isinstance(value, list) else tuple(_host(value))
        out.append(value)
    return out
