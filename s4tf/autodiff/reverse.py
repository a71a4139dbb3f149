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
import operator

from ..creation import zeros_like
from ..dtypes import BY_NUMPY, FLOATING_NUMPY
from ..ops.broadcasting import sum_to_shape
from ..ops.indexing import IndexAdd
from ..ops.shapes import shape_of
from ..ops.tracer import Trace, Tracer, innermost
from ..tensor import Tensor

__all__ = ["Node", "ReverseTrace", "ReverseTracer", "backward"]

_sequence = itertools.count()
_new = object.__new__


class Node:
    """One recorded application: ``out = primitive(*args, **params)``.

    ``vjp`` is the primitive's rule table (None for a leaf), ``parents`` the
    nodes of the arguments being differentiated (None for constants) and
    ``seq`` the creation order. Made only by :meth:`ReverseTrace.record`.
    """

    __slots__ = ("seq", "vjp", "args", "params", "out", "parents")


class ReverseTracer(Tracer):
    """A value being differentiated in reverse mode: its primal and the node that made it.

    Made only by :meth:`ReverseTrace.record`.
    """

    __slots__ = ("_node",)


def _is_differentiable_value(value) -> bool:
    if type(value) is Tensor:  # Tensor.dtype without the property's frame
        dtype = BY_NUMPY.get(value._data.dtype)
        return (dtype if dtype is not None else value.dtype).is_floating
    value = innermost(value)
    if isinstance(value, Tensor):
        return value.dtype.is_floating
    return isinstance(value, float)


class ReverseTrace(Trace):
    """A level of reverse-mode differentiation.

    It keeps its nodes in creation order, which is already a valid order for the
    backward pass (newest first): no graph walk or sort is needed to find one.
    """

    __slots__ = ("nodes",)

    def __init__(self) -> None:
        super().__init__()
        self.nodes: list[Node] = []

    def record(self, vjp, args, params, out, parents) -> ReverseTracer:
        """A tracer of ``out`` whose node (rule ``vjp``, inputs, parent nodes) is recorded."""
        # Once per op of the traced function: both objects are built without calling
        # an __init__ (a frame each).
        node = _new(Node)
        node.seq, node.vjp, node.args, node.params, node.out, node.parents = (
            next(_sequence), vjp, args, params, out, parents)
        self.nodes.append(node)
        tracer = _new(ReverseTracer)
        tracer._trace, tracer._primal, tracer._node = self, out, node
        return tracer

    def new_leaf(self, primal) -> ReverseTracer:
        return self.record(None, (), _NO_PARAMS, primal, ())

    def process(self, primitive, args, params):
        vjp = primitive.vjp
        if len(args) == 1:  # unary ops, reductions, reshapes: no lists either
            x = args[0]
            if type(x) is ReverseTracer and x._trace is self:
                x, x_node = x._primal, x._node
            else:
                x_node = None
            out = primitive(x, **params) if params else primitive(x)
            # The usual result, a float32 or float64 tensor, is tested inline.
            if vjp is None or not (type(out) is Tensor and out._data.dtype in FLOATING_NUMPY
                                   or _is_differentiable_value(out)):
                return out
            return self.record(vjp, (x,), params, out, (x_node,))
        primals, parents = [], []
        for arg in args:
            if type(arg) is ReverseTracer and arg._trace is self:
                primals.append(arg._primal)
                parents.append(arg._node)
            else:
                primals.append(arg)
                parents.append(None)
        out = primitive(*primals, **params)
        if vjp is None or not (type(out) is Tensor and out._data.dtype in FLOATING_NUMPY
                               or _is_differentiable_value(out)):
            return out
        return self.record(vjp, tuple(primals), params, out, tuple(parents))

    def process_binary(self, primitive, x, y):
        """``process`` of a two-operand op without parameters (arithmetic): no lists."""
        if type(x) is ReverseTracer and x._trace is self:
            x, x_node = x._primal, x._node
        else:
            x_node = None
        if type(y) is ReverseTracer and y._trace is self:
            y, y_node = y._primal, y._node
        else:
            y_node = None
        out = primitive.binary(x, y)
        vjp = primitive.vjp
        if vjp is None or not (type(out) is Tensor and out._data.dtype in FLOATING_NUMPY
                               or _is_differentiable_value(out)):
            return out
        return self.record(vjp, (x, y), _NO_PARAMS, out, (x_node, y_node))


# Leaf and binary nodes have no parameters; one shared (never mutated) dict saves an allocation.
_NO_PARAMS: dict = {}


