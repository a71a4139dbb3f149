"""Reaching into a value by dotted path: :func:`get` and :func:`at` (model surgery).

A path is the dotted name of :func:`~s4tf.tree.tree_leaf_paths`
(``"blocks.3.conv.filter"``): field names, list and tuple indices as
numbers, dict keys. A :class:`~s4tf.State` cell stands at its own path, so
``"bn.running_mean"`` names the cell and :func:`at` there replaces the
cell's content. :func:`at` rebuilds only the containers along the path
(nodes without ``__init__``, as every rebuild does), so everything else,
tensors included, is shared with the old value, which stays as it was.
"""

from __future__ import annotations

from .children import tree_children
from .registry import node_type

__all__ = ["at", "get"]


def _parts(path) -> list[str]:
    if not isinstance(path, str):
        raise TypeError(f"a path is a dotted string such as 'blocks.3.conv.filter'; "
                        f"received {path!r}.")
    return [] if path in ("", "value") else path.split(".")


def _child(value, part: str, path_so_far: str, whole: str):
    """``(key, child)`` of ``value`` named ``part``; a KeyError naming what is there."""
    kind, children = tree_children(value)
    for key, child, _ in children:
        if key is not None and str(key) == part:
            return key, child
    where = path_so_far or "the value"
    if kind in ("list", "tuple"):
        has = f"it is a {kind} of {len(children)} (indices 0 to {len(children) - 1})"
    elif kind in ("dict", "node"):
        has = f"its {'keys' if kind == 'dict' else 'fields'} are " + ", ".join(
            repr(str(key)) for key, _, _ in children)
    else:
        has = f"it is a {type(value).__name__}, which has no parts"
    raise KeyError(f"path {whole!r}: {where} has no {part!r}; {has}.")


def get(value, path: str):
    """The part of ``value`` at dotted ``path``.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.layers.Sequential(s4tf.layers.Dense(2, 3), s4tf.layers.Dense(3, 1))
    >>> s4tf.tree.get(model, "layers.1.weight").shape
    (3, 1)
    """
    done = ""
    for part in _parts(path):
        _, value = _child(value, part, done, path)
        done = f"{done}.{part}" if done else part
    return value


def at(value, path: str, new):
    """``value`` with the part at dotted ``path`` replaced by ``new``: a new value.

    Any depth; list and tuple indices are numbers, dict keys as they are
    written. Only the containers on the path are rebuilt (the rest, tensors
    included, is shared); ``value`` is unchanged. A path ending at a
    :class:`~s4tf.State` cell replaces the cell's content. A missing part
    raises ``KeyError`` naming it and what is there instead.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.layers.Sequential(s4tf.layers.Dense(2, 3), s4tf.layers.Dense(3, 1))
    >>> new = s4tf.tree.at(model, "layers.1.bias", s4tf.Tensor([5.0]))
    >>> new.layers[1].bias.tolist(), model.layers[1].bias.tolist()
    ([5.0], [0.0])
    """
    return _at(value, _parts(path), 0, new, path)


def _at(value, parts, depth, new, whole):
    if depth == len(parts):
        if tree_children(value)[0] == "cell" and tree_children(new)[0] != "cell":
            return node_type(value.__class__).build({"value": new})
        return new
    key, child = _child(value, parts[depth], ".".join(parts[:depth]), whole)
    replaced = _at(child, parts, depth + 1, new, whole)
    kind, children = tree_children(value)
    if kind == "list":
        return [replaced if k == key else c for k, c, _ in children]
    if kind == "tuple":
        items = [replaced if k == key else c for k, c, _ in children]
        return tuple(items) if type(value) is tuple else type(value)(*items)
    if kind == "dict":
        return {k: replaced if k == key else c for k, c, _ in children}
    # A node: its fields, the one on the path replaced, rebuilt as its own class.
    return node_type(value.__class__).build(
        [(k, replaced if k == key else c) for k, c, _ in children])
