"""Tracers: the values differentiation wraps around a function's inputs.

A tracer belongs to one trace (a level of differentiation) and wraps a *primal*:
a Tensor, a Python float, or a tracer of a lower level, which is how nested
differential operators give higher-order derivatives. Tracers are Tensors, so
every Tensor method works on them; each op they meet is sent to their trace.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes as _dtypes
from ..tensor import Tensor
from .diagnostics import non_differentiable

__all__ = ["Trace", "Tracer", "innermost", "new_level", "strip"]

_levels = itertools.count(1)


def new_level() -> int:
    """A level above every trace made so far, so nested traces order correctly."""
    return next(_levels)


class Trace:
    """One level of differentiation; ``process`` applies a primitive to its tracers."""

    __slots__ = ("level",)

    def __init__(self) -> None:
        self.level = new_level()

    def process(self, primitive, args, params):
        raise NotImplementedError  # abstract: ReverseTrace and ForwardTrace define it


def innermost(value):
    """The concrete value under every level of tracer."""
    while isinstance(value, Tracer):
        value = value._primal
    return value


def strip(value):
    """``value`` with every level of tracing removed (a stop-gradient)."""
    return innermost(value)


class Tracer(Tensor):
    """A value being differentiated at one level."""

    __slots__ = ("_trace", "_primal")
    _traced = True

    @property
    def shape(self):
        primal = self._primal
        return () if isinstance(primal, float | int) else primal.shape

    @property
    def dtype(self):
        primal = self._primal
        return _dtypes.float64 if isinstance(primal, float) else primal.dtype

    @property
    def backend(self):
        return _backend_of(self)

    @property
    def _backend(self):
        from ..backends.base import get_backend_object

        return get_backend_object(_backend_of(self))

    def numpy(self):
        raise non_differentiable("Tensor.numpy()")

    def __array__(self, dtype=None, copy=None):
        raise non_differentiable("Converting to a NumPy array (np.asarray, a NumPy function)")

    def __array_function__(self, func, types, args, kwargs):
        from .._numpy_functions import shape_query

        query = shape_query(func, args, kwargs)
        if query is not None:
            return query
        raise non_differentiable(f"The NumPy function numpy.{func.__name__}")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .. import ops

        op = ops.UFUNCS.get(ufunc.__name__)
        if method == "__call__" and ufunc.__name__ in ops.ARITHMETIC_UFUNCS and not kwargs:
            return op(*inputs)
        raise non_differentiable(f"The NumPy function numpy.{ufunc.__name__}")

    def item(self):
        raise non_differentiable("Tensor.item()")

    def tolist(self):
        raise non_differentiable("Tensor.tolist()")

    def __float__(self):
        raise non_differentiable("Converting to a Python float (float(), math.* functions)")

    def __int__(self):
        raise non_differentiable("Converting to a Python int (int())")

    def __index__(self):
        raise non_differentiable("Using a differentiated value as an index")

    def __round__(self, ndigits=None):
        raise non_differentiable("round()")

    def __trunc__(self):
        raise non_differentiable("math.trunc()")

    def __floor__(self):
        raise non_differentiable("math.floor()")

    def __ceil__(self):
        raise non_differentiable("math.ceil()")

    def __bool__(self):
        return bool(innermost(self))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"<{type(self).__name__} level={self._trace.level} of {innermost(self)!r}>"

    def __reduce__(self):
        raise non_differentiable("Pickling a differentiated value")


def _backend_of(tracer) -> str:
    primal = innermost(tracer)
    if isinstance(primal, Tensor):
        return primal.backend
    from ..backends.base import get_backend

    return get_backend()


def is_float_like(value) -> bool:
    """Whether ``value`` (under its tracers) is a Python float rather than a tensor."""
    primal = innermost(value)
    return isinstance(primal, float | int) and not isinstance(primal, bool | np.bool_)
