"""Elementwise primitives and their derivative rules, one line each.

Rules are per argument (:mod:`s4tf.ops.primitive`): ``(rule_x, rule_y)`` maps
``(v, x, y, out)`` to argument x's and y's part. An elementwise op's Jacobian
is diagonal, so one table serves both modes (:func:`_rules`): ``v`` is the
output's cotangent in reverse mode and the argument's tangent in forward mode.
The engine sums a cotangent down to its argument's shape when broadcasting
made it larger, broadcasts a tangent up, and calls only the rules of arguments
being differentiated.
"""

from __future__ import annotations

import math
import numbers
import operator

from ..tensor import Tensor
from .primitive import primitive

__all__ = [
    "abs", "add", "cast", "ceil", "clip", "cos", "div", "equal", "exp", "expm1", "floor",
    "floor_div", "greater", "greater_equal", "less", "less_equal", "log", "log1p",
    "logical_and", "logical_not", "logical_or", "maximum", "minimum", "mod", "mul",
    "neg", "not_equal", "pow", "pow_scalar", "power", "relu", "relu_grad", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sqrt", "square", "sub", "tan", "tanh", "where",
]


def _sigmoid_scalar(x):
    return 0.5 * (math.tanh(0.5 * x) + 1.0)


def _sign(x):
    return float((x > 0) - (x < 0))


def _scalar_rsqrt(x):
    return 1.0 / math.sqrt(x)


def _rules(*maps):
    """Both modes' rule tables of an elementwise op, from one linear map per argument.

    An elementwise op's Jacobian is diagonal, so each argument's map
    ``v -> v * d(out)/d(arg)`` is its own transpose: it gives the argument's
    cotangent from the output's (``vjp``) and its share of the output's tangent
    (``jvp``) alike.
    """
    return {"vjp": maps, "jvp": maps}


# One input.
neg = primitive("neg", scalar=operator.neg, **_rules(lambda v, x, out: -v))
exp = primitive("exp", scalar=math.exp, **_rules(lambda v, x, out: v * out))
log = primitive("log", scalar=math.log, **_rules(lambda v, x, out: v / x))
log1p = primitive("log1p", scalar=math.log1p, **_rules(lambda v, x, out: v / (x + 1)))
expm1 = primitive("expm1", scalar=math.expm1, **_rules(lambda v, x, out: v * (out + 1)))
sqrt = primitive("sqrt", scalar=math.sqrt, **_rules(lambda v, x, out: v / (out * 2)))
rsqrt = primitive("rsqrt", scalar=_scalar_rsqrt, **_rules(lambda v, x, out: v * out / x * -0.5))
sin = primitive("sin", scalar=math.sin, **_rules(lambda v, x, out: v * cos(x)))
cos = primitive("cos", scalar=math.cos, **_rules(lambda v, x, out: -(v * sin(x))))
tan = primitive("tan", scalar=math.tan, **_rules(lambda v, x, out: v * (out * out + 1)))
tanh = primitive("tanh", scalar=math.tanh, **_rules(lambda v, x, out: v * (1 - out * out)))
sigmoid = primitive("sigmoid", scalar=_sigmoid_scalar,
                    **_rules(lambda v, x, out: v * out * (1 - out)))
# S4TF's convention: the derivative of abs at 0 is 0 (sign(0) == 0).
abs = primitive("abs", scalar=operator.abs, **_rules(lambda v, x, out: v * sign(x)))
pow_scalar = primitive(
    "pow_scalar",
    scalar=lambda x, exponent: x ** exponent,
    **_rules(lambda v, x, out, exponent: v * pow_scalar(x, exponent=exponent - 1) * exponent),
)
cast = primitive(
    "cast",
    vjp=(lambda g, x, out, dtype: cast(g, dtype=x.dtype) if x.dtype.is_floating else None,),
    jvp=(lambda t, x, out, dtype: cast(t, dtype=dtype),),
)

# Piecewise constant: derivative zero everywhere it exists, so no rules.
sign = primitive("sign", scalar=_sign)
floor = primitive("floor", scalar=lambda x: float(math.floor(x)))
ceil = primitive("ceil", scalar=lambda x: float(math.ceil(x)))
round = primitive("round", scalar=lambda x: float(x.__round__()))
logical_not = primitive("logical_not", scalar=operator.not_)

