"""Batch normalization in training mode: one fused primitive and the three its derivatives need.

Over every axis of ``x`` but the feature axis, with ``M`` elements per feature::

    mean, variance = batch_moments(x)                 # one (2, C) tensor
    y = batch_norm(x, scale, offset, moments)
      = (x - mean) * r * scale + offset,     r = 1 / sqrt(variance + epsilon)

``moments`` enters ``batch_norm`` as a cache of a function of ``x``: it must
be ``batch_moments(x)`` (:func:`batch_norm` below makes sure), it has no rule
of its own, and the rule for ``x`` is the whole derivative, through the
statistics too: the fused formula ``scale * r * (g - mean(g) - xh * mean(g *
xh))`` with ``xh = (x - mean) * r``, one kernel (``batch_norm_backprop``)
instead of some ten passes of separate ops. With ``P(g) = g - mean(g) - xh *
mean(g * xh)`` (symmetric in the inner product of each feature), the rules
close over four primitives:

=========================  =========================  ===========================  ==================
primitive                  cotangent of x             cotangent of g / scale       cotangent of offset
=========================  =========================  ===========================  ==================
batch_norm(x, s, b, m)     backprop(g, x, s, m)       s: scale_grad(g, x, m)       sum(g)
backprop(g, x, s, m)       the curvature below        g: backprop(a, x, s, m)
  ``= s * r * P(g)``                                  s: sum(a * backprop(g, x, 1))
scale_grad(g, x, m)        backprop(g, x, a, m)       g: batch_norm(x, a, 0, m)
  ``= sum(g * xh)``
batch_moments(x)           ``a_mean / M + a_var * 2 (x - mean) / M``
=========================  =========================  ===========================  ==================

(sums per feature). The derivative of ``backprop`` in ``x`` is the symmetric
map ``a -> -(r / M) * (s q scale_grad(a) + s xh sum(a q) + scale_grad(g)
backprop(a, x, s))`` with ``q = backprop(g, x, 1)``. The JVP rules are the
transposes of these maps (for ``x``, symmetric maps, the same ones). Every
rule is written with these primitives and ordinary ops, so derivatives of any
order follow.
"""

from __future__ import annotations

import math

from .. import dtypes as _dtypes
from ..creation import ones_like, zeros_like
from .batching_helpers import batch_size, move_axis
from .broadcasting import broadcast_to_, reduce_sum
from .elementwise import cast, rsqrt
from .joining import stack
from .primitive import GenericRule, primitive
from .shapes import _reshape, shape_of
from .tracer import strip

__all__ = ["batch_norm"]


def _others(x, axis):
    """Every axis of ``x`` but the feature axis."""
    return tuple(i for i in range(len(shape_of(x))) if i != axis)


def _count(x, axis) -> int:
    """``M``: the elements of ``x`` per feature."""
    shape = shape_of(x)
    return math.prod(shape) // shape[axis] if shape[axis] else 0


def _along(vector, x, axis):
    """A ``(C,)`` vector shaped to broadcast along the feature axis of ``x``."""
    rank = len(shape_of(x))
    return _reshape(vector, shape=tuple(-1 if i == axis else 1 for i in range(rank)))


def _feature_sums(t, x, axis):
    """``(C,)``: ``t`` summed over every axis but the feature axis."""
    return reduce_sum(t, axis=_others(x, axis), keepdims=False)


def _unit(moments):
    """``(C,)`` ones, a constant: the scale of a plain ``xh``."""
    return ones_like(strip(moments)[0])


def _curvature(a, g, x, s, m, axis, epsilon):
    """``backprop(g, x, s, m)``'s derivative in ``x`` applied to ``a`` (a symmetric map)."""
    ones = ones_like(s)
    q = backprop_(g, x, ones, m, axis=axis, epsilon=epsilon)
    normalized = batch_norm_(x, ones, zeros_like(s), m, axis=axis, epsilon=epsilon)
    terms = (q * _along(s * scale_grad_(a, x, m, axis=axis, epsilon=epsilon), x, axis)
             + normalized * _along(s * _feature_sums(a * q, x, axis), x, axis)
             + backprop_(a, x, s, m, axis=axis, epsilon=epsilon)
             * _along(scale_grad_(g, x, m, axis=axis, epsilon=epsilon), x, axis))
    factor = rsqrt(m[1] + epsilon) * (-1.0 / _count(x, axis))
    return terms * _along(factor, x, axis)


