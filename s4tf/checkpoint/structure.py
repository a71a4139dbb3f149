"""A value's structure as JSON, and its tensors under dotted paths.

:func:`encode` walks a model (Differentiable dataclasses, lists, tuples, dicts,
State cells) and returns a JSON description of everything that is not a tensor
plus a ``{dotted.path: Tensor}`` table. :func:`decode` rebuilds a value from
both. Decoding never imports a module and never unpickles: classes are found
among the live subclasses of :class:`s4tf.Differentiable` by qualified name and
callables (activations) in a registry of names such as ``"s4tf.relu"``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..differentiable import Differentiable, State, _new
from ..dtypes import DType, as_dtype
from ..tensor import Tensor

__all__ = ["CheckpointError", "decode", "encode", "find_class", "register_callable"]

_ROOT_KEY = "value"  # the key of a value that is itself one tensor
_extra_callables: dict[str, Callable] = {}


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read into the requested value."""


def register_callable(name: str, fn: Callable) -> Callable:
    """Let checkpoints refer to ``fn`` (e.g. a custom activation) by ``name``.

    s4tf's own public functions (``s4tf.relu``, ``s4tf.nn.*``, initializers)
    are registered already. Loading looks names up only in this registry, so a
    file can name a function but never make s4tf import or run other code.

    Examples
    --------
    >>> import s4tf
    >>> def swish_beta(x):
    ...     return x * s4tf.sigmoid(2.0 * x)
    >>> _ = s4tf.checkpoint.register_callable("my.swish_beta", swish_beta)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_callable needs a non-empty string name; received {name!r}.")
    if not callable(fn):
        raise TypeError(f"register_callable({name!r}, ...) needs a callable; received {fn!r}.")
    _extra_callables[name] = fn
    return fn


def _callable_registry() -> dict[str, Callable]:
    """``{name: function}`` for s4tf's public functions and the registered ones."""
    import importlib

    registry: dict[str, Callable] = {}
    # Only modules s4tf itself defines, already loaded by ``import s4tf``; the
    # names come from this list, never from a file.
    for module_name, prefix in (("s4tf", "s4tf"), ("s4tf.activations", "s4tf"),
                                ("s4tf.nn", "s4tf.nn"),
                                ("s4tf.initializers", "s4tf.initializers")):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in getattr(module, "__all__", ()):
            candidate = getattr(module, attr, None)
            if callable(candidate) and not isinstance(candidate, type):
                registry.setdefault(f"{prefix}.{attr}", candidate)
    registry.update(_extra_callables)
    return registry


def _callable_name(fn) -> str | None:
    for name, candidate in _callable_registry().items():
        if candidate is fn:
            return name
    return None


def _qualified_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _live_subclasses(root: type) -> list[type]:
    seen, order, stack = set(), [], [root]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                order.append(sub)
                stack.append(sub)
    return order


def find_class(qualified: str) -> type:
    """The live :class:`s4tf.Differentiable` subclass called ``qualified``.

    ``qualified`` is ``"module.QualName"``; when no class matches it exactly
    (a class saved from a script's ``__main__`` and loaded in a notebook) a
    unique match on the qualname alone is accepted. Nothing is imported.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.checkpoint.find_class("s4tf.differentiable.TangentVectorBase").__name__
    'TangentVectorBase'
    """
    if not isinstance(qualified, str):
        raise CheckpointError(f"the checkpoint names a class with {qualified!r}, not a string.")
    classes = _live_subclasses(Differentiable)
    exact = [c for c in classes if _qualified_name(c) == qualified]
    if exact:
        return exact[-1]  # a class redefined in a notebook: the newest definition
    by_name = [c for c in classes if qualified.endswith("." + c.__qualname__)]
    if len({_qualified_name(c) for c in by_name}) == 1:
        return by_name[-1]
    raise CheckpointError(
        f"the checkpoint's model uses the class {qualified!r}, which is not a subclass of "
        f"s4tf.Differentiable defined in this program"
        + (f" (several classes match: {sorted({_qualified_name(c) for c in by_name})})"
           if by_name else "")
        + ". s4tf never imports modules named in a file: import or define the class "
        "first, or pass like=model to s4tf.load."
    )


def _join(path: str, part) -> str:
    return f"{path}.{part}" if path else str(part)


