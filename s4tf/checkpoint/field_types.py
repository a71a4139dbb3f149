"""Checking a rebuilt field against the annotation its class declares for it.

``s4tf.load(path)`` without ``like=`` builds a model from the file's
description, bypassing ``__init__``. What each field may hold comes from the
class, not the file: a field annotated ``Tensor`` must get a Tensor, a
``layers.Dense`` field a Dense, an ``int`` field an int; ``Optional``, unions,
``Literal``, ``Callable`` and parametrised containers (``list[Dense]``,
``tuple[int, int]``, ``dict[str, Tensor]``) are checked through. An
annotation that says nothing checkable (``Any``, ``object``, a ``TypeVar``, a
name that cannot be resolved) accepts what the file describes, which the
decoder has already checked on its own terms (known classes, s4tf dtypes,
registered functions).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import sys
import types
import typing
import weakref

from .errors import CheckpointError

__all__ = ["check_field"]

_UNCHECKED = object()  # an annotation that constrains nothing we can test
_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def check_field(cls: type, name: str, value, where: str) -> None:
    """Raise :class:`CheckpointError` unless ``value`` fits ``cls``'s annotation of ``name``."""
    annotation, written = _field_types(cls).get(name, (_UNCHECKED, ""))
    if _fits(value, annotation):
        return
    raise CheckpointError(
        f"the checkpoint's field {where!r} holds {_describe(value)}, but "
        f"{cls.__qualname__}.{name} is annotated {written!r}. The file was edited, damaged, "
        f"or saved from another version of {cls.__qualname__}: load it with like=model built "
        "by your code to see which weights differ, or fix the class."
    )


def _field_types(cls: type) -> dict[str, tuple[object, str]]:
    """``{field: (resolved annotation, annotation as written)}``, computed once per class."""
    found = _cache.get(cls)
    if found is None:
        found = {f.name: (_resolve(f.type, _owner(cls, f.name)), _written(f.type))
                 for f in dataclasses.fields(cls)}
        _cache[cls] = found
    return found


def _owner(cls: type, name: str) -> type:
    # An inherited field's annotation is written in its base class's module.
    for base in cls.__mro__:
        if name in base.__dict__.get("__annotations__", {}):
            return base
    return cls


def _resolve(annotation, owner: type):
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(owner.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    try:
        # As typing.get_type_hints does: the string is the class's own source
        # (``from __future__ import annotations``), never text from a file.
        return eval(annotation, namespace, {owner.__name__: owner})  # noqa: S307
    except Exception:
        # A name local to a function, or a typo the class never needed resolved.
        return _UNCHECKED


def _written(annotation) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _fits(value, annotation) -> bool:
    if annotation is _UNCHECKED or annotation is typing.Any or annotation is object:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _fits(value, arguments[0])
    if origin is typing.Union or origin is types.UnionType:
        return any(_fits(value, argument) for argument in arguments)
    if origin is typing.Literal:
        return any(type(value) is type(choice) and value == choice for choice in arguments)
    if annotation is collections.abc.Callable or origin is collections.abc.Callable:
        return callable(value)
    if origin is not None:
        return _fits_container(value, origin, arguments)
    if annotation is float:
        # As in PEP 484, an int is acceptable where a float is declared.
        return isinstance(value, int | float)
    if annotation is complex:
        return isinstance(value, int | float | complex)
    if isinstance(annotation, type):
        return _isinstance(value, annotation)
    return True  # a TypeVar, ParamSpec, NewType or other typing construct


def _fits_container(value, origin, arguments) -> bool:
    if not isinstance(origin, type):
        return True  # e.g. ClassVar, Final: not fields, nothing to check
    if not _isinstance(value, origin):
        return False
    if not arguments:
        return True
    if issubclass(origin, tuple):
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return all(_fits(item, arguments[0]) for item in value)
        if arguments == ((),):
            return len(value) == 0
        return len(value) == len(arguments) and all(
            _fits(item, argument) for item, argument in zip(value, arguments, strict=True))
    if issubclass(origin, collections.abc.Mapping) and len(arguments) == 2:
        return all(_fits(k, arguments[0]) and _fits(v, arguments[1]) for k, v in value.items())
    if issubclass(origin, collections.abc.Iterable) and len(arguments) == 1:
        return all(_fits(item, arguments[0]) for item in value)
    return True


def _isinstance(value, cls: type) -> bool:
    try:
        return isinstance(value, cls)
    except TypeError:  # a Protocol that is not runtime-checkable
        return True


def _describe(value) -> str:
    from ..differentiable import Differentiable
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        return f"a {value.dtype} Tensor of shape {tuple(value.shape)}"
    if isinstance(value, Differentiable):
        return f"a {type(value).__qualname__}"
    text = repr(value)
    return f"the {type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"