# Batching rules (s4tf.vmap). Each example is normalized over its own axes, so the
# batch joins the features: the batch axis is moved beside the feature axis and
# merged with it (``C`` features become ``B * C``), the fused op runs once, and its
# result is split again. Arguments that are the same for every example (a shared
# scale) are broadcast along the batch first.
def _with_batch_at(t, d, position, size):
    """``t`` with its batch axis at ``position``; an unbatched ``t`` broadcast to have one."""
    if d is not None:
        return move_axis(t, d, position)
    shape = shape_of(t)
    t = _reshape(t, shape=(*shape[:position], 1, *shape[position:]))
    return broadcast_to_(t, shape=(*shape[:position], size, *shape[position:]))


def _merged(t, d, axis, size):
    """``t`` with its batch merged into axis ``axis`` (batch-major): ``C`` becomes ``B * C``."""
    t = _with_batch_at(t, d, axis, size)
    shape = shape_of(t)
    return _reshape(t, shape=(*shape[:axis], size * shape[axis + 1], *shape[axis + 2:]))


def _split(y, axis, size):
    """The inverse of :func:`_merged`: ``(batch result, its batch axis)``."""
    shape = shape_of(y)
    y = _reshape(y, shape=(*shape[:axis], size, shape[axis] // size, *shape[axis + 1:]))
    return y, axis


def _norm_batch(primitive, roles, args, dims, **params):
    """Apply ``primitive`` with the batch merged into the features of every argument.

    ``roles[i]`` says where argument ``i``'s features are: ``"x"`` (axis
    ``params["axis"]``), ``"v"`` (a ``(C,)`` vector) or ``"m"`` (the ``(2, C)``
    moments); the result's are ``roles[-1]``.
    """
    size, axis = batch_size(args, dims), params["axis"]
    where = {"x": axis, "v": 0, "m": 1}
    merged = [_merged(a, d, where[r], size) for a, d, r in zip(args, dims, roles, strict=False)]
    return _split(primitive(*merged, **params), where[roles[-1]], size)


def _norm_rule(roles) -> GenericRule:
    return GenericRule(lambda primitive, args, dims, **params: _norm_batch(
        primitive, roles, args, dims, **params))


def _moments_vjp(a, x, out, axis):
    inverse = 1.0 / _count(x, axis)
    centered = x - _along(out[0], x, axis)
    return (_along(a[0] * inverse, x, axis)
            + _along(a[1] * (2.0 * inverse), x, axis) * centered)


def _moments_jvp(t, x, out, axis):
    inverse = 1.0 / _count(x, axis)
    centered = x - _along(out[0], x, axis)
    return stack([_feature_sums(t, x, axis) * inverse,
                  _feature_sums(centered * t, x, axis) * (2.0 * inverse)])


batch_moments_ = primitive("batch_moments", vjp=(_moments_vjp,), jvp=(_moments_jvp,),
                           batch=_norm_rule("xm"))

batch_norm_ = primitive(
    "batch_norm",
    promote=True,
    batch=_norm_rule("xvvmx"),
    vjp=(lambda g, x, s, b, m, out, axis, epsilon:
             backprop_(g, x, s, m, axis=axis, epsilon=epsilon),
         lambda g, x, s, b, m, out, axis, epsilon:
             scale_grad_(g, x, m, axis=axis, epsilon=epsilon),
         lambda g, x, s, b, m, out, axis, epsilon: _feature_sums(g, x, axis),
         None),
    jvp=(lambda t, x, s, b, m, out, axis, epsilon:
             backprop_(t, x, s, m, axis=axis, epsilon=epsilon),
         lambda t, x, s, b, m, out, axis, epsilon:
             batch_norm_(x, t, zeros_like(t), m, axis=axis, epsilon=epsilon),
         lambda t, x, s, b, m, out, axis, epsilon: _along(t, x, axis),
         None),
)
backprop_ = primitive(
    "batch_norm_backprop",
    promote=True,
    batch=_norm_rule("xxvmx"),
    vjp=(lambda a, g, x, s, m, out, axis, epsilon:
             backprop_(a, x, s, m, axis=axis, epsilon=epsilon),
         lambda a, g, x, s, m, out, axis, epsilon: _curvature(a, g, x, s, m, axis, epsilon),
         lambda a, g, x, s, m, out, axis, epsilon: _feature_sums(
             a * backprop_(g, x, ones_like(s), m, axis=axis, epsilon=epsilon), x, axis),
         None),
    jvp=(lambda t, g, x, s, m, out, axis, epsilon:
             backprop_(t, x, s, m, axis=axis, epsilon=epsilon),
         lambda t, g, x, s, m, out, axis, epsilon: _curvature(t, g, x, s, m, axis, epsilon),
         lambda t, g, x, s, m, out, axis, epsilon:
             backprop_(g, x, t, m, axis=axis, epsilon=epsilon),
         None),
)
scale_grad_ = primitive(
    "batch_norm_scale_grad",
    promote=True,
    batch=_norm_rule("xxmv"),
    vjp=(lambda a, g, x, m, out, axis, epsilon:
             batch_norm_(x, a, zeros_like(a), m, axis=axis, epsilon=epsilon),
         lambda a, g, x, m, out, axis, epsilon:
             backprop_(g, x, a, m, axis=axis, epsilon=epsilon),
         None),
    jvp=(lambda t, g, x, m, out, axis, epsilon:
             scale_grad_(t, x, m, axis=axis, epsilon=epsilon),
         lambda t, g, x, m, out, axis, epsilon: _feature_sums(
             t * backprop_(g, x, _unit(m), m, axis=axis, epsilon=epsilon), x, axis),
         None),
)


def batch_norm(input, scale, offset, axis=-1, epsilon=0.001):
    """Batch normalization with the batch's own statistics (training mode), as one fused op.

    ``(input - mean) / sqrt(variance + epsilon) * scale + offset``, where
    ``mean`` and the biased ``variance`` of each feature are taken over every
    axis of ``input`` but ``axis``. Also returns those statistics, for running
    averages such as :class:`s4tf.layers.BatchNorm`'s. Forward and backward
    are one kernel each (the backward is the fused formula); everything is
    differentiable in both modes, to any order, the statistics included.

    Parameters
    ----------
    input : Tensor
        Any rank >= 1; int and bool inputs are normalized as float32.
    scale, offset : Tensor
        ``(features,)``, the size of ``input``'s axis ``axis``.
    axis : int, default -1
        The feature axis (-1: channels last, NHWC).
    epsilon : float, default 0.001
        Added to the variance inside the square root.

    Returns
    -------
    tuple of Tensor
        ``(output, mean, variance)``: the output has ``input``'s shape, the
        statistics ``(features,)``.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.Tensor([[0.0, 10.0], [2.0, 30.0]])
    >>> y, mean, variance = s4tf.nn.batch_norm(x, s4tf.ones([2]), s4tf.zeros([2]), epsilon=0.0)
    >>> y.tolist(), mean.tolist(), variance.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [1.0, 20.0], [1.0, 100.0])
    """
    shape = shape_of(input)
    rank = len(shape)
    if not -rank <= axis < rank:
        raise ValueError(
            f"batch_norm: axis {axis} is out of range for an input of shape {shape}; pass the "
            f"feature axis, in [{-rank}, {rank - 1}]."
        )
    axis %= rank
    features = (shape[axis],)
    if shape_of(scale) != features or shape_of(offset) != features:
        raise ValueError(
            f"batch_norm: scale and offset must have shape {features}, the size of axis {axis} "
            f"of the input (shape {shape}); got {shape_of(scale)} and {shape_of(offset)}."
        )
    if not input.dtype.is_floating:
        input = cast(input, dtype=_dtypes.float32)
    moments = batch_moments_(input, axis=axis)
    output = batch_norm_(input, scale, offset, moments, axis=axis, epsilon=float(epsilon))
    return output, moments[0], moments[1]
