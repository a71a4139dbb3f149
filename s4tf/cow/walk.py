"""Walking a model for copy-on-write: who else can see each part, and rebuilding it.

:func:`analyze` visits a value in the order of
``tree_flatten(value, differentiable=True)`` and decides, for every leaf,
whether its storage may be written in place: only when every object on the
path root -> fields -> containers -> Tensor -> storage is referenced by its
parent alone (and the storage owns its memory). :func:`rebuild` then makes the
new value from the new leaves, reusing nothing of the old containers, and gives
the new value its own copy of every ``State`` cell someone else can still see.

This walk is its own, not :mod:`s4tf.tree`'s: it compares reference counts,
so it must not hold a single extra reference (a child list, a tuple of
children) while it looks. It reads the same field plans, from the tree's
registry.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from ..liveness import agreed_counts
from ..tensor import Tensor
from ..tree import NodeType, node_type, register_cell, register_node

__all__ = ["Analysis", "analyze", "calibrate_inner", "rebuild", "rebuild_consumed"]

_MISSING = object()

# (parent kind, child kind) -> the count a uniquely held child shows inside
# _unique; filled by calibrate_inner(). A pair missing here means "copy".
_EXPECTED: dict[tuple[str, str], int] = {}
# While calibrating: (parent kind, child kind) -> counts seen.
_recording: dict | None = None


class Analysis:
    """What :func:`analyze` found: the leaves, and which may be written in place."""

    __slots__ = ("leaves", "in_place", "copy_cells", "blocker", "visited")

    def __init__(self) -> None:
        self.leaves: list = []
        self.in_place: list[bool] = []
        self.copy_cells: dict[int, object] = {}  # id -> a State cell to copy
        self.blocker = None  # the first object found shared (for S4TF_DEBUG reports)
        self.visited: set[int] = set()  # ids of the model's own objects, not "other holders"


def _unique(parent: str, kind: str, obj, found: Analysis) -> bool:
    count = sys.getrefcount(obj)
    if _recording is not None:
        _recording.setdefault((parent, kind), []).append(count)
        return True
    expected = _EXPECTED.get((parent, kind))
    if expected is None or count > expected or weakref.getweakrefcount(obj):
        if found.blocker is None:
            found.blocker = obj
        return False
    return True


def _storage_unique(tensor: Tensor, found: Analysis) -> bool:
    backend, data = tensor._backend, tensor._data
    if not backend.supports_inplace:
        return False
    # The backend knows its arrays (NumPy's, CuPy's): a view shares memory with
    # another array; a read-only or foreign buffer is not ours to write.
    if not backend.owns_storage(data):
        if found.blocker is None:
            found.blocker = data
        return False
    return _unique("tensor", "storage", data, found)


def analyze(value, root_unique: bool) -> Analysis:
    """Leaves of ``value`` and whether each may be written in place.

    ``root_unique`` says whether the caller held the only reference to ``value``
    itself (decided from the calibrated root count by the entry point).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.cow.walk import analyze
    >>> found = analyze([s4tf.ones([2]), 1.0], root_unique=False)
    >>> len(found.leaves), found.in_place
    (2, [False, False])
    """
    found = Analysis()
    _visit(value, "root", root_unique, found)
    return found


def _visit(value, parent: str, unique: bool, found: Analysis) -> None:
    # Mirrors tree._flatten(differentiable=True): the same leaves in the same order.
    found.visited.add(id(value))
    if isinstance(value, Tensor):
        if not value.dtype.is_floating:
            return
        if unique and parent != "root":
            unique = type(value) is Tensor and _unique(parent, "tensor", value, found)
        if unique:
            unique = _storage_unique(value, found)
        found.leaves.append(value)
        found.in_place.append(unique and parent != "root")
        return
    if isinstance(value, float) and not isinstance(value, np.bool_):
        found.leaves.append(value)
        found.in_place.append(False)
        return
    if isinstance(value, list | tuple):
        kind = "list" if isinstance(value, list) else "tuple"
        if unique and parent != "root":
            unique = _unique(parent, kind, value, found)
        for item in value:
            _visit(item, kind, unique, found)
        return
    if isinstance(value, dict):
        if unique and parent != "root":
            unique = _unique(parent, "dict", value, found)
        for item in value.values():
            _visit(item, "dict", unique, found)
        return
    node = node_type(value.__class__)
    if node is None:
        return
    if node.cell:
        _visit_cell(value, parent, unique, found)
        return
    if unique and parent != "root":
        unique = _unique(parent, "node", value, found)
    state = value.__dict__
    found.visited.add(id(state))
    if unique:
        unique = _unique("node", "fields", state, found)
    for name in node.fields:
        field = state.get(name, _MISSING)
        if field is _MISSING:
            field = getattr(value, name)
        if name in node.no_derivative:
            if _is_cell(field):
                _visit_cell(field, "static", unique, found)
            continue
        _visit(field, "node", unique, found)


def _is_cell(value) -> bool:
    node = node_type(type(value))
    return node is not None and node.cell


def _visit_cell(cell, parent: str, unique: bool, found: Analysis) -> None:
    if not (unique and parent != "root" and _unique(parent, "state", cell, found)):
        found.copy_cells[id(cell)] = cell


def rebuild(value, leaves, found: Analysis):
    """The value with ``value``'s structure and the new ``leaves`` (an iterator)."""
    return _build(value, leaves, found, {})


