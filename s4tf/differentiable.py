"""Differentiable values: frozen dataclasses with synthesized tangent vectors.

``class Point(s4tf.Differentiable)`` becomes a frozen dataclass (a custom
``__init__`` may assign fields; the instance freezes when it returns) with a
nested ``Point.TangentVector`` holding one tangent per differentiable field, as
Swift synthesizes ``TangentVector`` for ``@memberwise Differentiable`` structs.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import typing

import numpy as np

from .tensor import Tensor

__all__ = ["Differentiable", "State", "TangentVectorBase", "moved", "no_derivative", "replace"]

_NO_DERIVATIVE = "s4tf_no_derivative"
_INIT_DEPTH = "_s4tf_init_depth"
_NON_DIFFERENTIABLE_TYPES = (int, bool, str, bytes, type)
_NON_DIFFERENTIABLE_NAMES = {"int", "bool", "str", "bytes", "type"}


def no_derivative(*, default=dataclasses.MISSING, default_factory=dataclasses.MISSING, **kwargs):
    """Declare a field that differentiation ignores (S4TF's ``@noDerivative``).

    Examples
    --------
    >>> import s4tf
    >>> class Point(s4tf.Differentiable):
    ...     x: float
    ...     label: str = s4tf.no_derivative(default="p")
    >>> [f for f in Point.TangentVector._s4tf_field_names]
    ['x']
    """
    metadata = dict(kwargs.pop("metadata", None) or {})
    metadata[_NO_DERIVATIVE] = True
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata=metadata, **kwargs
    )


def _annotation_is_non_differentiable(annotation) -> bool:
    if isinstance(annotation, str):
        head = annotation.replace("typing.", "").split("[")[0].strip()
        return head in _NON_DIFFERENTIABLE_NAMES or head in ("Callable", "collections.abc.Callable")
    if annotation in _NON_DIFFERENTIABLE_TYPES:
        return True
    origin = typing.get_origin(annotation)
    import collections.abc

    return annotation is collections.abc.Callable or origin is collections.abc.Callable


def _frozen_setattr(self, name, value):
    if _INIT_DEPTH in self.__dict__:
        object.__setattr__(self, name, value)
        return
    raise dataclasses.FrozenInstanceError(
        f"{type(self).__name__} is an immutable value; cannot assign {name!r}. Make a changed "
        f"copy with s4tf.replace(value, {name}=...) or value.moved(along=tangent)."
    )


def _frozen_delattr(self, name):
    raise dataclasses.FrozenInstanceError(f"{type(self).__name__} is an immutable value; cannot delete {name!r}.")


def _wrap_init(cls, init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        state = self.__dict__
        depth = state.get(_INIT_DEPTH, 0)
        state[_INIT_DEPTH] = depth + 1
        try:
            init(self, *args, **kwargs)
        finally:
            if depth:
                state[_INIT_DEPTH] = depth
            else:
                del state[_INIT_DEPTH]
        if not depth:
            _check_fields(self, state)

    __init__._s4tf_wrapped = True
    return __init__


def _check_fields(value, state) -> None:
    """After the outermost ``__init__``: every field set, and nothing set that is not a field.

    An attribute without a field annotation would be invisible to everything
    that works field by field (differentiation, ``parameter_count``, optimizer
    updates, ``moved``, ``replace``, checkpoints, which rebuild values from
    their fields alone), so it is refused here rather than lost later. Private
    names (``self._cache``) are no exception: they would be dropped by the
    first rebuild just the same.
    """
    cls = type(value)
    fields = cls._s4tf_all_fields
    # An unannotated attribute first: it often explains a missing field too (a misspelling).
    extra = [n for n in state if n not in fields]
    if extra:
        name = extra[0]
        raise TypeError(
            f"{cls.__name__}.{name} was assigned in __init__ but has no field annotation; add "
            f"`{name}: {_annotation_for(state[name])}` to the class body of {cls.__name__}"
            + (f" (and annotate {', '.join(extra[1:])} likewise)" if len(extra) > 1 else "")
            + ". Only annotated fields are part of the value: differentiation, optimizers, "
            "moved/replace and checkpoints rebuild it from its fields, so any other attribute "
            "would be lost. Declare a float or tensor that must not be differentiated with "
            "`= s4tf.no_derivative()` after its annotation."
        )
    missing = [n for n in fields if n not in state and not hasattr(cls, n)]
    if missing:
        raise TypeError(
            f"{cls.__name__}.__init__ did not set the field(s) {', '.join(missing)}; "
            "assign every annotated field (self.name = ...) or give it a default."
        )


def _annotation_for(value) -> str:
    """How a user would write the type of ``value`` in a class body (``layers.Dense``)."""
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    if isinstance(value, Tensor):
        return "s4tf.Tensor"
    module = kind.__module__
    for public in ("layers", "models", "optimizers"):
        if module == f"s4tf.{public}" or module.startswith(f"s4tf.{public}."):
            return f"{public}.{kind.__qualname__}"
    if module.startswith("s4tf.") or module == "s4tf":
        return f"s4tf.{kind.__qualname__}"
    return kind.__qualname__


def _register_jax_pytree(cls):
    """Register ``cls`` with JAX's pytree registry when JAX is already imported."""
    jax = sys.modules.get("jax")
    if jax is None:
        _PENDING_JAX.append(cls)
        return
    _register_with(jax, cls)


_PENDING_JAX: list = []


def _register_with(jax, cls):
    def flatten(value):
        return [value.__dict__.get(n, getattr(value, n)) for n in cls._s4tf_all_fields], None

    def unflatten(_, children):
        return _new(cls, dict(zip(cls._s4tf_all_fields, children, strict=False)))

    try:
        jax.tree_util.register_pytree_node(cls, flatten, unflatten)
    except ValueError:
        pass  # already registered (a class redefined in a notebook cell)


def register_pending_jax_pytrees() -> None:
    """Register every Differentiable class defined before JAX was imported."""
    import jax

    while _PENDING_JAX:
        _register_with(jax, _PENDING_JAX.pop())


class _JaxImportHook:
    """Registers pending classes right after ``import jax``, without importing it first.

    Importing JAX takes a second or more, so s4tf never does it just to register
    pytrees; instead this finder wraps JAX's loader the first time it is imported.
    """

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        import importlib.machinery

        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _JaxImportHook)]
            register_pending_jax_pytrees()

        loader.exec_module = exec_module
        return spec


