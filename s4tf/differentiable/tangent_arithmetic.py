"""Tangent-vector arithmetic: ``+ - * /``, negation, ``sqrt`` and ``dot`` of tangents.

A tangent is a tangent vector (an instance of a registered class that is its
own tangent class, such as a synthesized ``Point.TangentVector``), a list,
tuple or dict of tangents, a Tensor or a float; ``None`` and ``0.0`` stand for
a zero of any shape. Each operation is one
:func:`~s4tf.tree.tree_map_broadcast` over the operands with a zero rule at
the leaves: a scalar (or a zero) meets every leaf of the other operand, and a
zero operand gives the other one (``zero + t`` is ``t``, ``zero * t`` is
``None``). Other registered values (models, ``State`` cells) are leaves here.
"""

from __future__ import annotations

import operator

from ..ops import sqrt as _sqrt
from ..tensor import Tensor
from ..tree import is_zero, node_type, tree_leaves, tree_map_broadcast

__all__ = ["add", "divide", "dot", "multiply", "negate", "sqrt", "subtract"]


def add(a, b):
    """``a + b``, leaf by leaf; a zero operand gives the other.

    Examples
    --------
    >>> from s4tf.differentiable import tangent_arithmetic
    >>> tangent_arithmetic.add([1.0, None], [2.0, 3.0])
    [3.0, 3.0]
    """
    return _combine(a, b, operator.add, _same, _same)


def subtract(a, b):
    """``a - b``, leaf by leaf; a zero ``a`` gives ``-b``, a zero ``b`` gives ``a``."""
    return _combine(a, b, operator.sub, negate, _same)


def negate(a):
    """``-a``, leaf by leaf (``None`` stays ``None``)."""
    return _scale(a, operator.neg)


def multiply(a, b):
    """``a * b``: pointwise between two tangent vectors (a zero factor gives ``None``),
    else every leaf of the tangent vector times the other operand."""
    if _is_vector(a) and _is_vector(b):
        return _combine(a, b, operator.mul, _to_zero, _to_zero)
    if _is_vector(a):
        return _scale(a, lambda x: x * b)
    return _scale(b, lambda x: a * x)


def divide(a, b):
    """``a / b``: pointwise when ``b`` is a tangent vector (a zero ``a`` gives ``None``),
    else every leaf of ``a`` divided by ``b``."""
    if _is_vector(b):
        return _combine(a, b, operator.truediv, _to_zero, None)
    return _scale(a, lambda x: x / b)


def sqrt(a):
    """The elementwise square root of every leaf."""
    return _scale(a, lambda x: _sqrt(x) if isinstance(x, Tensor) else float(x) ** 0.5)


def dot(a, b):
    """The inner product: the sum of every element of ``a * b``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.differentiable import tangent_arithmetic
    >>> class P(s4tf.Differentiable):
    ...     x: float
    ...     y: float
    >>> tangent_arithmetic.dot(P.TangentVector(x=1.0, y=2.0), P.TangentVector(x=3.0, y=4.0))
    11.0
    """
    total = 0.0
    for leaf in tree_leaves(multiply(a, b)):
        total = total + (leaf.sum() if isinstance(leaf, Tensor) else leaf)
    return total


def _is_vector(value) -> bool:
    """Whether ``value`` is a tangent vector: its class is its own tangent class."""
    node = node_type(value.__class__)  # a consumed vector answers its live class
    return node is not None and node.tangent is node.cls


def _not_a_vector(value) -> bool:
    """Registered values that are no tangent vectors (models, cells) are leaves here."""
    node = node_type(type(value))
    return node is not None and node.tangent is not node.cls


def _combine(a, b, op, zero_left, zero_right):
    if type(a) is Tensor and type(b) is Tensor:
        return op(a, b)  # the common leaf: two tensors (neither is a zero scalar)

    def leaf(x, y):
        if type(x) is Tensor and type(y) is Tensor:
            return op(x, y)
        if zero_left is not None and is_zero(x):
            return zero_left(y)
        if zero_right is not None and is_zero(y):
            return zero_right(x)
        return op(0.0 if x is None else x, 0.0 if y is None else y)

    return tree_map_broadcast(leaf, a, b, is_leaf=_not_a_vector)


def _scale(a, fn):
    if type(a) is Tensor:
        return fn(a)
    return tree_map_broadcast(lambda x: None if x is None else fn(x), a, is_leaf=_not_a_vector)


def _same(x):
    return x


def _to_zero(_):
    return None
