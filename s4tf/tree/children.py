"""A value one level at a time: its children with their path keys, and the walks built on them.

:func:`tree_children` is the one decomposition every other walk uses
(checkpoints, summaries, tangent arithmetic); :func:`tree_leaf_paths` names
the leaves by dotted paths, and :func:`tree_map_broadcast` maps over several
trees where a leaf of one may stand for a whole subtree of another.
"""

from __future__ import annotations

from ..tensor import Tensor
from .flatten import is_leaf
from .registry import new_instance, node_type

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
    level = _level(value)
    if level is None:
        return None, []
    kind, keys, children, node = level
    if kind == "cell":
        return kind, [(None, children[0], False)]
    skip = node.no_derivative if node is not None else ()
    return kind, [(key, child, key not in skip) for key, child in zip(keys, children, strict=True)]


def _level(value):
    """``(kind, keys, children, node type or None)`` of a container (see
    :func:`tree_children`); None for anything else."""
    cls = type(value)
    if cls is list or cls is tuple:  # the common containers first: no lookups
        return ("list" if cls is list else "tuple"), range(len(value)), value, None
    node = node_type(cls)
    if node is None:
        if isinstance(value, (Tensor, str)):
            return None
        if isinstance(value, (list, tuple)):
            return ("list" if isinstance(value, list) else "tuple"), range(len(value)), value, None
        if isinstance(value, dict):
            return "dict", list(value), list(value.values()), None
        node = node_type(value.__class__)  # a consumed model answers its live class
        if node is None:
            return None
    if node.cell:
        return "cell", (None,), [value.value], node
    return "node", node.fields, node.children(value), node


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
# Exact types that are never containers: a value of one is a leaf without a lookup.
_ATOMS = frozenset({Tensor, float, int, bool, str, type(None)})
_all_atoms = _ATOMS.issuperset


def _broadcast(fn, values, is_leaf):
    for index, value in enumerate(values):
        if type(value) in _ATOMS or (is_leaf is not None and is_leaf(value)):
            continue
        level = _level(value)
        if level is not None:
            lead = index  # the first container gives the structure here
            break
    else:
        return fn(*values)
    kind, keys, children, node = level
    if len(values) == 1:
        new = [fn(child) if type(child) in _ATOMS else _broadcast(fn, (child,), is_leaf)
               for child in children]
    else:
        lead_value = values[lead]
        columns = []
        for i, value in enumerate(values):
            if i == lead:
                columns.append(children)
            elif i < lead or type(value) in _ATOMS or (is_leaf is not None and is_leaf(value)):
                columns.append([value] * len(keys))  # a leaf meets every leaf of the subtree
            elif node is not None and type(value) is type(lead_value):
                columns.append(node.children(value))  # one registered class: the same fields
            else:
                columns.append(_children_at(kind, keys, value))
        # Rows of leaves (most rows: a model's tensors) go to fn without a call of their own.
        new = [fn(*row) if _all_atoms(map(type, row)) else _broadcast(fn, row, is_leaf)
               for row in zip(*columns, strict=True)]
    return _rebuild(kind, values[lead], keys, new, node)


def _children_at(kind, keys, value) -> list:
    """The children of ``value`` under ``keys``, a container of ``kind`` holds; ``value``
    itself for each key when it is no container."""
    level = _level(value)
    if level is None:
        return [value] * len(keys)
    other_kind, other_keys, children, _ = level
    family = _FAMILY[kind]
    if _FAMILY[other_kind] == family:
        # Dicts and nodes may hold more than the lead (another tangent class); sequences not.
        if family == "sequence":
            if len(children) == len(keys):
                return children
        else:
            by_key = dict(zip(other_keys, children, strict=True))
            if all(key in by_key for key in keys):
                return [by_key[key] for key in keys]
    raise ValueError(
        f"the trees differ in structure: a {kind} with keys {list(keys)} meets a {other_kind} "
        f"with keys {list(other_keys)}; pass values of the same structure."
    )


def _rebuild(kind, value, keys, children, node):
    """A container like ``value`` (of ``kind`` and ``node`` type, from :func:`_level`)
    with new children."""
    if kind == "list":
        return children
    if kind == "tuple":
        return tuple(children) if type(value) is tuple else type(value)(*children)
    if kind == "dict":
        return dict(zip(keys, children, strict=True))
    if node.cell:
        return node.cls(children[0])
    return new_instance(node.cls, zip(node.fields, children, strict=True))
