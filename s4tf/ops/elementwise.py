"""Elementwise primitives and their derivative rules, one line each.

Rules are per argument: ``vjp=(rule_x, rule_y)`` gives each argument's
cotangent from ``(g, x, y, out)``; the engine sums a cotangent down to its
argument's shape when broadcasting made it larger, and calls only the rules of
arguments being differentiated. ``jvp`` rules are linear in one tangent each;
the engine adds their results.
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
    "neg", "not_equal", "pow", "pow_scalar", "power", "round", "rsqrt", "sigmoid", "sign",
    "sin", "sqrt", "square", "sub", "tan", "tanh", "where",
]


def _sigmoid_scalar(x):
    return 0.5 * (math.tanh(0.5 * x) + 1.0)


def _sign(x):
    return float((x > 0) - (x < 0))


def _scalar_rsqrt(x):
    return 1.0 / math.sqrt(x)


# One input.
neg = primitive("neg", scalar=operator.neg,
                vjp=lambda g, x, out: -g,
                jvp=lambda t, x, out: -t)
exp = primitive("exp", scalar=math.exp,
                vjp=lambda g, x, out: g * out,
                jvp=lambda t, x, out: t * out)
log = primitive("log", scalar=math.log,
                vjp=lambda g, x, out: g / x,
                jvp=lambda t, x, out: t / x)
log1p = primitive("log1p", scalar=math.log1p,
                  vjp=lambda g, x, out: g / (x + 1),
                  jvp=lambda t, x, out: t / (x + 1))
expm1 = primitive("expm1", scalar=math.expm1,
                  vjp=lambda g, x, out: g * (out + 1),
                  jvp=lambda t, x, out: t * (out + 1))
sqrt = primitive("sqrt", scalar=math.sqrt,
                 vjp=lambda g, x, out: g / (out * 2),
                 jvp=lambda t, x, out: t / (out * 2))
rsqrt = primitive("rsqrt", scalar=_scalar_rsqrt,
                  vjp=lambda g, x, out: g * out / x * -0.5,
                  jvp=lambda t, x, out: t * out / x * -0.5)
sin = primitive("sin", scalar=math.sin,
                vjp=lambda g, x, out: g * cos(x),
                jvp=lambda t, x, out: t * cos(x))
cos = primitive("cos", scalar=math.cos,
                vjp=lambda g, x, out: -(g * sin(x)),
                jvp=lambda t, x, out: -(t * sin(x)))
tan = primitive("tan", scalar=math.tan,
                vjp=lambda g, x, out: g * (out * out + 1),
                jvp=lambda t, x, out: t * (out * out + 1))
tanh = primitive("tanh", scalar=math.tanh,
                 vjp=lambda g, x, out: g * (1 - out * out),
                 jvp=lambda t, x, out: t * (1 - out * out))
sigmoid = primitive("sigmoid", scalar=_sigmoid_scalar,
                    vjp=lambda g, x, out: g * out * (1 - out),
                    jvp=lambda t, x, out: t * out * (1 - out))
# S4TF's convention: the derivative of abs at 0 is 0 (sign(0) == 0).
abs = primitive("abs", scalar=operator.abs,
                vjp=lambda g, x, out: g * sign(x),
                jvp=lambda t, x, out: t * sign(x))
pow_scalar = primitive(
    "pow_scalar",
    scalar=lambda x, exponent: x ** exponent,
    vjp=lambda g, x, out, exponent: g * pow_scalar(x, exponent=exponent - 1) * exponent,
    jvp=lambda t, x, out, exponent: t * pow_scalar(x, exponent=exponent - 1) * exponent,
)
cast = primitive(
    "cast",
    vjp=lambda g, x, out, dtype: cast(g, dtype=x.dtype) if x.dtype.is_floating else None,
    jvp=lambda t, x, out, dtype: cast(t, dtype=dtype),
)

# Piecewise constant: derivative zero everywhere it exists, so no rules.
sign = primitive("sign", scalar=_sign)
floor = primitive("floor", scalar=lambda x: float(math.floor(x)))
ceil = primitive("ceil", scalar=lambda x: float(math.ceil(x)))
round = primitive("round", scalar=lambda x: float(x.__round__()))
logical_not = primitive("logical_not", scalar=operator.not_)

# Two inputs.
add = primitive("add", scalar=operator.add, promote=True,
                vjp=(lambda g, x, y, out: g,
                     lambda g, x, y, out: g),
                jvp=(lambda t, x, y, out: t,
                     lambda t, x, y, out: t))
sub = primitive("sub", scalar=operator.sub, promote=True,
                vjp=(lambda g, x, y, out: g,
                     lambda g, x, y, out: -g),
                jvp=(lambda t, x, y, out: t,
                     lambda t, x, y, out: -t))
mul = primitive("mul", scalar=operator.mul, promote=True,
                vjp=(lambda g, x, y, out: g * y,
                     lambda g, x, y, out: x * g),
                jvp=(lambda t, x, y, out: t * y,
                     lambda t, x, y, out: x * t))
div = primitive("div", scalar=operator.truediv, promote=True,
                vjp=(lambda g, x, y, out: g / y,
                     lambda g, x, y, out: -(g * out) / y),
                jvp=(lambda t, x, y, out: t / y,
                     lambda t, x, y, out: -(t * out) / y))


def _log_base(x):
    # The exponent's derivative needs log(x); 0 ** y contributes 0, never NaN.
    positive = greater(x, 0)
    return where(positive, log(where(positive, x, 1.0)), 0.0)


pow = primitive("pow", scalar=operator.pow, promote=True,
                vjp=(lambda g, x, y, out: g * y * pow(x, y - 1),
                     lambda g, x, y, out: g * out * _log_base(x)),
                jvp=(lambda t, x, y, out: t * y * pow(x, y - 1),
                     lambda t, x, y, out: t * out * _log_base(x)))
# S4TF's convention: on a tie the whole derivative goes to the first argument.
maximum = primitive("maximum", scalar=lambda x, y: x if x >= y else y, promote=True,
                    vjp=(lambda g, x, y, out: where(greater_equal(x, y), g, 0.0),
                         lambda g, x, y, out: where(greater_equal(x, y), 0.0, g)),
                    jvp=(lambda t, x, y, out: where(greater_equal(x, y), t, 0.0),
                         lambda t, x, y, out: where(greater_equal(x, y), 0.0, t)))
minimum = primitive("minimum", scalar=lambda x, y: x if x <= y else y, promote=True,
                    vjp=(lambda g, x, y, out: where(less_equal(x, y), g, 0.0),
                         lambda g, x, y, out: where(less_equal(x, y), 0.0, g)),
                    jvp=(lambda t, x, y, out: where(less_equal(x, y), t, 0.0),
                         lambda t, x, y, out: where(less_equal(x, y), 0.0, t)))
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
    vjp=(None,
         lambda g, c, x, y, out: where(c, g, 0.0),
         lambda g, c, x, y, out: where(c, 0.0, g)),
    jvp=(None,
         lambda t, c, x, y, out: where(c, t, 0.0),
         lambda t, c, x, y, out: where(c, 0.0, t)),
)


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
