"""The one table from NumPy ufunc names to s4tf ops.

Read wherever NumPy's ufunc protocol meets s4tf values: ``Tensor.__array_ufunc__``
(``ndarray + tensor``, ``np.exp(tensor)``; installed by
:mod:`s4tf.ops.tensor_methods`) and the optimizers' ``TensorBuffer``, which runs
in-place NumPy rules on the lazy backend. A ufunc maps to the op that computes
it elementwise with NumPy's broadcasting, so ``np.power`` is the ``pow``
primitive (a Python exponent stays a weak scalar, as for NumPy), not the
``**`` operator's static-exponent shortcut.
"""

from __future__ import annotations

from .elementwise import (
    abs,
    add,
    cos,
    div,
    equal,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    mul,
    neg,
    not_equal,
    pow,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tanh,
)
from .linalg import matmul

__all__ = ["ARITHMETIC_UFUNCS", "UFUNCS"]

UFUNCS = {
    "add": add, "subtract": sub, "multiply": mul, "true_divide": div, "divide": div,
    "power": pow, "matmul": matmul, "negative": neg, "absolute": abs, "sign": sign,
    "exp": exp, "log": log, "sqrt": sqrt, "square": square, "sin": sin, "cos": cos,
    "tanh": tanh, "maximum": maximum, "minimum": minimum, "equal": equal,
    "not_equal": not_equal, "less": less, "less_equal": less_equal, "greater": greater,
    "greater_equal": greater_equal,
}
# The ones that are Python operators: allowed on traced values (`array * x`).
ARITHMETIC_UFUNCS = frozenset(
    {"add", "subtract", "multiply", "true_divide", "divide", "power", "matmul", "negative",
     "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
)