def _reachable(roots):
    """Every node the roots depend on, newest first (a valid reverse order)."""
    seen, stack = {}, list(roots)
    while stack:
        node = stack.pop()
        key = id(node)
        if key in seen:
            continue
        seen[key] = node
        for parent in node.parents:
            if parent is not None:
                stack.append(parent)
    return sorted(seen.values(), key=_SEQ, reverse=True)


_SEQ = operator.attrgetter("seq")


class _Cotangents:
    """The backward pass's table of cotangents, keyed by node (by identity: nodes
    define no equality, so the node itself is a key, without an ``id()`` call).

    An entry is owned when this pass allocated it, and only owned concrete
    buffers are added into in place: values a rule returned may be shared.
    """

    __slots__ = ("values", "owned")

    def __init__(self):
        self.values = {}
        self.owned = set()

    def add(self, node, value):
        values, owned = self.values, self.owned
        current = values.get(node)
        if isinstance(value, IndexAdd):
            self._index_add(node, current, value)
            return
        value = _match_dtype(value, node.out)
        if current is None:
            values[node] = value
        elif node in owned and _inplace_ok(current, value):
            current._backend.add_inplace(current._data, value._data)
        else:
            total = current + value
            values[node] = total
            if type(total) is Tensor:
                owned.add(node)

    def _index_add(self, node, current, update):
        values, owned = self.values, self.owned
        update = IndexAdd(update.index, _match_dtype(update.value, node.out), update.axis)
        if current is None:
            current = zeros_like(node.out)
            values[node] = current
            owned.add(node)
        elif node not in owned and type(current) is Tensor:
            backend = current._backend
            if backend.supports_inplace:
                current = Tensor._wrap(backend.copy(current._data), backend)
            values[node] = current
            owned.add(node)
        if node in owned and update.add_into(current):
            return
        # Differentiating the backward pass itself, or a lazy backend: stay functional.
        values[node] = update.added_to(current)
        owned.discard(node)


def _inplace_ok(current, value) -> bool:
    return (
        type(current) is Tensor
        and type(value) is Tensor
        and current._backend is value._backend
        and current._backend.supports_inplace
        and isinstance(current._data, current._backend.array_type)
        and current._data.dtype == value._data.dtype
        and current._data.shape == value._data.shape
    )


def _match_dtype(value, like):
    """Cast a cotangent to its primal's floating dtype (mixed-precision ops)."""
    if type(value) is Tensor and type(like) is Tensor:
        have, want = value._data.dtype, like._data.dtype
        if have is want or have == want:
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
    shape = shape_of(arg)
    if cotangent.shape != shape:
        return sum_to_shape(cotangent, shape)
    return cotangent


def backward(roots, seeds, nodes=None):
    """Run the backward pass from output nodes ``roots`` with cotangents ``seeds``.

    ``nodes``, when given, is every node of the roots' trace in creation order
    (:attr:`ReverseTrace.nodes`); nodes no cotangent reaches are skipped. Without
    it the pass finds the nodes the roots depend on itself. Returns a dict from
    ``id(leaf node)`` to the leaf's cotangent (absent means zero).
    """
    table = _Cotangents()
    for root, seed in zip(roots, seeds, strict=False):
        if seed is not None:
            table.add(root, seed)
    values, owned, add = table.values, table.owned, table.add
    leaves = {}
    for node in (_reachable(roots) if nodes is None else reversed(nodes)):
        g = values.pop(node, None)
        if g is None:
            continue  # no cotangent reached it: a zero (leaves read as missing)
        if owned:
            owned.discard(node)
        rule_table = node.vjp
        if rule_table is None:
            leaves[id(node)] = g
            continue
        args, out, params = node.args, node.out, node.params
        i = -1
        for parent in node.parents:
            i += 1
            if parent is None:
                continue
            rule = rule_table[i]
            if rule is None:
                continue
            # Unpacking an empty **params still builds a dict: skip it for arithmetic.
            ct = rule(g, *args, out=out, **params) if params else rule(g, *args, out=out)
            if ct is None:
                continue
            arg = args[i]
            # The common edge: the parent's first cotangent, of its primal's shape and
            # dtype, is stored as it is (no summing, casting or adding).
            if type(ct) is Tensor and type(arg) is Tensor:
                have, like = ct._data, arg._data
                hd, ld = have.dtype, like.dtype
                if have.shape == like.shape and (hd is ld or hd == ld) and parent not in values:
                    values[parent] = ct
                    continue
            add(parent, ct if isinstance(ct, IndexAdd) else _unbroadcast(ct, arg))
    return leaves
