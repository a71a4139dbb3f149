"""Traces and tracers: what a primitive needs to know about differentiation.

A *trace* is one level of differentiation; a *tracer* is a value being
differentiated at that level. It wraps a *primal*: a Tensor, a Python float,
or a tracer of a lower level, which is how nested differential operators give
higher-order derivatives. Tracers are Tensors, so every Tensor method works on
them; a primitive applied to tracers hands itself to the highest level's
:meth:`Trace.process` (:mod:`s4tf.ops.primitive`).

This core lives beside the primitives (as ``jax/_src/core.py`` holds JAX's
``Primitive``, ``Trace`` and ``Tracer`` together), so the op library never
imports the differentiation engines: :mod:`s4tf.autodiff` subclasses
:class:`Trace` and :class:`Tracer` (reverse and forward mode) and builds on the
ops, never the other way round.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes as _dtypes
from ..backends.base import get_backend, get_backend_object
from ..dtypes import BY_NUMPY
from ..non_differentiable import non_differentiable
from ..tensor import Tensor
from .numpy_functions import shape_query

__all__ = ["Trace", "Tracer", "innermost", "is_float_like", "new_level", "strip"]

_levels = itertools.count(1)


def new_level() -> int:
    """A level above every trace made so far, so nested traces order correctly."""
    return next(_levels)


class Trace:
    """One level of differentiation; ``process`` applies a primitive to its tracers.

    The differentiation engines subclass it (``ReverseTrace``, ``ForwardTrace``
    in :mod:`s4tf.autodiff`) and define ``process(primitive, args, params)``.
    """

    __slots__ = ("level",)

    def __init__(self) -> None:
        self.level = new_level()

    def process(self, primitive, args, params):
        """``primitive(*args, **params)`` where some arguments are this trace's tracers."""
        raise NotImplementedError  # abstract: ReverseTrace records, ForwardTrace pushes tangents

    def process_binary(self, primitive, x, y):
        """``process`` of a two-operand op without parameters (arithmetic, matmul).

        The hot path of Tensor operators: an engine may override it to skip the
        argument tuple and the parameter dict.
        """
        return self.process(primitive, (x, y), {})


def innermost(value):
    """The concrete value under every level of tracer.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.tracer import innermost
    >>> s4tf.gradient(2.0, of=lambda x: x * innermost(x))  # innermost(x) is the float 2.0
    2.0
    """
    while isinstance(value, Tracer):
        value = value._primal
    return value


def strip(value):
    """``value`` with every level of differentiation removed (a stop-gradient).

    Levels that batch the value (:func:`s4tf.vmap`) stay: without them it
    would be one value of the whole batch, not of one example.
    """
    while isinstance(value, Tracer):
        if value.hides_axis:
            return value.with_primal(strip(value._primal))
        value = value._primal
    return value


def is_float_like(value) -> bool:
    """Whether ``value`` (under its tracers) is a Python float rather than a tensor."""
    primal = innermost(value)
    return isinstance(primal, float | int) and not isinstance(primal, bool | np.bool_)


def _refusal(operation: str):
    """A method that raises :class:`s4tf.NonDifferentiableError` for ``operation``."""

    def refuse(self, *args, **kwargs):
        raise non_differentiable(operation)

    refuse.__doc__ = f"Raises NonDifferentiableError: {operation} cannot carry a derivative."
    return refuse


class Tracer(Tensor):
    """A value being differentiated at one level.

    Subclasses set their slots in ``__new__``: ``s4tf.Tensor(tracer)`` returns
    the tracer, and Python then calls the result's ``__init__`` with Tensor's
    arguments (``object.__init__`` ignores them).
    """

    __slots__ = ("_trace", "_primal")
    _traced = True
    # Whether this level's primal holds an axis the value does not show: a batch
    # tracer's (s4tf.vmap) primal has the batch axis, which its shape leaves out.
    hides_axis = False

    # A tracer's shape and dtype are its innermost primal's (a Python float's: () and
    # float64), read without the properties of every level and of the Tensor: layers
    # and derivative rules ask them several times per op. Below a batch tracer, the
    # shape is that tracer's, which leaves the batch axis out.
    @property
    def shape(self):
        primal = self._primal
        if type(primal) is Tensor:  # one level of differentiation: the usual case
            return tuple(primal._data.shape)
        while isinstance(primal, Tracer):
            if primal.hides_axis:
                return primal.shape
            primal = primal._primal
        return tuple(primal._data.shape) if isinstance(primal, Tensor) else ()

    @property
    def dtype(self):
        primal = self._primal
        if type(primal) is Tensor:  # one level of differentiation: the usual case
            found = BY_NUMPY.get(primal._data.dtype)
            if found is not None:
                return found
        while isinstance(primal, Tracer):
            primal = primal._primal
        if isinstance(primal, Tensor):
            found = BY_NUMPY.get(primal._data.dtype)
            return found if found is not None else primal.dtype
        return _dtypes.float64

    @property
    def backend(self):
        primal = innermost(self)
        return primal.backend if isinstance(primal, Tensor) else get_backend()

    @property
    def _backend(self):
        return get_backend_object(self.backend)

    # Reading numbers out of a traced value ends the derivative's path: each raises,
    # naming the user's line. bool() and comparisons work, so control flow does.
    numpy = _refusal("Tensor.numpy()")
    item = _refusal("Tensor.item()")
    tolist = _refusal("Tensor.tolist()")
    __array__ = _refusal("Converting to a NumPy array (np.asarray, a NumPy function)")
    __float__ = _refusal("Converting to a Python float (float(), math.* functions)")
    __int__ = _refusal("Converting to a Python int (int())")
    __index__ = _refusal("Using a differentiated value as an index")
    __round__ = _refusal("round()")
    __trunc__ = _refusal("math.trunc()")
    __floor__ = _refusal("math.floor()")
    __ceil__ = _refusal("math.ceil()")
    __reduce__ = _refusal("Pickling a differentiated value")

    def with_primal(self, primal):
        """This level's tracer of another primal; only levels that hide an axis define it."""
        raise NotImplementedError  # a differentiation level is stripped, never rebuilt

    def __array_function__(self, func, types, args, kwargs):
        query = shape_query(func, args, kwargs)
        if query is not None:
            return query
        raise non_differentiable(f"The NumPy function numpy.{func.__name__}")

    def __bool__(self):
        value = self
        while isinstance(value, Tracer):
            if value.hides_axis:
                raise TypeError(
                    "bool() of a value batched by s4tf.vmap: each example may give a "
                    "different answer, so Python control flow (if, while, and, or) cannot "
                    "branch on it. Compute both branches and choose per example with "
                    "s4tf.where(condition, x, y), or move the decision out of vmap."
                )
            value = value._primal
        return bool(value)

    def __hash__(self):
        return id(self)

    def __repr__(self):
        return f"<{type(self).__name__} level={self._trace.level} of {innermost(self)!r}>"