def rebuild_consumed(cls: type, fields: dict, leaves, found: Analysis):
    """Like :func:`rebuild` for a root already consumed: its class and old fields."""
    return _build_node(node_type(cls), fields, leaves, found, {})


def _build(value, leaves, found, memo):
    if isinstance(value, Tensor):
        return next(leaves) if value.dtype.is_floating else value
    if isinstance(value, float) and not isinstance(value, np.bool_):
        return next(leaves)
    if isinstance(value, list):
        return [_build(v, leaves, found, memo) for v in value]
    if isinstance(value, tuple):
        children = [_build(v, leaves, found, memo) for v in value]
        return tuple(children) if type(value) is tuple else type(value)(*children)
    if isinstance(value, dict):
        return {k: _build(v, leaves, found, memo) for k, v in value.items()}
    node = node_type(value.__class__)
    if node is None:
        return value
    if node.cell:
        return _cell(value, found, memo)
    return _build_node(node, value.__dict__, leaves, found, memo)


def _build_node(node: NodeType, state, leaves, found, memo):
    out = {}
    for name, field in state.items():
        if name in node.no_derivative:
            out[name] = _cell(field, found, memo) if _is_cell(field) else field
        elif name in node.fields:
            out[name] = _build(field, leaves, found, memo)
        else:
            out[name] = field
    return node.build(out)


def _cell(cell, found: Analysis, memo: dict):
    if id(cell) not in found.copy_cells:
        return cell
    copied = memo.get(id(cell))
    if copied is None:
        value = cell.value
        if isinstance(value, list | dict):
            value = type(value)(value)
        copied = memo[id(cell)] = node_type(type(cell)).build({"value": value})
    return copied


class _ProbeNode:
    """A node of the probe model, registered like a Differentiable class: a field ``x``
    and a ``no_derivative`` cell (cow knows models only through the tree's registry)."""


class _ProbeCell:
    """A cell of the probe model, laid out as ``State``."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value


register_node(_ProbeNode, ("x", "cell"), no_derivative=("cell",))
register_cell(_ProbeCell)


def _node(x):
    # Built as the tree builds nodes (their __dict__ made at once), as models are.
    return node_type(_ProbeNode).build({"x": x, "cell": _ProbeCell(0.0)})


def _probe_model():
    """A private model holding one fresh child of every kind in every container kind."""
    def child(kind):
        fresh = Tensor(np.zeros(2, np.float32))
        return {
            "tensor": lambda: fresh,
            "node": lambda: _node(fresh),
            "list": lambda: [fresh],
            "tuple": lambda: (fresh,),
            "dict": lambda: {"k": fresh},
            "state": lambda: _ProbeCell(fresh),
        }[kind]()

    kinds = ("tensor", "node", "list", "tuple", "dict", "state")
    parents = {
        "node": _node,
        "list": lambda c: [c],
        "tuple": lambda c: (c,),
        "dict": lambda c: {"k": c},
    }
    items = [parents[p](child(k)) for p in parents for k in kinds]
    return _node(items)


def calibrate_inner() -> None:
    """Measure the count of a uniquely held child, per (parent, child) kind.

    A pair whose counts disagree across the probe is left out, so it copies.
    """
    global _recording
    _recording = {}
    try:
        analyze(_probe_model(), root_unique=True)
        seen, _recording = _recording, None
    finally:
        _recording = None
    _EXPECTED.clear()
    _EXPECTED.update(agreed_counts(seen))
