"""Forward mode: pushing tangents through each primitive as it runs.

A primitive's ``jvp`` table gives each differentiated argument's share of the
output's tangent; the shares are added (sparse ones, :class:`IndexAdd`, into
one buffer the pass owns).
"""

from __future__ import annotations

from ..creation import zeros_like
from ..ops.broadcasting import broadcast_to
from ..ops.indexing import IndexAdd
from ..ops.shapes import shape_of
from ..ops.tracer import Trace, Tracer
from ..tensor import Tensor
from .reverse import _is_differentiable_value

__all__ = ["ForwardTrace", "ForwardTracer"]

_new = object.__new__


class ForwardTracer(Tracer):
    """A value with its tangent, at one level of forward-mode differentiation."""

    __slots__ = ("_tangent",)

    # __new__, not __init__: see Tracer (s4tf.ops.tracer).
    def __new__(cls, trace, primal, tangent):
        self = _new(cls)
        self._trace = trace
        self._primal = primal
        self._tangent = tangent
        return self


def _fit(tangent, out):
    """Broadcast a term of a linear map to the output's shape (``add``'s ``t``)."""
    if isinstance(tangent, Tensor) or isinstance(out, Tensor):
        shape = shape_of(out)
        if shape_of(tangent) != shape:
            return broadcast_to(tangent, shape)
    return tangent


class ForwardTrace(Trace):
    """A level of forward-mode differentiation."""

    __slots__ = ()

    def process(self, primitive, args, params):
        primals, tangents = [], []
        for arg in args:
            if isinstance(arg, ForwardTracer) and arg._trace is self:
                primals.append(arg._primal)
                tangents.append(arg._tangent)
            else:
                primals.append(arg)
                tangents.append(None)
        if len(primals) == 2 and not params:
            out = primitive.binary(primals[0], primals[1])  # skips __call__'s re-dispatch
        else:
            out = primitive(*primals, **params)
        rule_table = primitive.jvp
        if rule_table is None or not _is_differentiable_value(out):
            return out
        tangent, owned = None, False
        for i, t in enumerate(tangents):
            if t is not None:
                rule = rule_table[i]
                if rule is not None:
                    term = rule(t, *primals, out=out, **params)
                    if isinstance(term, IndexAdd):
                        # A term added at an index of zeros (indexing, concat): into one
                        # buffer of the output's shape, in place where it may be.
                        if tangent is None:
                            tangent, owned = zeros_like(out), True
                        if not (owned and term.add_into(tangent)):
                            tangent, owned = term.added_to(tangent), False
                    elif term is not None:
                        tangent, owned = (term if tangent is None else tangent + term), False
        if tangent is None:
            return out
        return ForwardTracer(self, out, _fit(tangent, out))
