"""``tree_flatten`` and :class:`TreeDef`: a value as its leaves and its structure, and back.

This is the hot path of differentiation (every operator flattens its points
and rebuilds tangents from leaf cotangents), so it tests exact types before
isinstance chains and keeps a flatten plan per registered class.
:meth:`TreeDef.tangent_leaves` aligns a tangent with a structure, ``None`` and
``0.0`` standing for zero (:func:`is_zero`).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import FLOATING_NUMPY
from ..tensor import Tensor
from .registry import node_type

__all__ = ["TreeDef", "is_leaf", "is_zero", "tree_flatten", "tree_leaves", "tree_map",
           "tree_unflatten"]

_LEAF, _STATIC, _LIST, _TUPLE, _DICT, _NODE, _CELL = range(7)
_new = object.__new__


def is_zero(value) -> bool:
    """Whether ``value`` stands for a zero tangent of any shape: ``None`` or a numeric 0.

    Examples
    --------
    >>> from s4tf.tree import is_zero
    >>> is_zero(None), is_zero(0.0), is_zero(False), is_zero(1.0)
    (True, True, False, False)
    """
    if value is None:
        return True
    if type(value) in (float, int):
        return value == 0
    # Subclasses count (np.float64); a bool is never a tangent.
    return isinstance(value, (float, int)) and not isinstance(value, bool) and value == 0


class TreeDef:
    """The structure of a flattened value: rebuilds it from a list of leaves."""

    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta=None, children=()):
        self.kind = kind
        self.meta = meta
        self.children = children

    @property
    def num_leaves(self) -> int:
        if self.kind == _LEAF:
            return 1
        return sum(child.num_leaves for child in self.children)

    def unflatten(self, leaves):
        """The value with this structure and ``leaves`` in order."""
        if self.kind == _LEAF and type(leaves) is list and len(leaves) == 1:
            return leaves[0]  # the common point of differentiation: one tensor or float
        iterator = iter(leaves)
        value = self._build_all(iterator, tangent=False)
        if next(iterator, _END) is not _END:
            raise ValueError(f"too many leaves for this structure (it takes {self.num_leaves}).")
        return value

    def tangent_unflatten(self, leaves):
        """The tangent vector of a value of this structure, from leaf tangents.

        Registered nodes become their tangent class with only the
        differentiable fields; ``None`` leaves stay ``None``.
        """
        if self.kind == _LEAF and type(leaves) is list and leaves:
            return leaves[0]
        return self._build_all(iter(leaves), tangent=True)

    def tangent_leaves(self, tangent, context: str | None = None) -> list:
        """The leaf tangents of ``tangent``, aligned with this structure's leaves.

        ``None`` (or ``0.0``, or a missing field) stands for a zero tangent. A
        mismatch raises TypeError or ValueError; with ``context`` (e.g.
        ``"SGD.update: the gradients"``) the message starts with it and says
        what to pass instead.
        """
        out: list = []
        try:
            self._align(tangent, out)
        except (TypeError, ValueError) as error:
            if context is None:
                raise
            raise type(error)(
                f"{context} do not match the structure of the value ({str(error).rstrip('.')}). "
                "Pass its "
                "TangentVector, e.g. the gradient from s4tf.value_with_gradient(value, of=f)."
            ) from None
        return out

    def _align(self, tangent, out):
        kind = self.kind
        if kind == _LEAF:
            out.append(None if is_zero(tangent) else tangent)
            return
        if kind in (_STATIC, _CELL):
            return
        zero = is_zero(tangent)
        if kind in (_LIST, _TUPLE):
            if not (zero or isinstance(tangent, list | tuple)):
                raise TypeError(f"a tangent for a sequence must be a list or tuple (or None for "
                                f"zero), got {type(tangent).__name__}.")
            parts = [None] * len(self.children) if zero else tangent
            if len(parts) != len(self.children):
                raise ValueError(
                    f"a tangent for a sequence of {len(self.children)} values has {len(parts)}."
                )
            for child, part in zip(self.children, parts, strict=False):
                child._align(part, out)
            return
        if kind == _DICT:
            if not (zero or isinstance(tangent, dict)):
                raise TypeError(f"a tangent for a dict must be a dict (or None for zero), got "
                                f"{type(tangent).__name__}.")
            parts = {} if zero else tangent
            for key, child in zip(self.meta, self.children, strict=False):
                child._align(parts.get(key), out)
            return
        plan = self.meta[0]
        cls, names = plan.cls, plan.names
        if not zero:
            tangent_cls = node_type(cls).tangent
            # A value of the class itself holds a tangent in its differentiable fields:
            # jax.grad returns the gradient of a model in the model's own structure.
            if not isinstance(tangent, tangent_cls | cls):
                raise TypeError(
                    f"expected a {tangent_cls.__qualname__} (or None for zero), "
                    f"got {type(tangent).__name__}."
                )
        for name, child in zip(names, self.children, strict=False):
            child._align(None if zero else getattr(tangent, name, None), out)

    def _build_all(self, leaves, tangent):
        try:
            return self._build(leaves, tangent)
        except StopIteration:
            raise ValueError("too few leaves for this structure.") from None

    def _build(self, leaves, tangent):
        """The value (or tangent) from iterator ``leaves``; raises StopIteration when short."""
        kind = self.kind
        if kind == _LEAF:
            return next(leaves)
        if kind == _STATIC:
            return None if tangent else self.meta
        # Leaf children are taken inline: most children of a model are its tensors. (A
        # loop, not a comprehension: before Python 3.12 that is one more frame per node.)
        children = []
        for child in self.children:
            children.append(next(leaves) if child is LEAF_DEF else child._build(leaves, tangent))
        if kind == _NODE:  # the common structure of a model, tested first
            plan, static = self.meta
            if tangent:
                return plan.tangent(children)
            value = _new(plan.cls)  # new_instance without its frame, once per node
            state = value.__dict__
            state.update(static)
            state.update(zip(plan.names, children, strict=False))
            return value
        if kind == _LIST:
            return children
        if kind == _TUPLE:
            cls = self.meta
            if cls is tuple:
                return tuple(children)
            return cls(*children)
        if kind == _DICT:
            return dict(zip(self.meta, children, strict=False))
        return None if tangent else self.meta(children[0])  # a cell

    def __eq__(self, other):
        return (
            isinstance(other, TreeDef)
            and self.kind == other.kind
            and (self.kind in (_LEAF, _STATIC) or _meta_key(self) == _meta_key(other))
            and self.children == other.children
        )

    def __hash__(self):
        return hash((self.kind, len(self.children)))

    def __repr__(self):
        return f"TreeDef({_KIND_NAMES[self.kind]}, leaves={self.num_leaves})"


_END = object()
# Leaf structures carry nothing, so every leaf shares one (TreeDefs are never mutated);
# autodiff compares against it with ``is``. Shared within s4tf, not in __all__.
LEAF_DEF = TreeDef(_LEAF)
_KIND_NAMES = ["leaf", "static", "list", "tuple", "dict", "node", "cell"]


def _meta_key(treedef):
    if treedef.kind == _NODE:
        plan = treedef.meta[0]
        return plan.cls, plan.names
    return treedef.meta


def is_leaf(value, differentiable: bool = False) -> bool:
    """Whether ``value`` is a leaf: a Tensor (a floating one under differentiation) or a float."""
    if isinstance(value, Tensor):
        return not differentiable or value.dtype.is_floating
    return isinstance(value, float) and not isinstance(value, np.bool_)


def _flatten(value, leaves, differentiable):
    # Exact types first: the points and results of differentiation are almost always
    # plain Tensors, floats, lists, tuples or registered nodes (whose flatten plan is
    # cached per class), and a type test is far cheaper than an isinstance chain.
    kind = type(value)
    if kind is Tensor:
        if differentiable and not value.dtype.is_floating:
            return TreeDef(_STATIC, value)
        leaves.append(value)
        return LEAF_DEF
    if kind is float:
        leaves.append(value)
        return LEAF_DEF
    if kind is list or kind is tuple:
        children = []
        for v in value:
            children.append(_flatten(v, leaves, differentiable))
        return TreeDef(_LIST, None, tuple(children)) if kind is list else TreeDef(
            _TUPLE, tuple, tuple(children))
    plan = (_DIFFERENTIABLE_PLANS if differentiable else _PLANS).get(kind)
    if plan is not None:
        return _flatten_node(value, plan, leaves, differentiable)
    return _flatten_general(value, leaves, differentiable)


def _flatten_general(value, leaves, differentiable):
    """Subclasses (tracers, named tuples, ...), dicts, cells and static values."""
    if is_leaf(value, differentiable):
        leaves.append(value)
        return LEAF_DEF
    if isinstance(value, Tensor):
        return TreeDef(_STATIC, value)  # not floating, under differentiation
    if isinstance(value, list):
        return TreeDef(_LIST, None, tuple(_flatten(v, leaves, differentiable) for v in value))
    if isinstance(value, tuple):
        return TreeDef(_TUPLE, type(value), tuple(_flatten(v, leaves, differentiable) for v in value))
    if isinstance(value, dict):
        keys = tuple(value)
        return TreeDef(_DICT, keys, tuple(_flatten(value[k], leaves, differentiable) for k in keys))
    cls = value.__class__
    node = node_type(cls)
    if node is None:
        return TreeDef(_STATIC, value)
    if node.cell:
        if differentiable:
            return TreeDef(_STATIC, value)
        return TreeDef(_CELL, cls, (_flatten(value.value, leaves, differentiable),))
    return _flatten_node(value, _plan(cls, node, differentiable), leaves, differentiable)


class _Plan:
    """How instances of one registered class flatten and rebuild, made once per class.

    ``names`` are the fields flattened as children, ``static_names`` those kept
    as they are (``no_derivative`` fields under differentiation), both in field
    order. The tangent class and the fields it takes are looked up at the
    first tangent built.
    """

    __slots__ = ("cls", "names", "static_names", "_tangent")

    def __init__(self, cls, names, static_names):
        self.cls, self.names, self.static_names = cls, names, static_names
        self._tangent = None

    def tangent(self, children):
        """The tangent vector whose differentiable fields are ``children`` (in ``names`` order)."""
        if self._tangent is None:
            tangent_type = node_type(node_type(self.cls).tangent)
            # A hand-written TangentVector may name other fields: those it takes, by name.
            fields = None if tangent_type.fields == self.names else tangent_type.fields
            self._tangent = (tangent_type.cls, fields)
        cls, fields = self._tangent
        values = zip(self.names, children, strict=False)
        if fields is not None:
            given = dict(values)
            values = {n: given.get(n) for n in fields}
        value = _new(cls)  # new_instance without its frame, once per node of a gradient
        value.__dict__.update(values)
        return value


# class -> its _Plan, one table for each mode of flattening (under differentiation,
# no_derivative fields are static). Registered classes live as long as the program, so
# plain dicts are the caches.
_PLANS: dict = {}
_DIFFERENTIABLE_PLANS: dict = {}


def _plan(cls, node, differentiable):
    """How to flatten instances of ``cls`` (registered as ``node``), made once per class."""
    plans = _DIFFERENTIABLE_PLANS if differentiable else _PLANS
    plan = plans.get(cls)
    if plan is None:
        skip = node.no_derivative if differentiable else ()
        plan = plans[cls] = _Plan(cls, tuple(n for n in node.fields if n not in skip),
                                  tuple(n for n in node.fields if n in skip))
    return plan


def _flatten_node(value, plan, leaves, differentiable):
    state = value.__dict__
    children = []
    for name in plan.names:
        child = state[name] if name in state else getattr(value, name)  # else a class default
        # A tensor child (most of a model's) is taken inline: a leaf, or static when
        # differentiating an integer tensor.
        # (bfloat16, not in FLOATING_NUMPY, takes _flatten's general test).
        if type(child) is Tensor and (not differentiable or child._data.dtype in FLOATING_NUMPY):
            leaves.append(child)
            children.append(LEAF_DEF)
        else:
            children.append(_flatten(child, leaves, differentiable))
    static = {}
    for name in plan.static_names:
        static[name] = state[name] if name in state else getattr(value, name)
    return TreeDef(_NODE, (plan, static), tuple(children))


def tree_flatten(value, differentiable: bool = False):
    """``(leaves, treedef)``: the Tensor and float leaves of ``value`` and its structure.

    Examples
    --------
    >>> import s4tf
    >>> leaves, treedef = s4tf.tree_flatten({"a": [1.0, s4tf.ones([2])], "b": "text"})
    >>> len(leaves), s4tf.tree_unflatten(treedef, leaves)["b"]
    (2, 'text')
    """
    leaves: list = []
    treedef = _flatten(value, leaves, differentiable)
    return leaves, treedef


def tree_unflatten(treedef: TreeDef, leaves):
    """Rebuild a value from :func:`tree_flatten`'s ``treedef`` and (new) leaves."""
    return treedef.unflatten(leaves)


def tree_leaves(value, differentiable: bool = False) -> list:
    """The Tensor and float leaves of ``value``, in order."""
    return tree_flatten(value, differentiable)[0]


def tree_map(fn, tree, *rest, differentiable: bool = False):
    """Apply ``fn`` to every leaf (and the matching leaves of ``rest``), keeping the structure.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.tree_map(lambda a, b: a + b, [1.0, 2.0], [10.0, 20.0])
    [11.0, 22.0]
    """
    leaves, treedef = tree_flatten(tree, differentiable)
    others = []
    for other in rest:
        other_leaves, other_def = tree_flatten(other, differentiable)
        if len(other_leaves) != len(leaves):
            raise ValueError(
                f"tree_map: the trees differ in structure ({len(leaves)} leaves vs "
                f"{len(other_leaves)}); pass values of the same structure."
            )
        others.append(other_leaves)
    return treedef.unflatten([fn(*args) for args in zip(leaves, *others, strict=False)])
