"""A value's structure as JSON, and its tensors under dotted paths.

:func:`encode` walks a model (Differentiable dataclasses, lists, tuples, dicts,
State cells) and returns a JSON description of everything that is not a tensor
plus a ``{dotted.path: Tensor}`` table. :func:`decode` rebuilds a value from
both. Decoding never imports a module and never unpickles: classes are found
among the live subclasses of :class:`s4tf.Differentiable` by qualified name and
callables in the registry of :mod:`s4tf.checkpoint.callables` (activations
such as ``"s4tf.relu"`` and functions the user registered). Without ``like=``
every rebuilt field is checked against its class's annotation
(:mod:`s4tf.checkpoint.field_types`), every tensor's dtype against s4tf's (a
parameter's against the floating dtypes) and every library layer's tensor
shapes against each other (:mod:`s4tf.checkpoint.layer_shapes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..differentiable import Differentiable, State
from ..dtypes import DType, as_dtype
from ..tensor import Tensor
from ..tree import join_path, node_type, tree_children
from .callables import callable_name, register_callable, registered_callable
from .errors import CheckpointError
from .field_types import check_field
from .layer_shapes import check_shapes

__all__ = ["CheckpointError", "decode", "encode", "find_class", "register_callable"]

_ROOT_KEY = "value"  # the key of a value that is itself one tensor
# How deep values may nest (a model's field inside a list inside a model is
# three levels). Real models stay far below; the limit turns a crafted or
# cyclic structure into a CheckpointError before Python's recursion limit does.
MAX_DEPTH = 128


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
    >>> s4tf.checkpoint.find_class("s4tf.differentiable.base.TangentVectorBase").__name__
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


def encode(value, tensors: dict, path: str = "", differentiable: bool = True, objects=None,
           depth: int = 0):
    """The JSON structure of ``value``; its tensors go into ``tensors[path]``.

    Python floats in differentiable positions are parameters and are stored as
    0-d float64 tensors; floats in ``no_derivative`` fields are JSON. With an
    ``objects`` list, classes, callables and values JSON cannot hold are kept
    there by reference (for rebuilding a value like a given one, never saved).
    """
    if depth > MAX_DEPTH:
        raise CheckpointError(
            f"the value nests deeper than {MAX_DEPTH} levels at {path!r} (or contains itself); "
            "s4tf checkpoints hold models nested at most that deep."
        )
    inner = depth + 1
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
        return encode(value.item(), tensors, path, differentiable, objects, depth)
    if isinstance(value, DType):
        return {"kind": "dtype", "name": value.name}
    kind, children = tree_children(value)
    if kind == "node":
        node = {"kind": "node", "class": _qualified_name(type(value)), "fields": {
            name: encode(child, tensors, join_path(path, name), differentiable and seen, objects,
                         inner)
            for name, child, seen in children}}
        if objects is not None:
            node["ref"] = _keep(objects, type(value))
        return node
    if kind == "cell":
        [(_, child, _)] = children
        return {"kind": "state", "value": encode(child, tensors, path, False, objects, inner)}
    if kind in ("list", "tuple", "dict") and _describable(value):
        items = [[key, encode(child, tensors, join_path(path, key), differentiable, objects, inner)]
                 for key, child, _ in children]
        return {"kind": kind, "items": items if kind == "dict" else [item for _, item in items]}
    if callable(value) and not isinstance(value, type):
        if objects is not None:
            return {"kind": "object", "ref": _keep(objects, value)}
        name = callable_name(value)
        if name is not None:
            return {"kind": "callable", "name": name}
    return _opaque(value, objects)


def _describable(value) -> bool:
    """Whether JSON can describe container ``value`` item by item."""
    if isinstance(value, tuple):
        return type(value) is tuple  # named tuples need their class: kept whole (like= has it)
    if isinstance(value, dict):
        return all(isinstance(k, str | int) and not isinstance(k, bool) for k in value)
    return True


def _keep(objects: list, value) -> int:
    objects.append(value)
    return len(objects) - 1


def _opaque(value, objects):
    if objects is not None:
        return {"kind": "object", "ref": _keep(objects, value)}
    # Saved only for the error message: load(path) cannot rebuild it, load(path,
    # like=model) takes the value from ``like``.
    return {"kind": "opaque", "type": _qualified_name(type(value)), "repr": repr(value)[:120]}


def decode(structure, arrays: dict, make_tensor: Callable, path: str = "", objects=None,
           depth: int = 0, differentiable: bool | None = None):
    """Rebuild the value :func:`encode` described, reading tensors from ``arrays``.

    ``make_tensor(numpy_array, key)`` turns a stored array into a Tensor;
    ``objects`` is the list :func:`encode` filled, when it was given one. Without
    ``objects`` the structure comes from a file and is trusted for nothing:
    every entry's form, every tensor's dtype and every field's kind (against
    its class's annotation) is checked, and a :class:`CheckpointError` names
    the first that is wrong. ``differentiable`` says whether ``structure``
    stands in a field differentiation sees (``None``: in no field yet, as the
    root); a tensor there is a parameter and must be floating point.
    """
    where = path or "the root"
    if depth > MAX_DEPTH:
        raise CheckpointError(
            f"the checkpoint's structure nests deeper than {MAX_DEPTH} levels at {where!r}; "
            "s4tf never writes such files: it is damaged or was crafted."
        )
    kind = structure.get("kind") if isinstance(structure, dict) else None
    if kind is None:
        raise CheckpointError(f"the checkpoint's structure is damaged at {where!r}.")
    inner = depth + 1
    if kind == "tensor":
        key = structure.get("key")
        array = _tensor_array(arrays, key, where)
        if differentiable and objects is None and not as_dtype(array.dtype).is_floating:
            raise CheckpointError(
                f"the checkpoint's tensor {key!r} (field {where!r}) has dtype {array.dtype}, but "
                "it stands in a differentiable field, which holds floating-point parameters "
                "(float16, bfloat16, float32, float64). The file was edited or damaged; if your "
                "class keeps integers there, mark that field s4tf.no_derivative(), or load with "
                "like=model built by your code."
            )
        return make_tensor(array, key)
    if kind == "ndarray":
        return np.array(_array(arrays, structure.get("key")), copy=True)
    if kind == "float":
        array = _array(arrays, structure.get("key"))
        if array.shape != () or array.dtype.kind != "f":
            raise CheckpointError(
                f"the checkpoint's float at {where!r} is stored as a {array.dtype} array of "
                f"shape {array.shape}, not a scalar: the file is damaged or was edited."
            )
        return float(array)
    if kind == "json":
        return _json_value(structure, where)
    if kind == "dtype":
        try:
            return as_dtype(structure.get("name"))
        except TypeError:
            raise CheckpointError(
                f"the checkpoint's field {where!r} names the dtype {structure.get('name')!r}, "
                "which s4tf does not have."
            ) from None
    if kind == "state":
        return State(decode(structure.get("value"), arrays, make_tensor, path, objects, inner,
                            False))
    if kind in ("list", "tuple"):
        items = [decode(s, arrays, make_tensor, join_path(path, i), objects, inner, differentiable)
                 for i, s in enumerate(_entries(structure, where))]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        pairs = _entries(structure, where)
        if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str | int)
                   and not isinstance(p[0], bool) for p in pairs):
            raise CheckpointError(f"the checkpoint's dict at {where!r} is damaged.")
        return {k: decode(s, arrays, make_tensor, join_path(path, k), objects, inner,
                          differentiable) for k, s in pairs}
    if kind == "object" and objects is not None:
        return objects[structure["ref"]]
    if kind == "callable":
        return registered_callable(structure.get("name"), where)
    if kind == "node":
        return _decode_node(structure, arrays, make_tensor, path, objects, inner,
                            differentiable is not False)
    if kind == "opaque":
        raise CheckpointError(
            f"the checkpoint cannot rebuild the field {where!r}: it held a "
            f"{structure.get('type')} ({structure.get('repr')}), which a file cannot describe "
            "safely. Pass like=model (a model built by your code) to s4tf.load."
        )
    raise CheckpointError(f"the checkpoint has an unknown entry kind {kind!r} at {where!r}.")


def _decode_node(structure, arrays, make_tensor, path, objects, depth, differentiable):
    where = path or "the root"
    if objects is not None and "ref" in structure:
        cls = objects[structure["ref"]]
    else:
        cls = find_class(structure.get("class"))
    fields = structure.get("fields")
    expected = set(cls._s4tf_all_fields)
    if not isinstance(fields, dict) or set(fields) != expected:
        found = sorted(fields) if isinstance(fields, dict) else fields
        raise CheckpointError(
            f"the checkpoint's {cls.__qualname__} at {where!r} has fields "
            f"{found}, but the class defined now has {sorted(expected)}. "
            "Load with like=model built by the current code to see which weights differ."
        )
    values = {}
    static = node_type(cls).no_derivative
    for name in cls._s4tf_all_fields:
        values[name] = decode(fields[name], arrays, make_tensor, join_path(path, name), objects,
                              depth, differentiable and name not in static)
        if objects is None:
            # With like=, the classes and static fields are the caller's own.
            check_field(cls, name, values[name], join_path(path, name))
    if objects is None:
        check_shapes(cls, values, where)
    return node_type(cls).build(values)


def _entries(structure: dict, where: str) -> list:
    items = structure.get("items")
    if not isinstance(items, list):
        raise CheckpointError(f"the checkpoint's {structure['kind']} at {where!r} is damaged.")
    return items


def _json_value(structure: dict, where: str):
    value = structure.get("value")
    if value is not None and not isinstance(value, bool | int | float | str):
        # encode writes only scalars as JSON; containers are described item by item.
        raise CheckpointError(
            f"the checkpoint's value at {where!r} is a JSON {type(value).__name__}, which "
            "s4tf never writes there: the file is damaged or was edited."
        )
    return value


def _tensor_array(arrays: dict, key, where: str) -> np.ndarray:
    array = _array(arrays, key)
    try:
        as_dtype(array.dtype)
    except TypeError:
        raise CheckpointError(
            f"the checkpoint's tensor {key!r} (field {where!r}) has dtype {array.dtype}, which is "
            "not an s4tf dtype (float16, bfloat16, float32, float64, int8, uint8, int16, "
            "int32, int64, bool): the file was not written by s4tf.save or was edited."
        ) from None
    return array


def _array(arrays: dict, key) -> np.ndarray:
    if not isinstance(key, str) or key not in arrays:
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
