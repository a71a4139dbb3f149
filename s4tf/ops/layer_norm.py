"""Layer normalization over the last axis: one fused primitive and the one its derivatives need.

Over the last axis of ``x`` (``n`` elements per row)::

    y = layer_norm(x, s, b) = xh * s + b,    xh = (x - mean) * r,   r = 1 / sqrt(variance + epsilon)

The composite recorded some eight ops forward and fifteen backward. With
``q(v) = backprop(v, x, 1) = r * (v - mean(v) - xh * mean(v * xh))`` (per row;
``r P`` with ``P`` symmetric), the rules close over two primitives:

=========================  ===============================  ===============================  ===========
primitive                  cotangent of x                   cotangent of g / s               of b
=========================  ===============================  ===============================  ===========
layer_norm(x, s, b)        backprop(g, x, s)                s: rowsum(g * xh)                rowsum(g)
backprop(g, x, s)          the curvature below              g: s * q(a);  s: rowsum(g q(a))
  ``= q(s * g)``
=========================  ===============================  ===============================  ===========

The derivative of ``backprop(g, x, s)`` in ``x`` is the symmetric map ``a ->
-r * (o * mean(xh a) + m * q(a) + xh * mean(o a))`` with ``o = backprop(g, x,
s)`` and ``m = mean(s g xh)``; the JVP rules are the transposes (for ``x``, the
same symmetric maps). Every rule is written with these primitives and ordinary
ops, so derivatives of any order follow. A batched scale or offset (one per
example under ``s4tf.vmap``) falls back to the same formulas in ordinary ops.
"""

from __future__ import annotations

import numpy as np

from ..tensor import from_numpy
from .batching_helpers import batch_size, move_axis
from .broadcasting import broadcast_to_, reduce_sum
from .elementwise import rsqrt
from .primitive import GenericRule, primitive
from .reductions import mean
from .shapes import _reshape, shape_of
from .tracer import innermost

__all__ = ["layer_norm"]


def _rows(t, x):
    """``t`` summed over every axis but the last, to a ``(n,)`` vector."""
    return reduce_sum(t, axis=tuple(range(len(shape_of(x)) - 1)), keepdims=False)


def _row_mean(t):
    return mean(t, axis=-1, keepdims=True)


def _stats(x, epsilon):
    """``(xh, r)`` in ordinary ops: the normalized rows and ``1 / sqrt(variance + epsilon)``."""
    centered = x - _row_mean(x)
    r = rsqrt(_row_mean(centered * centered) + epsilon)
    return centered * r, r


def _composite(x, s, b, epsilon):
    xh, _ = _stats(x, epsilon)
    return xh * s + b


def _composite_backprop(g, x, s, epsilon):
    xh, r = _stats(x, epsilon)
    v = g * s
    return r * (v - _row_mean(v) - xh * _row_mean(v * xh))


def _curvature(a, g, x, s, epsilon):
    """``backprop(g, x, s)``'s derivative in ``x`` applied to ``a`` (a symmetric map)."""
    xh, r = _stats(x, epsilon)
    out = backprop_(g, x, s, epsilon=epsilon)
    m = _row_mean(g * s * xh)
    return -r * (out * _row_mean(xh * a) + m * backprop_(a, x, _unit(x), epsilon=epsilon)
                 + xh * _row_mean(out * a))


def _unit(x):
    """``(n,)`` ones in ``x``'s dtype on ``x``'s backend, a constant: the scale of a plain ``q``.

    A broadcast scalar, not a function of ``x``: computed as ``sum(x * 0) * 0 + 1``
    it cost a pass over ``x`` per call (XLA may not drop ``x * 0``: NaN) and two
    scalar inputs per call in a compiled step.
    """
    value = innermost(x)
    one = from_numpy(np.ones((), value.dtype.numpy), like=value)
    return broadcast_to_(one, shape=shape_of(x)[-1:])


# Batching (s4tf.vmap): rows are independent, so a batch of examples is more rows:
# the batch axis goes first and the fused op runs once. A per-example scale or
# offset cannot be one (n,) vector; then the formulas run in ordinary ops.
def _with_batch_first(t, d, size):
    if d is not None:
        return move_axis(t, d, 0)
    return broadcast_to_(_reshape(t, shape=(1, *shape_of(t))), shape=(size, *shape_of(t)))