if "jax" not in sys.modules:
    sys.meta_path.insert(0, _JaxImportHook())


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
        cls._s4tf_no_derivative = frozenset(
            f.name for f in fields
            if f.metadata.get(_NO_DERIVATIVE) or _annotation_is_non_differentiable(f.type)
        )
        if not getattr(cls.__init__, "_s4tf_wrapped", False):
            cls.__init__ = _wrap_init(cls, cls.__init__)
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
        if cls.__name__ == "TangentVectorBase" or issubclass(cls, globals().get("TangentVectorBase", ())):
            cls.TangentVector = cls
            cls._s4tf_field_names = cls._s4tf_all_fields
        elif "TangentVector" not in cls.__dict__:
            cls.TangentVector = _synthesize_tangent_vector(cls)
        _register_jax_pytree(cls)

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
        from .cow import moving

        return moving.moved(self, along, count, sys._getframe(1), method=True, consume=consume)

    def to(self, backend: str):
        """This value with every tensor moved to ``backend`` (see :func:`s4tf.to_backend`)."""
        from .backends.transfer import to_backend

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


class State:
    """A mutable cell for state a forward pass changes (BatchNorm's running statistics).

    It is not differentiated and, unlike every other part of a model, may change
    in place; when a model holding it is updated or moved while another live model
    shares the cell, the new model gets its own copy.

    Examples
    --------
    >>> import s4tf
    >>> cell = s4tf.State(s4tf.zeros([3]))
    >>> cell.value = cell.value + 1
    >>> cell.value.tolist()
    [1.0, 1.0, 1.0]
    """

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"State({self.value!r})"


# Tangent-vector arithmetic: field by field, with None and 0.0 as zero.
def _is_zero(value) -> bool:
    return value is None or (isinstance(value, float | int) and not isinstance(value, bool) and value == 0)


def _combine(a, b, op, zero_left, zero_right):
    kind = type(a)
    if kind is Tensor and type(b) is Tensor:
        return op(a, b)  # the common leaf: two tensors (neither is a zero scalar)
    if kind is type(b) and isinstance(a, TangentVectorBase):
        return _new(kind, {
            n: _combine(getattr(a, n), getattr(b, n), op, zero_left, zero_right)
            for n in kind._s4tf_field_names
        })
    if isinstance(a, TangentVectorBase) or isinstance(b, TangentVectorBase):
        cls = type(a) if isinstance(a, TangentVectorBase) else type(b)
        return _new(cls, {
            n: _combine(_field(a, n), _field(b, n), op, zero_left, zero_right)
            for n in cls._s4tf_field_names
        })
    if isinstance(a, list | tuple) or isinstance(b, list | tuple):
        seq_a = a if isinstance(a, list | tuple) else [a] * len(b)
        seq_b = b if isinstance(b, list | tuple) else [b] * len(a)
        out = [_combine(x, y, op, zero_left, zero_right) for x, y in zip(seq_a, seq_b, strict=False)]
        return type(a if isinstance(a, list | tuple) else b)(out)
    if isinstance(a, dict) or isinstance(b, dict):
        keys = list(a if isinstance(a, dict) else b)
        return {k: _combine(a[k] if isinstance(a, dict) else a, b[k] if isinstance(b, dict) else b,
                            op, zero_left, zero_right) for k in keys}
    if zero_left is not None and _is_zero(a):
        return zero_left(b)
    if zero_right is not None and _is_zero(b):
        return zero_right(a)
    return op(a if a is not None else 0.0, b if b is not None else 0.0)


