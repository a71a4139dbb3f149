"""The fields of a Differentiable value: declaring, freezing and checking them.

:func:`no_derivative` declares a field that differentiation ignores; an
annotation that can never be differentiated (``int``, ``str``, a callable)
does the same by itself. After the outermost ``__init__`` returns, the
instance is frozen, and every field must be set and nothing else may be.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import typing

from ..tensor import Tensor

__all__ = ["check_fields", "frozen_delattr", "frozen_setattr", "is_no_derivative", "no_derivative",
           "wrap_init"]

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


def is_no_derivative(field: dataclasses.Field) -> bool:
    """Whether differentiation ignores ``field``: declared so, or annotated with a type
    that can never be differentiated."""
    return bool(field.metadata.get(_NO_DERIVATIVE)) or _annotation_is_non_differentiable(field.type)


def _annotation_is_non_differentiable(annotation) -> bool:
    if isinstance(annotation, str):
        head = annotation.replace("typing.", "").split("[")[0].strip()
        return head in _NON_DIFFERENTIABLE_NAMES or head in ("Callable", "collections.abc.Callable")
    if annotation in _NON_DIFFERENTIABLE_TYPES:
        return True
    origin = typing.get_origin(annotation)
    return annotation is collections.abc.Callable or origin is collections.abc.Callable


def frozen_setattr(self, name, value):
    """``__setattr__`` of Differentiable values: allowed only while ``__init__`` runs."""
    if _INIT_DEPTH in self.__dict__:
        object.__setattr__(self, name, value)
        return
    raise dataclasses.FrozenInstanceError(
        f"{type(self).__name__} is an immutable value; cannot assign {name!r}. Make a changed "
        f"copy with s4tf.replace(value, {name}=...) or value.moved(along=tangent)."
    )


def frozen_delattr(self, name):
    """``__delattr__`` of Differentiable values: never allowed."""
    raise dataclasses.FrozenInstanceError(f"{type(self).__name__} is an immutable value; cannot delete {name!r}.")


def wrap_init(init):
    """``init`` run with the instance unfrozen; the outermost call checks the fields."""
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
            check_fields(self, state)

    __init__._s4tf_wrapped = True
    return __init__


def check_fields(value, state) -> None:
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
