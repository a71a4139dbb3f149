"""Rematerialisation: ``s4tf.remat(f)`` recomputes ``f``'s intermediates in the backward pass.

Reverse mode keeps every intermediate of the forward pass until the backward
pass reads it. A call of ``remat(f)`` under a reverse-mode level instead runs
``f`` on its arguments' primals, so that level records nothing inside it and
the intermediates die as soon as the forward pass is done with them; it records
one node whose rule, when the backward pass reaches it, runs ``f`` again under a
fresh reverse level at the same arguments and pulls the cotangent back through
that recomputation. Only the arguments and results of ``f`` are kept.

A call with several differentiable results records that node once (its output a
placeholder) and one node per result that hands its cotangent to it; the
cotangents meet in :class:`_OutputCotangents`, so ``f`` is recomputed once per
backward pass, whatever the number of results.

The recomputation reproduces the forward pass: the global random stream is
rewound to where the forward call drew from (and put back after), and the
``State`` cells reachable from the arguments (BatchNorm's running statistics)
are restored after it, so a layer's side effects happen once. On the lazy
backend the recomputation starts from :func:`~s4tf.ops.optimization_barrier.
optimization_barrier` of the arguments and the cotangents, so neither s4tf's
graph nor XLA merges it with the forward pass it repeats, nor runs it before
the backward pass needs it.
"""

from __future__ import annotations

import functools
import inspect

from .. import random
from ..ops.optimization_barrier import optimization_barrier
from ..ops.tracer import Tracer, innermost
from ..tensor import Tensor
from ..tree import tree_children, tree_flatten
from .operators import value_with_pullback
from .reverse import ReverseTrace, ReverseTracer, _is_differentiable_value

__all__ = ["remat", "remat_call"]


def remat(f):
    """``f``, whose backward pass recomputes its intermediates instead of keeping them.

    JAX's ``jax.checkpoint`` (``s4tf.checkpoint`` is the package that saves and
    loads models). Values and derivatives of every order are those of ``f``;
    what reverse mode keeps between the forward and the backward pass shrinks
    to ``f``'s arguments and results, at the cost of running ``f`` once more in
    the backward pass. Random draws and BatchNorm statistics inside ``f``
    happen once: the recomputation draws the same numbers and leaves ``State``
    cells as the forward pass left them. On the xla backend the compiled step
    recomputes too (XLA is kept from merging the two passes).

    Parameters
    ----------
    f : callable
        A function of Differentiable values, a layer, or a layer's method. It
        must read values being differentiated only through its arguments (a
        layer or the receiver of a method counts as one): ``remat`` recomputes
        it from them alone, and says so when ``f`` reads another one.

    Returns
    -------
    callable
        A function with ``f``'s signature.

    Notes
    -----
    Memory is saved at the innermost reverse-mode level; outer levels of a
    higher-order derivative keep what they would without ``remat``. Forward
    mode keeps nothing, so there ``f`` simply runs. The recomputation runs in
    the learning phase current when the backward pass runs (the same as the
    forward pass's for ``value_with_gradient``).

    Examples
    --------
    >>> import s4tf
    >>> def block(x):
    ...     return s4tf.tanh(s4tf.tanh(x) * 2.0).sum()
    >>> x = s4tf.Tensor([0.5, -1.0])
    >>> s4tf.gradient(x, of=s4tf.remat(block)).tolist() == s4tf.gradient(x, of=block).tolist()
    True
    >>> layer = s4tf.layers.Dense(2, 3, activation=s4tf.gelu)
    >>> g = s4tf.gradient(layer, of=lambda m: s4tf.remat(m)(x[None]).sum())
    >>> g.weight.shape
    (2, 3)
    """
    if not callable(f):
        raise TypeError(f"s4tf.remat: expected a function or a layer, got {type(f).__name__}.")

    @functools.wraps(f)
    def rematerialized(*args, **kwargs):
        return remat_call(f, *args, **kwargs)

    return rematerialized


def remat_call(f, *args, **kwargs):
    """``remat(f)(*args, **kwargs)`` without making the wrapper (``Sequential``'s per-layer call).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.autodiff.remat import remat_call
    >>> s4tf.gradient(2.0, of=lambda x: remat_call(lambda y: y * y * y, x))
    12.0
    """
    # A layer or a method's receiver holding parameters is an argument like the others:
    # its parameters are read, so they must be traced inputs of the recorded node.
    if inspect.ismethod(f):
        receiver, call = f.__self__, _call_method(f.__func__)
    else:
        receiver, call = f, _call_function
    leaves, treedef = tree_flatten((receiver, args, kwargs), differentiable=True)
    trace = None
    for leaf in leaves:
        if isinstance(leaf, Tracer) and (trace is None or leaf._trace.level > trace.level):
            trace = leaf._trace
    if trace is None:
        out = f(*args, **kwargs)
        if any(isinstance(leaf, ReverseTracer) for leaf in tree_flatten(out, differentiable=True)[0]):
            # Differentiated through a value it was not given: that level kept everything.
            raise _read_from_outside(f)
        return out
    if not isinstance(trace, ReverseTrace):
        # Forward mode (or vmap) on top keeps nothing for a backward pass: run f.
        return f(*args, **kwargs)
    return _record(trace, f, call, leaves, treedef)


def _call_function(f, args, kwargs):
    return f(*args, **kwargs)


def _call_method(function):
    return lambda receiver, args, kwargs: function(receiver, *args, **kwargs)