# Two inputs.
add = primitive("add", scalar=operator.add, promote=True,
                **_rules(lambda v, x, y, out: v,
                         lambda v, x, y, out: v))
sub = primitive("sub", scalar=operator.sub, promote=True,
                **_rules(lambda v, x, y, out: v,
                         lambda v, x, y, out: -v))
mul = primitive("mul", scalar=operator.mul, promote=True,
                **_rules(lambda v, x, y, out: v * y,
                         lambda v, x, y, out: x * v))
div = primitive("div", scalar=operator.truediv, promote=True,
                **_rules(lambda v, x, y, out: v / y,
                         lambda v, x, y, out: -(v * out) / y))


def _log_base(x):
    # The exponent's derivative needs log(x); 0 ** y contributes 0, never NaN.
    positive = greater(x, 0)
    return where(positive, log(where(positive, x, 1.0)), 0.0)


pow = primitive("pow", scalar=operator.pow, promote=True,
                **_rules(lambda v, x, y, out: v * y * pow(x, y - 1),
                         lambda v, x, y, out: v * out * _log_base(x)))
# S4TF's convention: on a tie the whole derivative goes to the first argument.
maximum = primitive("maximum", scalar=lambda x, y: x if x >= y else y, promote=True,
                    **_rules(lambda v, x, y, out: where(greater_equal(x, y), v, 0.0),
                             lambda v, x, y, out: where(greater_equal(x, y), 0.0, v)))
minimum = primitive("minimum", scalar=lambda x, y: x if x <= y else y, promote=True,
                    **_rules(lambda v, x, y, out: where(less_equal(x, y), v, 0.0),
                             lambda v, x, y, out: where(less_equal(x, y), 0.0, v)))
floor_div = primitive("floor_div", scalar=operator.floordiv, promote=True)
mod = primitive("mod", scalar=operator.mod, promote=True)
equal = primitive("equal", scalar=operator.eq, promote=True)
not_equal = primitive("not_equal", scalar=operator.ne, promote=True)
less = primitive("less", scalar=operator.lt, promote=True)
less_equal = primitive("less_equal", scalar=operator.le, promote=True)
greater = primitive("greater", scalar=operator.gt, promote=True)
greater_equal = primitive("greater_equal", scalar=operator.ge, promote=True)
logical_and = primitive("logical_and", scalar=lambda x, y: bool(x and y))
logical_or = primitive("logical_or", scalar=lambda x, y: bool(x or y))


def _where_scalar(condition, x, y):
    return x if condition else y


where = primitive(
    "where",
    scalar=_where_scalar,
    promote=1,
    **_rules(None,
             lambda v, c, x, y, out: where(c, v, 0.0),
             lambda v, c, x, y, out: where(c, 0.0, v)),
)

# ReLU as one primitive: the composite where(x > 0, x, 0.0) recorded two ops (the
# comparison and the select) and ran two kernels. Same values: NaN and -0.0 give
# +0.0, ints and bools float32; S4TF's convention, the derivative at 0 is 0.
# relu_grad(v, x) is v where x > 0 (else 0): linear in v, and piecewise constant
# in x (no derivative), so its own rules are itself.
relu_grad = primitive(
    "relu_grad",
    scalar=lambda v, x: v if x > 0 else 0.0,
    **_rules(lambda v, g, x, out: relu_grad(v, x), None),
)
relu = primitive("relu", scalar=lambda x: x if x > 0 else 0.0,
                 **_rules(lambda v, x, out: relu_grad(v, x)))


# Composites: plain functions of the primitives above.
def power(x, y):
    """``x ** y``; a constant Python exponent stays static (``x ** 2`` is ``x * x``).

    Examples
    --------
    >>> import s4tf
    >>> (s4tf.Tensor([3.0]) ** 2).tolist()
    [9.0]
    """
    if isinstance(y, numbers.Real) and not isinstance(y, bool) and not isinstance(y, Tensor):
        if isinstance(x, Tensor):
            if y == 1:
                return x
            return pow_scalar(x, exponent=float(y))
    return pow(x, y)


def square(x):
    """``x * x``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.square(s4tf.Tensor([-2.0])).tolist()
    [4.0]
    """
    return mul(x, x)


def clip(x, lo, hi):
    """``x`` limited to ``[lo, hi]``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([-2.0, 0.5, 3.0]).clip(0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    return minimum(maximum(x, lo), hi)