def _field(value, name):
    return getattr(value, name) if isinstance(value, TangentVectorBase) else value


def _new(cls, fields):
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


def _scale(a, fn):
    if type(a) is Tensor:
        return fn(a)
    if isinstance(a, TangentVectorBase):
        return _new(type(a), {n: _scale(getattr(a, n), fn) for n in type(a)._s4tf_field_names})
    if isinstance(a, list | tuple):
        return type(a)(_scale(x, fn) for x in a)
    if isinstance(a, dict):
        return {k: _scale(v, fn) for k, v in a.items()}
    return None if a is None else fn(a)


def _neg(x):
    return -x


class TangentVectorBase(Differentiable):
    """Base of synthesized ``TangentVector`` classes: a vector space, field by field.

    Supports ``+ -``, unary ``-``, ``* /`` by a scalar, pointwise ``* /``,
    :meth:`sqrt`, :meth:`dot`, :meth:`squared_norm` and the class-level ``zero``.
    """

    _s4tf_field_names: typing.ClassVar[tuple[str, ...]] = ()

    def __add__(self, other):
        return _combine(self, other, lambda a, b: a + b, lambda b: b, lambda a: a)

    __radd__ = __add__

    def __sub__(self, other):
        return _combine(self, other, lambda a, b: a - b, _neg_or_none, lambda a: a)

    def __rsub__(self, other):
        return _combine(other, self, lambda a, b: a - b, _neg_or_none, lambda a: a)

    def __neg__(self):
        return _scale(self, _neg)

    def __mul__(self, other):
        if isinstance(other, TangentVectorBase):
            return _combine(self, other, lambda a, b: a * b, lambda b: None, lambda a: None)
        return _scale(self, lambda a: a * other)

    def __rmul__(self, other):
        return _scale(self, lambda a: other * a)

    def __truediv__(self, other):
        if isinstance(other, TangentVectorBase):
            return _combine(self, other, lambda a, b: a / b, lambda b: None, None)
        return _scale(self, lambda a: a / other)

    def sqrt(self):
        """Elementwise square root of every field."""
        from .ops import sqrt

        return _scale(self, lambda a: sqrt(a) if isinstance(a, Tensor) else float(a) ** 0.5)

    def dot(self, other):
        """The inner product ``sum(self * other)`` over every field."""
        total = 0.0
        product = self * other
        from .tree import tree_leaves

        for leaf in tree_leaves(product):
            total = total + (leaf.sum() if isinstance(leaf, Tensor) else leaf)
        return total

    def squared_norm(self):
        """``self.dot(self)``."""
        return self.dot(self)

    @classmethod
    def _zero(cls):
        return _new(cls, {n: 0.0 for n in cls._s4tf_field_names})

    def __eq__(self, other):
        if not isinstance(other, TangentVectorBase) or type(other) is not type(self):
            return NotImplemented
        return all(_values_equal(getattr(self, n), getattr(other, n)) for n in self._s4tf_field_names)

    __hash__ = object.__hash__


def _neg_or_none(b):
    return _scale(b, _neg)


def _values_equal(a, b) -> bool:
    if _is_zero(a) and _is_zero(b):
        return True
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return a == b


class _ZeroDescriptor:
    def __get__(self, obj, cls):
        return cls._zero()


TangentVectorBase.zero = _ZeroDescriptor()


def moved(value, along, *, consume: bool = True):
    """``value`` moved along tangent ``along``: the exponential map, as a new value.

    Works on any Differentiable value (floats, tensors, lists, dicts, models).
    A model whose only reference is the caller's is updated in place and
    consumed, as by ``opt.update`` (DESIGN 1.6); ``consume=False`` always
    copies.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.moved([1.0, 2.0], along=[0.5, 0.5])
    [1.5, 2.5]
    """
    count = sys.getrefcount(value)
    from .cow import moving

    return moving.moved(value, along, count, sys._getframe(1), method=False, consume=consume)


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
    return _new(cls, state)