def _batched(composite, arrays, vectors):
    """A batching rule for an op of ``arrays`` row tensors followed by ``vectors`` (n,) ones."""
    def rule(primitive, args, dims, **params):
        size = batch_size(args, dims)
        rows = [_with_batch_first(t, d, size) for t, d in zip(args[:arrays], dims[:arrays],
                                                                strict=True)]
        rest = args[arrays:]
        if all(d is None for d in dims[arrays:]):
            return primitive(*rows, *rest, **params), 0
        rank = len(shape_of(rows[0]))
        rest = [_with_batch_first(t, d, size) for t, d in zip(rest, dims[arrays:], strict=True)]
        # (batch, n) vectors broadcast along the rows of each example.
        rest = [_reshape(v, shape=(size, *[1] * (rank - 2), shape_of(v)[-1])) for v in rest]
        return composite(*rows, *rest, epsilon=params["epsilon"]), 0
    return GenericRule(rule)


layer_norm_ = primitive(
    "layer_norm",
    promote=True,
    batch=_batched(_composite, 1, 2),
    vjp=(lambda g, x, s, b, out, epsilon: backprop_(g, x, s, epsilon=epsilon),
         lambda g, x, s, b, out, epsilon: _rows(g * layer_norm_(x, _unit(x), _unit(x) * 0.0,
                                                                epsilon=epsilon), x),
         lambda g, x, s, b, out, epsilon: _rows(g, x)),
    jvp=(lambda t, x, s, b, out, epsilon: s * backprop_(t, x, _unit(x), epsilon=epsilon),
         lambda t, x, s, b, out, epsilon: layer_norm_(x, t, t * 0.0, epsilon=epsilon),
         lambda t, x, s, b, out, epsilon: broadcast_to_(t, shape=shape_of(x))),
)
backprop_ = primitive(
    "layer_norm_backprop",
    promote=True,
    batch=_batched(_composite_backprop, 2, 1),
    vjp=(lambda a, g, x, s, out, epsilon: s * backprop_(a, x, _unit(x), epsilon=epsilon),
         lambda a, g, x, s, out, epsilon: _curvature(a, g, x, s, epsilon),
         lambda a, g, x, s, out, epsilon: _rows(g * backprop_(a, x, _unit(x), epsilon=epsilon),
                                                x)),
    jvp=(lambda t, g, x, s, out, epsilon: backprop_(t, x, s, epsilon=epsilon),
         lambda t, g, x, s, out, epsilon: _curvature(t, g, x, s, epsilon),
         lambda t, g, x, s, out, epsilon: backprop_(g, x, t, epsilon=epsilon)),
)


def layer_norm(input, scale, offset, epsilon=0.001):
    """Layer normalization over the last axis, as one fused op.

    ``(input - mean) / sqrt(variance + epsilon) * scale + offset`` with the
    mean and biased variance of each row (the last axis). Forward and
    backward are one kernel each; differentiable in both modes, to any order.
    :class:`s4tf.layers.LayerNorm` calls it when its axis is the last one.

    Parameters
    ----------
    input : Tensor
        Float, rank >= 1.
    scale, offset : Tensor
        ``(n,)``, the size of the last axis.
    epsilon : float, default 0.001

    Returns
    -------
    Tensor
        The shape of ``input``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.layer_norm import layer_norm
    >>> layer_norm(s4tf.Tensor([[1.0, 3.0]]), s4tf.ones([2]), s4tf.zeros([2]), epsilon=0.0).tolist()
    [[-1.0, 1.0]]
    """
    n = shape_of(input)[-1:]
    if shape_of(scale) != n or shape_of(offset) != n:
        raise ValueError(
            f"layer_norm: scale and offset must have shape {n}, the size of the input's last "
            f"axis (input shape {shape_of(input)}); got {shape_of(scale)} and {shape_of(offset)}."
        )
    return layer_norm_(input, scale, offset, epsilon=float(epsilon))
