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
from .batching_helpers import elementwise as elementwise_batch
from .primitive import primitive

__all__ = [
    "abs", "add", "cast", "ceil", "clip", "cos", "div", "equal", "exp", "expm1", "floor",
    "floor_div", "greater", "greater_equal", "less", "less_equal", "log", "log1p",
    "logical_and", "logical_not", "logical_or", "maximum", "minimum", "mod", "mul",
    "gelu", "gelu_grad", "neg", "not_equal", "pow", "pow_scalar", "power", "relu", "relu_grad", "round", "rsqrt",
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


def _doc(summary, example, result, details=""):
    """The docstring of an elementwise primitive: what it computes and one example."""
    details = f"\n{details}\n" if details else ""
    return f"{summary}\n{details}\nExamples\n--------\n>>> import s4tf\n>>> {example}\n{result}\n"


_UNARY, _BINARY, _BOOL = "x", "x, y", "Returns a bool tensor; no derivative."
_BROADCAST = "The operands broadcast as in NumPy and are brought to one dtype first."

# One input.
neg = primitive("neg", batch=elementwise_batch, scalar=operator.neg, **_rules(lambda v, x, out: -v), signature=_UNARY,
                doc=_doc("``-x``, elementwise.", "s4tf.ops.neg(s4tf.Tensor([1.0, -2.0])).tolist()",
                         "[-1.0, 2.0]"))
exp = primitive("exp", batch=elementwise_batch, scalar=math.exp, **_rules(lambda v, x, out: v * out), signature=_UNARY,
                doc=_doc("``e ** x``, elementwise.", "s4tf.exp(s4tf.Tensor([0.0, 1.0])).tolist()",
                         "[1.0, 2.71828...]"))
log = primitive("log", batch=elementwise_batch, scalar=math.log, **_rules(lambda v, x, out: v / x), signature=_UNARY,
                doc=_doc("The natural logarithm of ``x``, elementwise.",
                         "s4tf.log(s4tf.Tensor([1.0, 2.0])).tolist()", "[0.0, 0.69314...]"))
log1p = primitive("log1p", batch=elementwise_batch, scalar=math.log1p, **_rules(lambda v, x, out: v / (x + 1)),
                  signature=_UNARY,
                  doc=_doc("``log(1 + x)``, elementwise, accurate for small ``x``.",
                           "s4tf.log1p(s4tf.Tensor([0.0, 1e-5])).tolist()", "[0.0, 9.99994...e-06]"))
expm1 = primitive("expm1", batch=elementwise_batch, scalar=math.expm1, **_rules(lambda v, x, out: v * (out + 1)),
                  signature=_UNARY,
                  doc=_doc("``e ** x - 1``, elementwise, accurate for small ``x``.",
                           "s4tf.expm1(s4tf.Tensor([0.0, 1e-5])).tolist()", "[0.0, 1.00000...e-05]"))
sqrt = primitive("sqrt", batch=elementwise_batch, scalar=math.sqrt, **_rules(lambda v, x, out: v / (out * 2)),
                 signature=_UNARY,
                 doc=_doc("``x ** 0.5``, elementwise.",
                          "s4tf.sqrt(s4tf.Tensor([4.0, 9.0])).tolist()", "[2.0, 3.0]"))
rsqrt = primitive("rsqrt", batch=elementwise_batch, scalar=_scalar_rsqrt, **_rules(lambda v, x, out: v * out / x * -0.5),
                  signature=_UNARY,
                  doc=_doc("``x ** -0.5``, elementwise.",
                           "s4tf.rsqrt(s4tf.Tensor([4.0, 16.0])).tolist()", "[0.5, 0.25]"))
sin = primitive("sin", batch=elementwise_batch, scalar=math.sin, **_rules(lambda v, x, out: v * cos(x)), signature=_UNARY,
                doc=_doc("The sine of ``x`` (radians), elementwise.",
                         "s4tf.sin(s4tf.Tensor([0.0, 1.0])).tolist()", "[0.0, 0.84147...]"))
cos = primitive("cos", batch=elementwise_batch, scalar=math.cos, **_rules(lambda v, x, out: -(v * sin(x))),
                signature=_UNARY,
                doc=_doc("The cosine of ``x`` (radians), elementwise.",
                         "s4tf.cos(s4tf.Tensor([0.0, 1.0])).tolist()", "[1.0, 0.54030...]"))
tan = primitive("tan", batch=elementwise_batch, scalar=math.tan, **_rules(lambda v, x, out: v * (out * out + 1)),
                signature=_UNARY,
                doc=_doc("The tangent of ``x`` (radians), elementwise.",
                         "s4tf.tan(s4tf.Tensor([0.0, 1.0])).tolist()", "[0.0, 1.55740...]"))
tanh = primitive("tanh", batch=elementwise_batch, scalar=math.tanh, **_rules(lambda v, x, out: v * (1 - out * out)),
                 signature=_UNARY,
                 doc=_doc("The hyperbolic tangent of ``x``, elementwise.",
                          "s4tf.tanh(s4tf.Tensor([0.0, 1.0])).tolist()", "[0.0, 0.76159...]"))
sigmoid = primitive("sigmoid", batch=elementwise_batch, scalar=_sigmoid_scalar,
                    **_rules(lambda v, x, out: v * out * (1 - out)), signature=_UNARY,
                    doc=_doc("The logistic sigmoid ``1 / (1 + e ** -x)``, elementwise.",
                             "s4tf.sigmoid(s4tf.Tensor([0.0, 2.0])).tolist()", "[0.5, 0.88079...]"))
# S4TF's convention: the derivative of abs at 0 is 0 (sign(0) == 0).
abs = primitive("abs", batch=elementwise_batch, scalar=operator.abs, **_rules(lambda v, x, out: v * sign(x)),
                signature=_UNARY,
                doc=_doc("``|x|``, elementwise; its derivative at 0 is 0, as in S4TF.",
                         "s4tf.abs(s4tf.Tensor([-2.0, 0.0, 3.0])).tolist()", "[2.0, 0.0, 3.0]"))
pow_scalar = primitive(
    "pow_scalar",
    batch=elementwise_batch,
    scalar=lambda x, exponent: x ** exponent,
    **_rules(lambda v, x, out, exponent: v * pow_scalar(x, exponent=exponent - 1) * exponent),
    signature="x, *, exponent",
    doc=_doc("``x ** exponent`` for a constant Python number ``exponent`` (what ``x ** 2`` calls).",
             "s4tf.ops.pow_scalar(s4tf.Tensor([2.0, 3.0]), exponent=2.0).tolist()", "[4.0, 9.0]"),
)
cast = primitive(
    "cast",
    batch=elementwise_batch,
    vjp=(lambda g, x, out, dtype: cast(g, dtype=x.dtype) if x.dtype.is_floating else None,),
    jvp=(lambda t, x, out, dtype: cast(t, dtype=dtype),),
    signature="x, *, dtype",
    doc=_doc("``x`` converted to ``dtype`` (what ``x.astype(dtype)`` calls).",
             "s4tf.cast(s4tf.Tensor([1.7, -1.7]), dtype=s4tf.int32).tolist()", "[1, -1]",
             "Differentiable between floating dtypes (the cotangent is cast back); a\n"
             "cast from or to an integer or bool dtype has no derivative."),
)

# Piecewise constant: derivative zero everywhere it exists, so no rules.
sign = primitive("sign", batch=elementwise_batch, scalar=_sign, signature=_UNARY,
                 doc=_doc("-1, 0 or 1 as ``x`` is negative, zero or positive; no derivative.",
                          "s4tf.sign(s4tf.Tensor([-2.0, 0.0, 3.0])).tolist()", "[-1.0, 0.0, 1.0]"))
floor = primitive("floor", batch=elementwise_batch, scalar=lambda x: float(math.floor(x)), signature=_UNARY,
                  doc=_doc("``x`` rounded down, elementwise; no derivative.",
                           "s4tf.floor(s4tf.Tensor([-1.5, 1.5])).tolist()", "[-2.0, 1.0]"))
ceil = primitive("ceil", batch=elementwise_batch, scalar=lambda x: float(math.ceil(x)), signature=_UNARY,
                 doc=_doc("``x`` rounded up, elementwise; no derivative.",
                          "s4tf.ceil(s4tf.Tensor([-1.5, 1.5])).tolist()", "[-1.0, 2.0]"))
round = primitive("round", batch=elementwise_batch, scalar=lambda x: float(x.__round__()), signature=_UNARY,
                  doc=_doc("``x`` rounded to the nearest integer, halves to even; no derivative.",
                           "s4tf.round(s4tf.Tensor([0.5, 1.5, 2.7])).tolist()", "[0.0, 2.0, 3.0]"))
logical_not = primitive("logical_not", batch=elementwise_batch, scalar=operator.not_, signature=_UNARY,
                        doc=_doc("``not x`` of a bool tensor, elementwise (``~x``).",
                                 "s4tf.logical_not(s4tf.Tensor([True, False])).tolist()",
                                 "[False, True]"))

# Two inputs.
add = primitive("add", batch=elementwise_batch, scalar=operator.add, promote=True,
                **_rules(lambda v, x, y, out: v,
                         lambda v, x, y, out: v),
                signature=_BINARY,
                doc=_doc("``x + y`` (what ``+`` calls).",
                         "s4tf.ops.add(s4tf.Tensor([1.0, 2.0]), 3.0).tolist()", "[4.0, 5.0]",
                         _BROADCAST))
sub = primitive("sub", batch=elementwise_batch, scalar=operator.sub, promote=True,
                **_rules(lambda v, x, y, out: v,
                         lambda v, x, y, out: -v),
                signature=_BINARY,
                doc=_doc("``x - y`` (what ``-`` calls).",
                         "s4tf.ops.sub(s4tf.Tensor([1.0, 2.0]), 3.0).tolist()", "[-2.0, -1.0]",
                         _BROADCAST))
mul = primitive("mul", batch=elementwise_batch, scalar=operator.mul, promote=True,
                **_rules(lambda v, x, y, out: v * y,
                         lambda v, x, y, out: x * v),
                signature=_BINARY,
                doc=_doc("``x * y`` (what ``*`` calls).",
                         "s4tf.ops.mul(s4tf.Tensor([1.0, 2.0]), 3.0).tolist()", "[3.0, 6.0]",
                         _BROADCAST))
div = primitive("div", batch=elementwise_batch, scalar=operator.truediv, promote=True,
                **_rules(lambda v, x, y, out: v / y,
                         lambda v, x, y, out: -(v * out) / y),
                signature=_BINARY,
                doc=_doc("``x / y`` (what ``/`` calls); int tensors give float32.",
                         "s4tf.ops.div(s4tf.Tensor([1, 3]), 2).tolist()", "[0.5, 1.5]",
                         _BROADCAST))


def _log_base(x):
    # The exponent's derivative needs log(x); 0 ** y contributes 0, never NaN.
    positive = greater(x, 0)
    return where(positive, log(where(positive, x, 1.0)), 0.0)


pow = primitive("pow", batch=elementwise_batch, scalar=operator.pow, promote=True,
                **_rules(lambda v, x, y, out: v * y * pow(x, y - 1),
                         lambda v, x, y, out: v * out * _log_base(x)),
                signature=_BINARY,
                doc=_doc("``x ** y`` of two tensors (:func:`power` keeps a Python exponent static).",
                         "s4tf.ops.elementwise.pow(s4tf.Tensor([2.0, 3.0]), s4tf.Tensor([3.0, 2.0])).tolist()",
                         "[8.0, 9.0]", _BROADCAST))
# S4TF's convention: on a tie the whole derivative goes to the first argument.
maximum = primitive("maximum", batch=elementwise_batch, scalar=lambda x, y: x if x >= y else y, promote=True,
                    **_rules(lambda v, x, y, out: where(greater_equal(x, y), v, 0.0),
                             lambda v, x, y, out: where(greater_equal(x, y), 0.0, v)),
                    signature=_BINARY,
                    doc=_doc("The larger of ``x`` and ``y``, elementwise.",
                             "s4tf.maximum(s4tf.Tensor([1.0, 5.0]), 3.0).tolist()", "[3.0, 5.0]",
                             f"{_BROADCAST} On a tie the whole derivative goes to ``x``, as in S4TF."))
minimum = primitive("minimum", batch=elementwise_batch, scalar=lambda x, y: x if x <= y else y, promote=True,
                    **_rules(lambda v, x, y, out: where(less_equal(x, y), v, 0.0),
                             lambda v, x, y, out: where(less_equal(x, y), 0.0, v)),
                    signature=_BINARY,
                    doc=_doc("The smaller of ``x`` and ``y``, elementwise.",
                             "s4tf.minimum(s4tf.Tensor([1.0, 5.0]), 3.0).tolist()", "[1.0, 3.0]",
                             f"{_BROADCAST} On a tie the whole derivative goes to ``x``, as in S4TF."))
floor_div = primitive("floor_div", batch=elementwise_batch, scalar=operator.floordiv, promote=True, signature=_BINARY,
                      doc=_doc("``x // y`` (what ``//`` calls); no derivative.",
                               "s4tf.ops.floor_div(s4tf.Tensor([7, -7]), 2).tolist()", "[3, -4]",
                               _BROADCAST))
mod = primitive("mod", batch=elementwise_batch, scalar=operator.mod, promote=True, signature=_BINARY,
                doc=_doc("``x % y`` (what ``%`` calls), with the sign of ``y`` as in Python; "
                         "no derivative.",
                         "s4tf.ops.mod(s4tf.Tensor([7, -7]), 3).tolist()", "[1, 2]", _BROADCAST))
equal = primitive("equal", batch=elementwise_batch, scalar=operator.eq, promote=True, signature=_BINARY,
                  doc=_doc("``x == y``, elementwise (what ``==`` calls).",
                           "s4tf.ops.equal(s4tf.Tensor([1.0, 2.0]), 2.0).tolist()", "[False, True]",
                           f"{_BROADCAST} {_BOOL}"))
not_equal = primitive("not_equal", batch=elementwise_batch, scalar=operator.ne, promote=True, signature=_BINARY,
                      doc=_doc("``x != y``, elementwise (what ``!=`` calls).",
                               "s4tf.ops.not_equal(s4tf.Tensor([1.0, 2.0]), 2.0).tolist()",
                               "[True, False]", f"{_BROADCAST} {_BOOL}"))
less = primitive("less", batch=elementwise_batch, scalar=operator.lt, promote=True, signature=_BINARY,
                 doc=_doc("``x < y``, elementwise (what ``<`` calls).",
                          "s4tf.ops.less(s4tf.Tensor([1.0, 2.0]), 2.0).tolist()", "[True, False]",
                          f"{_BROADCAST} {_BOOL}"))
less_equal = primitive("less_equal", batch=elementwise_batch, scalar=operator.le, promote=True, signature=_BINARY,
                       doc=_doc("``x <= y``, elementwise (what ``<=`` calls).",
                                "s4tf.ops.less_equal(s4tf.Tensor([1.0, 3.0]), 2.0).tolist()",
                                "[True, False]", f"{_BROADCAST} {_BOOL}"))
greater = primitive("greater", batch=elementwise_batch, scalar=operator.gt, promote=True, signature=_BINARY,
                    doc=_doc("``x > y``, elementwise (what ``>`` calls).",
                             "s4tf.ops.greater(s4tf.Tensor([1.0, 3.0]), 2.0).tolist()",
                             "[False, True]", f"{_BROADCAST} {_BOOL}"))
greater_equal = primitive("greater_equal", batch=elementwise_batch, scalar=operator.ge, promote=True, signature=_BINARY,
                          doc=_doc("``x >= y``, elementwise (what ``>=`` calls).",
                                   "s4tf.ops.greater_equal(s4tf.Tensor([1.0, 2.0]), 2.0).tolist()",
                                   "[False, True]", f"{_BROADCAST} {_BOOL}"))
logical_and = primitive("logical_and", batch=elementwise_batch, scalar=lambda x, y: bool(x and y), signature=_BINARY,
                        doc=_doc("``x and y`` of bool tensors, elementwise (``x & y``).",
                                 "s4tf.logical_and(s4tf.Tensor([True, True]), "
                                 "s4tf.Tensor([True, False])).tolist()", "[True, False]"))
logical_or = primitive("logical_or", batch=elementwise_batch, scalar=lambda x, y: bool(x or y), signature=_BINARY,
                       doc=_doc("``x or y`` of bool tensors, elementwise (``x | y``).",
                                "s4tf.logical_or(s4tf.Tensor([False, True]), "
                                "s4tf.Tensor([False, False])).tolist()", "[False, True]"))


def _where_scalar(condition, x, y):
    return x if condition else y


where = primitive(
    "where",
    batch=elementwise_batch,
    scalar=_where_scalar,
    promote=1,
    **_rules(None,
             lambda v, c, x, y, out: where(c, v, 0.0),
             lambda v, c, x, y, out: where(c, 0.0, v)),
    signature="condition, x, y",
    doc=_doc("``x`` where the bool tensor ``condition`` is true, else ``y``, elementwise.",
             "s4tf.where(s4tf.Tensor([True, False]), s4tf.Tensor([1.0, 2.0]), 0.0).tolist()",
             "[1.0, 0.0]",
             "The three broadcast together; ``x`` and ``y`` are brought to one dtype.\n"
             "Differentiable in ``x`` and ``y`` (not in ``condition``)."),
)

# ReLU as one primitive: the composite where(x > 0, x, 0.0) recorded two ops (the
# comparison and the select) and ran two kernels. Same values: NaN and -0.0 give
# +0.0, ints and bools float32; S4TF's convention, the derivative at 0 is 0.
# relu_grad(v, x) is v where x > 0 (else 0): linear in v, and piecewise constant
# in x (no derivative), so its own rules are itself.
relu_grad = primitive(
    "relu_grad",
    batch=elementwise_batch,
    scalar=lambda v, x: v if x > 0 else 0.0,
    **_rules(lambda v, g, x, out: relu_grad(v, x), None),
    signature="v, x",
    doc=_doc("``v`` where ``x > 0``, else 0: the cotangent of :func:`relu`.",
             "s4tf.ops.elementwise.relu_grad(s4tf.Tensor([5.0, 5.0]), s4tf.Tensor([-1.0, 1.0])).tolist()",
             "[0.0, 5.0]"),
)
relu = primitive("relu", batch=elementwise_batch, scalar=lambda x: x if x > 0 else 0.0,
                 **_rules(lambda v, x, out: relu_grad(v, x)), signature=_UNARY,
                 doc=_doc("``max(x, 0)``, elementwise; its derivative at 0 is 0, as in S4TF.",
                          "s4tf.ops.relu(s4tf.Tensor([-1.0, 2.0])).tolist()", "[0.0, 2.0]",
                          "NaN and -0.0 give +0.0; int and bool tensors give float32."))


# GELU (tanh approximation) as one primitive: the composite
# 0.5 x (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2 / pi), recorded nine ops
# forward and some fifteen backward; the kernel runs the same operations in the
# same order (same values, to the bit). gelu_grad(v, x) = v * gelu'(x) is linear
# in v; its derivative in x is written with ordinary ops (_gelu_second), so
# derivatives of every order follow.
_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _gelu_scalar(x):
    return x * (math.tanh((x + x * x * x * _GELU_K) * _GELU_C) + 1.0) * 0.5


def _gelu_grad_scalar(v, x):
    t = math.tanh((x + x * x * x * _GELU_K) * _GELU_C)
    return v * ((t + 1.0) * 0.5 + x * (1.0 - t * t) * (_GELU_C * (1.0 + 3.0 * _GELU_K * x * x)) * 0.5)


def _gelu_second(x):
    """``gelu''(x)``, with ordinary ops: ``(1 - t^2) (u' + x (u'' - 2 t u'^2) / 2)``."""
    t = tanh((x + x * x * x * _GELU_K) * _GELU_C)
    slope = (x * x * (3.0 * _GELU_K) + 1.0) * _GELU_C            # u'
    bend = x * (6.0 * _GELU_K * _GELU_C)                         # u''
    return (1.0 - t * t) * (slope + x * (bend - t * slope * slope * 2.0) * 0.5)


gelu_grad = primitive(
    "gelu_grad",
    batch=elementwise_batch,
    scalar=_gelu_grad_scalar,
    **_rules(lambda a, v, x, out: gelu_grad(a, x), lambda a, v, x, out: a * v * _gelu_second(x)),
    signature="v, x",
    doc=_doc("``v * gelu'(x)``: the cotangent of :func:`gelu` (tanh approximation).",
             "s4tf.ops.elementwise.gelu_grad(s4tf.Tensor([2.0]), s4tf.Tensor([0.0])).tolist()",
             "[1.0]"),
)
gelu = primitive("gelu", batch=elementwise_batch, scalar=_gelu_scalar,
                 **_rules(lambda v, x, out: gelu_grad(v, x)), signature=_UNARY,
                 doc=_doc("``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``, elementwise "
                          "(GELU, tanh approximation), one fused kernel.",
                          "s4tf.ops.elementwise.gelu(s4tf.Tensor([0.0, 1.0], dtype=s4tf.float64)).numpy().round(4).tolist()",
                          "[0.0, 0.8412]", "Float inputs only; :func:`s4tf.gelu` casts others."))


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

    Bounds given as Python numbers must be in order: ``lo > hi`` raises a
    ``ValueError`` (tensor bounds are not read, so they are not checked).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.Tensor([-2.0, 0.5, 3.0]).clip(0.0, 1.0).tolist()
    [0.0, 0.5, 1.0]
    """
    if (isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real)
            and not isinstance(lo, Tensor) and not isinstance(hi, Tensor) and lo > hi):
        raise ValueError(
            f"clip: the lower bound lo={lo!r} is greater than the upper bound hi={hi!r}, so "
            f"every value would become hi. Pass the bounds in order: clip(x, {hi!r}, {lo!r})."
        )
    return minimum(maximum(x, lo), hi)
