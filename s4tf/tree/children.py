"""A value one level at a time: its children with their path keys, and the walks built on them.

:func:`tree_children` is the one decomposition every other walk uses
(checkpoints, summaries, tangent arithmetic); :func:`tree_leaf_paths` names
the leaves by dotted paths, and :func:`tree_map_broadcast` maps over several
trees where a leaf of one may stand for a whole subtree of another.
"""

from __future__ import annotations

from ..tensor import Tensor
from .flatten import is_leaf
from .registry import node_type

__all__ = ["join_path", "tree_children", "tree_leaf_paths", "tree_map_broadcast"]


def tree_children(value):
    """``(kind, [(key, child, differentiable), ...])``: one level of ``value``.

    ``kind`` is ``"list"`` or ``"tuple"`` (keys 0, 1, ...), ``"dict"`` (its
    keys), ``"node"`` (field names), ``"cell"`` (one child under the key
    ``None``: a cell's value stands at the cell's own path), or ``None`` for a
    leaf or a static value, which have no children. ``differentiable`` says
    whether differentiation sees the child (not in a ``no_derivative`` field
    or a cell).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.tree import tree_children
    >>> tree_children({"w": 1.0, "state": s4tf.State(2.0)})
    ('dict', [('w', 1.0, True), ('state', State(2.0), True)])
    >>> tree_children(s4tf.State(2.0))
    ('cell', [(None, 2.0, False)])
    """
    if isinstance(value, Tensor):
        return None, []
    if isinstance(value, list | tuple):
        return ("list" if isinstance(value, list) else "tuple"), [
            (i, child, True) for i, child in enumerate(value)]
    if isinstance(value, dict):
        return "dict", [(key, child, True) for key, child in value.items()]
    node = node_type(value.__class__)
    if node is None:
        return None, []
    if node.cell:
        return "cell", [(None, value.value, False)]
    skip = node.no_derivative
    return "node", [(name, child, name not in skip)
                    for name, child in zip(node.fields, node.children(value), strict=True)]


def join_path(path: str, key) -> str:
    """The dotted path of child ``key`` under ``path`` (a cell's ``None`` key adds nothing).

    Examples
    --------
    >>> from s4tf.tree import join_path
    >>> join_path("", "conv"), join_path("conv", "filter"), join_path("layers", 0)
    ('conv', 'conv.filter', 'layers.0')
    """
    if key is None:
        return path
    return f"{path}.{key}" if path else str(key)


def tree_leaf_paths(value, differentiable: bool = False) -> list[str]:
    """Dotted paths of the leaves of ``value``, in :func:`tree_leaves` order.

    A leaf that is the whole value is ``"value"``. Optimizers name parameters
    by these paths in their state and error messages.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.tree import tree_leaf_paths
    >>> tree_leaf_paths({"a": [s4tf.ones([2]), 1.0]}, differentiable=True)
    ['a.0', 'a.1']
    """
    out: list[str] = []
    _leaf_paths(value, "", differentiable, out)
    return out


def _leaf_paths(value, path, differentiable, out):
    if is_leaf(value, differentiable):
        out.append(path or "value")
        return
    for key, child, seen in tree_children(value)[1]:
        if seen or not differentiable:
            _leaf_paths(child, join_path(path, key), differentiable, out)


def tree_map_broadcast(fn, tree, *rest, is_leaf=None):
    """``fn`` over the leaves of several trees, where a leaf may stand for a whole subtree.

    The first tree (in order) that has a container at a position gives the
    structure there; a leaf of another tree at that position (a scalar, or
    ``None`` for zero) meets every leaf below it, as JAX broadcasts a tree
    prefix. Two containers at one position must be of one kind (sequences of
    one length; dicts or nodes holding at least the first one's keys). ``fn``
    sees every value that is no container, static ones too (``None``, a
    string in a ``no_derivative`` field), and every field of a node;
    ``is_leaf(value)`` marks containers to treat as leaves.

    Examples
    --------
    >>> from s4tf.tree import tree_map_broadcast
    >>> tree_map_broadcast(lambda a, b: a * b, {"w": [1.0, 2.0], "b": 3.0}, 10.0)
    {'w': [10.0, 20.0], 'b': 30.0}
    """
    return _broadcast(fn, (tree, *rest), is_leaf)


_FAMILY = {"list": "sequence", "tuple": "sequence", "dict": "dict", "node": "node", "cell": "cell"}


def _children_of(value, is_leaf):
    if is_leaf is not None and is_leaf(value):
        return None, []
    return tree_children(value)


def _broadcast(fn, values, is_leaf):
    split = [_children_of(v, is_leaf) for v in values]
    lead = next((i for i, (kind, _) in enumerate(split) if kind is not None), None)
    if lead is None:
        return fn(*values)
    kind, items = split[lead]
    keys = [key for key, _, _ in items]
    columns = []
    for value, (other_kind, other_items) in zip(values, split, strict=True):
        if other_kind is None:
            columns.append([value] * len(keys))  # a leaf meets every leaf of the subtree
            continue
        by_key = {key: child for key, child, _ in other_items}
        # Dicts and nodes may hold more than the lead (another tangent class); sequences not.
        if _FAMILY[other_kind] != _FAMILY[kind] or any(key not in by_key for key in keys) or (
                _FAMILY[kind] == "sequence" and len(other_items) != len(keys)):
            raise ValueError(
                f"the trees differ in structure: a {kind} with keys {keys} meets a "
                f"{other_kind} with keys {list(by_key)}; pass values of the same structure."
            )
        columns.append([by_key[key] for key in keys])
    children = [_broadcast(fn, row, is_leaf) for row in zip(*columns, strict=True)]
    return _rebuild(kind, values[lead], keys, children)


def _rebuild(kind, value, keys, children):
    """A container like ``value`` (of ``kind``, from :func:`tree_children`) with new children."""
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children) if type(value) is tuple else type(value)(*children)
    if kind == "dict":
        return dict(zip(keys, children, strict=True))
    return node_type(value.__class__).build(
        dict(zip(keys if kind == "node" else ("value",), children, strict=True)))
