"""Forward mode: pushing tangents through each primitive as it runs."""

from __future__ import annotations

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

    # __new__, not __init__: see ReverseTracer.
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
        rule = primitive.jvp
        if rule is None or not _is_differentiable_value(out):
            return out
        if isinstance(rule, tuple):
            tangent = None
            for i, t in enumerate(tangents):
                if t is not None and rule[i] is not None:
                    term = rule[i](t, *primals, out=out, **params)
                    if term is not None:
                        tangent = term if tangent is None else tangent + term
        elif len(primals) == 1:
            tangent = rule(tangents[0], *primals, out=out, **params) if tangents[0] is not None else None
        else:
            tangent = rule(tuple(tangents), *primals, out=out, **params)
        if tangent is None:
            return out
        if isinstance(tangent, IndexAdd):
            tangent = tangent.dense(out)
        tangent = _fit(tangent, out)
        return ForwardTracer(self, out, tangent)
