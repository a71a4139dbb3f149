"""Reverse mode: recording pullbacks while tracing, and the backward pass.

Each primitive applied to a tracer of a :class:`ReverseTrace` records a
:class:`Node` (rule, inputs, output, parent nodes). The backward pass walks the
nodes reachable from the outputs in reverse creation order and accumulates
cotangents in a table it owns, so it may add into its own buffers in place;
indexing rules scatter-add straight into their parent's buffer ("inout").
A pullback may be called many times: each call runs a fresh pass.
"""

from __future__ import annotations

import itertools

from ..creation import zeros_like
from ..tensor import Tensor
from .cotangents import IndexAdd
from .tracer import Trace, Tracer, innermost

__all__ = ["Node", "ReverseTrace", "ReverseTracer", "backward"]

_sequence = itertools.count()


class Node:
    """One recorded application: ``out = rule-owner(*args, **params)``."""

    __slots__ = ("seq", "vjp", "args", "params", "out", "parents")

    def __init__(self, vjp, args, params, out, parents):
        self.seq = next(_sequence)
        self.vjp = vjp
        self.args = args
        self.params = params
        self.out = out
        self.parents = parents


class ReverseTracer(Tracer):
    """A value being differentiated in reverse mode."""

    __slots__ = ("_node",)

    def __init__(self, trace, primal, node):
        self._trace = trace
        self._primal = primal
        self._node = node


def _is_differentiable_value(value) -> bool:
    value = innermost(value)
    if isinstance(value, Tensor):
        return value.dtype.is_floating
    return isinstance(value, float)


class ReverseTrace(Trace):
    """A level of reverse-mode differentiation."""

    __slots__ = ()

    def new_leaf(self, primal) -> ReverseTracer:
        return ReverseTracer(self, primal, Node(None, (), {}, primal, ()))

    def process(self, primitive, args, params):
        primals, parents = [], []
        for arg in args:
            if isinstance(arg, ReverseTracer) and arg._trace is self:
                primals.append(arg._primal)
                parents.append(arg._node)
            else:
                primals.append(arg)
                parents.append(None)
        out = primitive(*primals, **params)
        if primitive.vjp is None or not _is_differentiable_value(out):
            return out
        node = Node(primitive.vjp, tuple(primals), params, out, tuple(parents))
        return ReverseTracer(self, out, node)


def _reachable(roots):
    """Every node the roots depend on, newest first (a valid reverse order)."""
    seen, stack, order = set(), list(roots), []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(p for p in node.parents if p is not None)
    order.sort(key=lambda n: n.seq, reverse=True)
    return order


class _Cotangents:
    """The backward pass's table of cotangents, keyed by node.

    An entry is owned when this pass allocated it, and only owned concrete
    buffers are added into in place: values a rule returned may be shared.
    """

    __slots__ = ("values", "owned")

    def __init__(self):
        self.values = {}
        self.owned = set()

    def pop(self, node):
        self.owned.discard(id(node))
        return self.values.pop(id(node), None)

    def add(self, node, value):
        key = id(node)
        current = self.values.get(key)
        if isinstance(value, IndexAdd):
            self._index_add(node, key, current, value)
            return
        value = _match_dtype(value, node.out)
        if current is None:
            self.values[key] = value
        elif key in self.owned and _inplace_ok(current, value):
            current._backend.add_inplace(current._data, value._data)
        else:
            total = current + value
            self.values[key] = total
            if type(total) is Tensor:
                self.owned.add(key)

    def _index_add(self, node, key, current, update):
        value = _match_dtype(update.value, node.out)
        if current is None:
            current = zeros_like(node.out)
            self.values[key] = current
            self.owned.add(key)
        elif key not in self.owned and type(current) is Tensor:
            backend = current._backend
            if backend.supports_inplace:
                current = Tensor._wrap(backend.xp.array(current._data, copy=True), backend)
            self.values[key] = current
            self.owned.add(key)
        if key in self.owned and type(value) is Tensor and _inplace_ok(current, value, shape=False):
            index = update.index._data if isinstance(update.index, Tensor) else update.index
            current._backend.index_add_inplace(current._data, index, value._data, update.axis)
            return
        # Differentiating the backward pass itself, or a lazy backend: stay functional.
        total = current + IndexAdd(update.index, value, update.axis).dense(node.out)
        self.values[key] = total
        self.owned.discard(key)


def _inplace_ok(current, value, shape=True) -> bool:
    return (
        type(current) is Tensor
        and type(value) is Tensor
        and current._backend is value._backend
        and current._backend.supports_inplace
        and isinstance(current._data, current._backend.array_type)
        and current._data.dtype == value._data.dtype
        and (not shape or current._data.shape == value._data.shape)
    )


def _match_dtype(value, like):
    """Cast a cotangent to its primal's floating dtype (mixed-precision ops)."""
    if type(value) is Tensor and type(like) is Tensor and value._data.dtype == like._data.dtype:
        return value
    if isinstance(value, Tensor) and isinstance(like, Tensor):
        want = like.dtype
        if want.is_floating and value.dtype != want:
            return value.astype(want)
    return value


def _unbroadcast(cotangent, arg):
    if cotangent is None or not isinstance(cotangent, Tensor):
        return cotangent
    if type(cotangent) is Tensor and type(arg) is Tensor and cotangent._data.shape == arg._data.shape:
        return cotangent
    from ..ops.reductions import sum_to_shape
    from ..ops.shapes import shape_of

    shape = shape_of(arg)
    if cotangent.shape != shape:
        return sum_to_shape(cotangent, shape)
    return cotangent


def backward(roots, seeds):
    """Run the backward pass from output nodes ``roots`` with cotangents ``seeds``.

    Returns the table of cotangents; read leaves with :meth:`_Cotangents.pop`.
    """
    table = _Cotangents()
    for root, seed in zip(roots, seeds, strict=False):
        if seed is not None:
            table.add(root, seed)
    leaves = {}
    for node in _reachable(roots):
        g = table.pop(node)
        if node.vjp is None:
            leaves[id(node)] = g
            continue
        if g is None:
            continue
        rule, args, parents = node.vjp, node.args, node.parents
        if isinstance(rule, tuple):
            for i, parent in enumerate(parents):
                if parent is not None and rule[i] is not None:
                    ct = rule[i](g, *args, out=node.out, **node.params)
                    if ct is not None:
                        table.add(parent, ct if isinstance(ct, IndexAdd) else _unbroadcast(ct, args[i]))
        else:
            cts = rule(g, *args, out=node.out, **node.params)
            if not isinstance(cts, tuple):
                cts = (cts,)
            for arg, parent, ct in zip(args, parents, cts, strict=False):
                if parent is not None and ct is not None:
                    table.add(parent, ct if isinstance(ct, IndexAdd) else _unbroadcast(ct, arg))
    return leaves