def _record(trace, f, call, leaves, treedef):
    """Run ``f`` on the primals at ``trace``'s level and record its recomputing node(s)."""
    primals, parents = [], []
    for leaf in leaves:
        if type(leaf) is ReverseTracer and leaf._trace is trace:
            primals.append(leaf._primal)
            parents.append(leaf._node)
        else:
            primals.append(leaf)
            parents.append(None)
    recompute = _Recompute(f, call, treedef, primals, parents, random.get_state())
    recorded = len(trace.nodes)
    out = call(*treedef.unflatten(primals))
    if len(trace.nodes) != recorded:
        raise _read_from_outside(f)
    out_leaves, out_def = tree_flatten(out, differentiable=True)
    kept = [i for i, leaf in enumerate(out_leaves) if _is_differentiable_value(leaf)]
    if not kept:
        return out
    recompute.outputs = (out_def, len(out_leaves), kept)
    args, parents = tuple(primals), tuple(parents)
    if len(kept) == 1:
        k = kept[0]
        out_leaves[k] = trace.record(recompute, args, {}, out_leaves[k], parents)
        return out_def.unflatten(out_leaves)
    call_node = trace.record(recompute, args, {}, _RESULTS, parents)._node
    for k in kept:
        out_leaves[k] = trace.record((_Handover(k),), (_RESULTS,), {}, out_leaves[k], (call_node,))
    return out_def.unflatten(out_leaves)


def _read_from_outside(f) -> TypeError:
    name = getattr(f, "__qualname__", None) or type(f).__name__
    return TypeError(
        f"s4tf.remat: {name} read a value being differentiated that is not one of its "
        "arguments (a variable of an enclosing function, a global, an attribute of an object "
        "not passed in). remat recomputes the function from its arguments alone, so pass that "
        "value in: s4tf.remat(lambda model, x: model(x))(model, x) instead of "
        "s4tf.remat(lambda x: model(x))(x)."
    )


class _Results:
    """The placeholder output of a several-result call's node (its cotangents meet there)."""

    __slots__ = ()

    def __repr__(self):
        return "<remat results>"


_RESULTS = _Results()


class _OutputCotangents:
    """The cotangents of a several-result call, by result position; ``+`` merges them.

    The backward pass adds what arrives for one node, so the results' nodes hand
    their cotangents to the call's node as these, and it sees them all at once.
    """

    __slots__ = ("by_position",)

    def __init__(self, by_position):
        self.by_position = by_position

    def __add__(self, other):
        merged = dict(self.by_position)
        for k, g in other.by_position.items():
            merged[k] = g if k not in merged else merged[k] + g
        return _OutputCotangents(merged)


class _Handover:
    """The rule of result ``k``'s node: its cotangent, handed to the call's node."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __call__(self, g, results, out):
        return _OutputCotangents({self.k: g})


class _Recompute:
    """The rule table of a remat call: entry ``i`` is input leaf ``i``'s cotangent.

    The backward pass asks the entries with a parent, in order, with one
    cotangent: the first asks recomputes ``f`` and pulls the cotangent back,
    each takes its leaf, the last lets the results go (as a custom pullback's
    table, :mod:`.custom`).
    """

    __slots__ = ("f", "call", "treedef", "primals", "positions", "rng", "outputs", "last",
                 "seen", "cotangents")

    def __init__(self, f, call, treedef, primals, parents, rng):
        self.f, self.call, self.treedef, self.primals, self.rng = f, call, treedef, primals, rng
        self.positions = [i for i, parent in enumerate(parents) if parent is not None]
        self.last = self.positions[-1]
        self.outputs = None
        self.seen = self.cotangents = None

    def __getitem__(self, i):
        return functools.partial(self._leaf, i)

    def _leaf(self, i, g, *args, out):
        if self.cotangents is None or g is not self.seen:
            self.seen, self.cotangents = g, self._pull_back(g)
        cotangent = self.cotangents.get(i)
        if i == self.last:
            self.seen = self.cotangents = None
        return cotangent

    def _pull_back(self, g):
        """``{input position: cotangent}`` for the results' cotangent ``g``, by recomputing."""
        out_def, n_out, kept = self.outputs
        by_position = g.by_position if isinstance(g, _OutputCotangents) else {kept[0]: g}
        seeds = [by_position.get(k) for k in range(n_out)]
        points = [self.primals[i] for i in self.positions]
        after = [s for s in seeds if isinstance(innermost(s), Tensor) and innermost(s)._backend.lazy]
        if after:
            # Recorded beside the forward pass it repeats, the recomputation would be
            # merged with it (and scheduled before the backward pass) without this.
            points = [optimization_barrier(p, *after) if isinstance(innermost(p), Tensor) else p
                      for p in points]
        cells = _cells(self.treedef.unflatten(self.primals))
        saved = [cell.value for cell in cells]
        stream = random.get_state()
        random.set_state(self.rng)
        try:
            _, pullback = value_with_pullback(*points, of=self._rerun)
        finally:
            random.set_state(stream)
            for cell, value in zip(cells, saved, strict=True):
                cell.value = value
        cotangents = pullback(out_def.tangent_unflatten(seeds))
        if len(points) == 1:
            cotangents = (cotangents,)
        return dict(zip(self.positions, cotangents, strict=True))

    def _rerun(self, *points):
        primals = list(self.primals)
        for i, point in zip(self.positions, points, strict=True):
            primals[i] = point
        return self.call(*self.treedef.unflatten(primals))


def _cells(value) -> list:
    """The mutable cells (``State``) reachable from ``value``, each once."""
    found, seen, stack = [], set(), [value]
    while stack:
        node = stack.pop()
        kind, children = tree_children(node)
        if kind == "cell" and id(node) not in seen:
            seen.add(id(node))
            found.append(node)
        stack.extend(child for _, child, _ in children if not isinstance(child, Tensor))
    return found
