"""Custom derivatives: ``@s4tf.differentiable`` with ``.vjp`` / ``.jvp`` rules.

As Swift's ``@derivative(of:)``: the user gives a function returning
``(value, pullback)`` (reverse mode) and/or ``(value, differential)`` (forward
mode). Written with s4tf ops, those closures are differentiable again, so
custom derivatives nest for higher order like built-in ones.
"""

from __future__ import annotations

import functools

from ..ops.tracer import Tracer
from ..tree import tree_flatten
from .forward import ForwardTrace, ForwardTracer
from .reverse import ReverseTrace, ReverseTracer, _is_differentiable_value

__all__ = ["CustomDerivative", "differentiable"]


def _unwrap(value, trace):
    return value._primal if isinstance(value, Tracer) and value._trace is trace else value


class _PullbackTable:
    """The rule table of one custom pullback: entry ``i`` gives leaf ``i``'s cotangent.

    A user's pullback returns every argument's cotangent from one call. The
    backward pass asks the table for the leaves with a parent, in order, with
    one cotangent ``g``: the first asks runs the pullback, each takes its leaf,
    and the last lets the results go. So the pullback runs once per pass, as
    written, and the rule still has the per-argument shape of every op's.
    """

    __slots__ = ("pullback", "treedef", "last", "seen", "leaves")

    def __init__(self, pullback, treedef, parents):
        self.pullback = pullback
        self.treedef = treedef
        self.last = max((i for i, parent in enumerate(parents) if parent is not None), default=-1)
        self.seen = self.leaves = None

    def __getitem__(self, i):
        return functools.partial(self._leaf, i)

    def _leaf(self, i, g, *args, out):
        if self.leaves is None or g is not self.seen:
            cotangents = self.pullback(g)
            if len(self.treedef.children) == 1:
                cotangents = (cotangents,)
            self.seen, self.leaves = g, tuple(self.treedef.tangent_leaves(tuple(cotangents)))
        leaf = self.leaves[i]
        if i == self.last:
            self.seen = self.leaves = None
        return leaf


class CustomDerivative:
    """A function with user-given derivatives; see :func:`differentiable`."""

    def __init__(self, fn, vjp=None, jvp=None, transpose=None):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._vjp = vjp
        self._jvp = jvp
        self.transpose_rule = transpose

    def vjp(self, rule):
        """Register the reverse-mode rule ``rule(*args) -> (value, pullback)``."""
        self._vjp = rule
        return rule

    def jvp(self, rule):
        """Register the forward-mode rule ``rule(*args) -> (value, differential)``."""
        self._jvp = rule
        return rule

    def transpose(self, rule):
        """Register ``rule(cotangent) -> cotangents of the arguments``, the transpose of a linear ``fn``.

        The manifesto's ``@transpose(of:)``: :func:`s4tf.linear_transpose` returns
        ``rule``. A linear map is its own derivative, so unless ``vjp``/``jvp``
        rules are registered, ``fn``'s pullback is ``rule`` and its differential
        ``fn`` itself.

        Examples
        --------
        >>> import s4tf
        >>> @s4tf.differentiable
        ... def triple(x):
        ...     return 3.0 * x
        >>> @triple.transpose
        ... def _(v):
        ...     return 3.0 * v
        >>> s4tf.linear_transpose(triple, 0.0)(1.0), s4tf.derivative(2.0, of=triple)
        (3.0, 3.0)
        """
        self.transpose_rule = rule
        return rule

    def _linear_vjp(self, *args):
        return self.fn(*args), self.transpose_rule

    def _linear_jvp(self, *args):
        return self.fn(*args), self.fn

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args):
        leaves, treedef = tree_flatten(args, differentiable=True)
        top = None
        for leaf in leaves:
            if isinstance(leaf, Tracer) and (top is None or leaf._trace.level > top.level):
                top = leaf._trace
        if top is None:
            return self.fn(*args)
        linear = self.transpose_rule is not None
        if isinstance(top, ReverseTrace) and (self._vjp is not None or linear):
            return self._reverse(top, leaves, treedef)
        if isinstance(top, ForwardTrace) and (self._jvp is not None or linear):
            return self._forward(top, leaves, treedef)
        # No rule for this mode: differentiate through the body itself.
        return self.fn(*args)

    def _reverse(self, trace, leaves, treedef):
        primals = [_unwrap(leaf, trace) for leaf in leaves]
        parents = tuple(
            leaf._node if isinstance(leaf, ReverseTracer) and leaf._trace is trace else None
            for leaf in leaves
        )
        value, pullback = (self._vjp or self._linear_vjp)(*treedef.unflatten(primals))
        if not _is_differentiable_value(value):
            return value
        rules = _PullbackTable(pullback, treedef, parents)
        return trace.record(rules, tuple(primals), {}, value, parents)

    def _forward(self, trace, leaves, treedef):
        primals = [_unwrap(leaf, trace) for leaf in leaves]
        tangents = [
            leaf._tangent if isinstance(leaf, ForwardTracer) and leaf._trace is trace else None
            for leaf in leaves
        ]
        args = treedef.unflatten(primals)
        value, differential = (self._jvp or self._linear_jvp)(*args)
        from .operators import _finish

        tangent_args = treedef.tangent_unflatten(
            [_finish(t, p) for t, p in zip(tangents, primals, strict=False)]
        )
        tangent = differential(*tangent_args)
        if tangent is None or not _is_differentiable_value(value):
            return value
        return ForwardTracer(trace, value, tangent)


def differentiable(fn=None, *, vjp=None, jvp=None, transpose=None):
    """Give ``fn`` custom derivatives (S4TF's ``@derivative(of:)``).

    Use as a decorator and then register rules with ``@fn.vjp`` / ``@fn.jvp``, or
    wrap a foreign function in one call: ``s4tf.differentiable(math.exp, vjp=..., jvp=...)``.
    A linear function may instead give its transpose (``@fn.transpose`` or
    ``transpose=``): see :func:`s4tf.linear_transpose`.

    Examples
    --------
    >>> import math, s4tf
    >>> def exp_vjp(x):
    ...     y = math.exp(x)
    ...     return y, lambda v: v * y
    >>> def exp_jvp(x):
    ...     y = math.exp(x)
    ...     return y, lambda t: t * y
    >>> fast_exp = s4tf.differentiable(math.exp, vjp=exp_vjp, jvp=exp_jvp)
    >>> round(s4tf.gradient(1.0, of=fast_exp), 6), round(s4tf.derivative(1.0, of=fast_exp), 6)
    (2.718282, 2.718282)
    """
    if fn is None:
        return lambda f: CustomDerivative(f, vjp=vjp, jvp=jvp, transpose=transpose)
    return CustomDerivative(fn, vjp=vjp, jvp=jvp, transpose=transpose)
