"""The base class of differentiable values, and of their tangent vectors.

``class Point(s4tf.Differentiable)`` becomes a frozen dataclass (a custom
``__init__`` may assign fields; the instance freezes when it returns; see
:mod:`.fields`) with a nested ``Point.TangentVector`` holding one tangent per
differentiable field, as Swift synthesizes ``TangentVector`` for
``@memberwise Differentiable`` structs. Every subclass registers its fields
with :mod:`s4tf.tree` (and with JAX, :mod:`.jax_pytrees`) when it is created.
"""

from __future__ import annotations

import dataclasses
import sys
import typing

import numpy as np

from ..cow import callsite
from ..cow import moving as cow_moving
from ..tensor import Tensor
from ..transfer import to_backend
from ..tree import is_zero, node_type, register_node
from . import jax_pytrees
from . import tangent_arithmetic as arithmetic
from .fields import frozen_delattr, frozen_setattr, is_no_derivative, wrap_init

__all__ = ["Differentiable", "TangentVectorBase", "replace"]


class Differentiable:
    """Base class of values that can be differentiated and moved along tangents.

    Subclasses become frozen dataclasses (and pytrees). A field is differentiable
    when its value is a float, a floating Tensor, a Differentiable, or a
    list/tuple/dict of those, unless declared with :func:`no_derivative`.

    Examples
    --------
    >>> import s4tf
    >>> class Point(s4tf.Differentiable):
    ...     x: float
    ...     y: float
    >>> p = Point(1.0, 2.0).moved(along=Point.TangentVector(x=0.5, y=0.0))
    >>> (p.x, p.y)
    (1.5, 2.0)
    >>> s4tf.gradient(Point(3.0, 4.0), of=lambda p: p.x * p.y)
    Point.TangentVector(x=4.0, y=3.0)
    """

    _s4tf_all_fields: typing.ClassVar[tuple[str, ...]] = ()
    _s4tf_no_derivative: typing.ClassVar[frozenset[str]] = frozenset()
    _s4tf_custom_init: typing.ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own_init = "__init__" in cls.__dict__
        custom = own_init or any(getattr(b, "_s4tf_custom_init", False) for b in cls.__mro__[1:])
        dataclasses.dataclass(cls, init=not custom, repr=True, eq=False)
        cls._s4tf_custom_init = custom
        fields = dataclasses.fields(cls)
        cls._s4tf_all_fields = tuple(f.name for f in fields)
        cls._s4tf_no_derivative = frozenset(f.name for f in fields if is_no_derivative(f))
        if not getattr(cls.__init__, "_s4tf_wrapped", False):
            cls.__init__ = wrap_init(cls.__init__)
        cls.__setattr__ = frozen_setattr
        cls.__delattr__ = frozen_delattr
        if cls.__name__ == "TangentVectorBase" or issubclass(cls, globals().get("TangentVectorBase", ())):
            cls.TangentVector = cls
            cls._s4tf_field_names = cls._s4tf_all_fields
        elif "TangentVector" not in cls.__dict__:
            cls.TangentVector = _synthesize_tangent_vector(cls)
        register_node(cls, cls._s4tf_all_fields, cls._s4tf_no_derivative, cls.TangentVector)
        jax_pytrees.register(cls)

    def moved(self, along, *, consume: bool = True):
        """This value moved along a tangent vector (S4TF's ``move(along:)``).

        Copy-on-write like ``opt.update``: when the caller holds the only
        reference (``model = model.moved(along=g)``), buffers are written in
        place and this object is consumed (later uses raise
        :class:`s4tf.ConsumedValueError`); whatever anyone else can see is
        copied. ``consume=False`` always copies.

        Examples
        --------
        >>> import s4tf
        >>> class Point(s4tf.Differentiable):
        ...     x: float
        >>> p = Point(1.0)
        >>> p = p.moved(along=Point.TangentVector(x=0.5))
        >>> p.x
        1.5
        """
        count = sys.getrefcount(self)
        return cow_moving.moved(self, along, count, sys._getframe(1), callsite.MOVED_METHOD,
                                consume=consume)

    def to(self, backend: str):
        """This value with every tensor moved to ``backend`` (see :func:`s4tf.to_backend`)."""
        return to_backend(self, backend)


def _synthesize_tangent_vector(cls):
    names = [n for n in cls._s4tf_all_fields if n not in cls._s4tf_no_derivative]
    namespace = {
        "__annotations__": {n: typing.Any for n in names},
        "__qualname__": f"{cls.__qualname__}.TangentVector",
        "__module__": cls.__module__,
    }
    for n in names:
        namespace[n] = dataclasses.field(default=0.0)
    return type("TangentVector", (TangentVectorBase,), namespace)


class TangentVectorBase(Differentiable):
    """Base of synthesized ``TangentVector`` classes: a vector space, field by field.

    Supports ``+ -``, unary ``-``, ``* /`` by a scalar, pointwise ``* /``,
    :meth:`sqrt`, :meth:`dot`, :meth:`squared_norm` and the class-level ``zero``.
    """

    _s4tf_field_names: typing.ClassVar[tuple[str, ...]] = ()

    # The arithmetic's functions take the tangent first, so they serve as methods.
    __add__ = __radd__ = arithmetic.add
    __sub__ = arithmetic.subtract
    __neg__ = arithmetic.negate
    __mul__ = arithmetic.multiply
    __truediv__ = arithmetic.divide
    sqrt = arithmetic.sqrt
    dot = arithmetic.dot

    def __rsub__(self, other):
        return arithmetic.subtract(other, self)

    def __rmul__(self, other):
        return arithmetic.multiply(other, self)

    def squared_norm(self):
        """``self.dot(self)``."""
        return self.dot(self)

    @classmethod
    def _zero(cls):
        node = node_type(cls)
        return node.build(dict.fromkeys(node.fields, 0.0))

    def __eq__(self, other):
        if not isinstance(other, TangentVectorBase) or type(other) is not type(self):
            return NotImplemented
        return all(_values_equal(getattr(self, n), getattr(other, n)) for n in self._s4tf_field_names)

    __hash__ = object.__hash__


def _values_equal(a, b) -> bool:
    if is_zero(a) and is_zero(b):
        return True
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return a == b


class _ZeroDescriptor:
    def __get__(self, obj, cls):
        return cls._zero()


TangentVectorBase.zero = _ZeroDescriptor()


def replace(value, **fields):
    """A copy of ``value`` with some fields replaced, whatever its ``__init__`` takes.

    Examples
    --------
    >>> import s4tf
    >>> class Point(s4tf.Differentiable):
    ...     x: float
    ...     y: float
    >>> s4tf.replace(Point(1.0, 2.0), y=5.0)
    Point(x=1.0, y=5.0)
    """
    cls = type(value)
    if not isinstance(value, Differentiable):
        raise TypeError(f"replace() takes an s4tf.Differentiable value, got {cls.__name__}.")
    unknown = set(fields) - set(cls._s4tf_all_fields)
    if unknown:
        raise TypeError(
            f"{cls.__name__} has no field(s) {', '.join(sorted(unknown))}; "
            f"its fields are {', '.join(cls._s4tf_all_fields)}."
        )
    state = dict(value.__dict__)
    state.update(fields)
    return node_type(cls).build(state)