def encode(value, tensors: dict, path: str = "", differentiable: bool = True, objects=None):
    """The JSON structure of ``value``; its tensors go into ``tensors[path]``.

    Python floats in differentiable positions are parameters and are stored as
    0-d float64 tensors; floats in ``no_derivative`` fields are JSON. With an
    ``objects`` list, classes, callables and values JSON cannot hold are kept
    there by reference (for rebuilding a value like a given one, never saved).
    """
    if isinstance(value, Tensor):
        key = path or _ROOT_KEY
        if key in tensors:
            raise CheckpointError(
                f"two values of the model map to the same checkpoint key {key!r}; "
                "dict keys must not contain '.' so that paths stay unique."
            )
        tensors[key] = value
        return {"kind": "tensor", "key": key}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        # Optimizer state dicts hold NumPy arrays; they come back as NumPy arrays.
        key = path or _ROOT_KEY
        if key in tensors:
            raise CheckpointError(f"two values map to the same checkpoint key {key!r}.")
        tensors[key] = value
        return {"kind": "ndarray", "key": key}
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return {"kind": "json", "value": value}
    if isinstance(value, float):
        if differentiable:
            key = path or _ROOT_KEY
            tensors[key] = np.asarray(value, dtype=np.float64)
            return {"kind": "float", "key": key}
        return {"kind": "json", "value": value}
    if isinstance(value, np.integer | np.floating | np.bool_):
        return encode(value.item(), tensors, path, differentiable, objects)
    if isinstance(value, DType):
        return {"kind": "dtype", "name": value.name}
    if isinstance(value, Differentiable):
        cls = type(value)
        fields = {}
        for name in cls._s4tf_all_fields:
            field_value = value.__dict__[name] if name in value.__dict__ else getattr(value, name)
            fields[name] = encode(field_value, tensors, _join(path, name),
                                  differentiable and name not in cls._s4tf_no_derivative, objects)
        node = {"kind": "node", "class": _qualified_name(cls), "fields": fields}
        if objects is not None:
            node["ref"] = _keep(objects, cls)
        return node
    if isinstance(value, State):
        return {"kind": "state", "value": encode(value.value, tensors, path, False, objects)}
    if isinstance(value, list | tuple):
        if isinstance(value, tuple) and type(value) is not tuple:
            # Named tuples would need their class: kept whole; like= supplies them.
            return _opaque(value, objects)
        items = [encode(v, tensors, _join(path, i), differentiable, objects)
                 for i, v in enumerate(value)]
        return {"kind": type(value).__name__, "items": items}
    if isinstance(value, dict):
        if not all(isinstance(k, str | int) and not isinstance(k, bool) for k in value):
            return _opaque(value, objects)
        return {"kind": "dict", "items": [
            [k, encode(v, tensors, _join(path, k), differentiable, objects)]
            for k, v in value.items()
        ]}
    if callable(value) and not isinstance(value, type):
        if objects is not None:
            return {"kind": "object", "ref": _keep(objects, value)}
        name = _callable_name(value)
        if name is not None:
            return {"kind": "callable", "name": name}
    return _opaque(value, objects)


def _keep(objects: list, value) -> int:
    objects.append(value)
    return len(objects) - 1


def _opaque(value, objects):
    if objects is not None:
        return {"kind": "object", "ref": _keep(objects, value)}
    # Saved only for the error message: load(path) cannot rebuild it, load(path,
    # like=model) takes the value from ``like``.
    return {"kind": "opaque", "type": _qualified_name(type(value)), "repr": repr(value)[:120]}


def decode(structure, arrays: dict, make_tensor: Callable, path: str = "", objects=None):
    """Rebuild the value :func:`encode` described, reading tensors from ``arrays``.

    ``make_tensor(numpy_array, key)`` turns a stored array into a Tensor;
    ``objects`` is the list :func:`encode` filled, when it was given one.
    """
    if not isinstance(structure, dict) or "kind" not in structure:
        raise CheckpointError(f"the checkpoint's structure is damaged at {path or 'the root'!r}.")
    kind = structure["kind"]
    where = path or "the root"
    if kind == "tensor":
        return make_tensor(_array(arrays, structure["key"]), structure["key"])
    if kind == "ndarray":
        return np.array(_array(arrays, structure["key"]), copy=True)
    if kind == "float":
        return float(_array(arrays, structure["key"]))
    if kind == "json":
        return structure["value"]
    if kind == "dtype":
        return as_dtype(structure["name"])
    if kind == "state":
        return State(decode(structure["value"], arrays, make_tensor, path, objects))
    if kind in ("list", "tuple"):
        items = [decode(s, arrays, make_tensor, _join(path, i), objects)
                 for i, s in enumerate(structure["items"])]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {k: decode(s, arrays, make_tensor, _join(path, k), objects) for k, s in structure["items"]}
    if kind == "object" and objects is not None:
        return objects[structure["ref"]]
    if kind == "callable":
        name = structure.get("name")
        registry = _callable_registry()
        if name not in registry:
            raise CheckpointError(
                f"the checkpoint's field {where!r} names the function {name!r}, which is not "
                "an s4tf function or one registered with s4tf.checkpoint.register_callable "
                "(s4tf never imports or runs code named in a file). Register it, or pass "
                "like=model to s4tf.load."
            )
        return registry[name]
    if kind == "node":
        if objects is not None and "ref" in structure:
            cls = objects[structure["ref"]]
        else:
            cls = find_class(structure.get("class"))
        fields = structure.get("fields", {})
        expected = set(cls._s4tf_all_fields)
        if set(fields) != expected:
            raise CheckpointError(
                f"the checkpoint's {cls.__qualname__} at {where!r} has fields "
                f"{sorted(fields)}, but the class defined now has {sorted(expected)}. "
                "Load with like=model built by the current code to see which weights differ."
            )
        return _new(cls, {n: decode(fields[n], arrays, make_tensor, _join(path, n), objects)
                          for n in cls._s4tf_all_fields})
    if kind == "opaque":
        raise CheckpointError(
            f"the checkpoint cannot rebuild the field {where!r}: it held a "
            f"{structure.get('type')} ({structure.get('repr')}), which a file cannot describe "
            "safely. Pass like=model (a model built by your code) to s4tf.load."
        )
    raise CheckpointError(f"the checkpoint has an unknown entry kind {kind!r} at {where!r}.")


def _array(arrays: dict, key) -> np.ndarray:
    if key not in arrays:
        raise CheckpointError(
            f"the checkpoint's structure refers to the tensor {key!r}, which the file does "
            "not hold: the file is damaged or was edited."
        )
    return arrays[key]


def is_finite_json(value) -> bool:
    """Whether ``value`` is JSON made of finite numbers (``extra=`` of training states)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if value is None or isinstance(value, bool | int | str):
        return True
    if isinstance(value, list | tuple):
        return all(is_finite_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_finite_json(v) for k, v in value.items())
    return False
