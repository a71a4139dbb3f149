"""Activation functions, with Swift for TensorFlow's definitions and defaults.

Each is a composite of differentiable primitives, so derivatives of every order
come from the op library. Piecewise functions are written with ``where`` so the
derivative at the kink follows S4TF's convention (``relu'(0) == 0``), and the
branch not taken is kept finite (``expm1(minimum(x, 0))``) so its zero-weighted
derivative never turns into ``0 * inf = nan``.
"""

from __future__ import annotations

from .dtypes import float32
from .ops import exp as _exp
from .ops import (
    expm1,
    log1p,
    log_softmax,
    minimum,
    sigmoid,
    softmax,
    tanh,
    where,
)
from .ops import relu as _relu
from .ops.elementwise import cast
from .ops.elementwise import gelu as _gelu
from .tensor import Tensor

__all__ = [
    "elu", "gelu", "hard_sigmoid", "hard_swish", "identity", "leaky_relu", "log_sigmoid",
    "log_softmax", "mish", "relu", "relu6", "selu", "sigmoid", "softmax", "softplus",
    "softsign", "swish", "tanh",
]

# SELU's constants (Klambauer et al. 2017), as S4TF and Keras use them.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
# Above this, log1p(exp(x)) equals x to within exp(-30) ~ 1e-13, and exp(x)
# would overflow float16/32 soon after: softplus switches to the identity.
_SOFTPLUS_THRESHOLD = 30.0


def identity(x):
    """``x`` unchanged (the default activation of every layer).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.identity(s4tf.Tensor([-1.0])).tolist()
    [-1.0]
    """
    return x


def relu(x):
    """``max(x, 0)``, with derivative 0 at 0 (S4TF's convention).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.relu(s4tf.Tensor([-1.0, 0.0, 2.0])).tolist()
    [0.0, 0.0, 2.0]
    >>> s4tf.gradient(0.0, of=s4tf.relu)
    0.0
    """
    # One primitive, the values of where(x > 0, x, 0.0): one op to record, one kernel.
    return _relu(x)


def relu6(x):
    """``min(max(x, 0), 6)``; derivative 1 on ``(0, 6)`` and 0 elsewhere.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.relu6(s4tf.Tensor([-1.0, 3.0, 9.0])).tolist()
    [0.0, 3.0, 6.0]
    """
    return where(x > 0, where(x < 6, x, 6.0), 0.0)


def leaky_relu(x, alpha: float = 0.2):
    """``x`` for ``x > 0``, ``alpha * x`` otherwise (S4TF's default ``alpha`` is 0.2).

    Examples
    --------
    >>> import s4tf
    >>> [round(v, 4) for v in s4tf.leaky_relu(s4tf.Tensor([-1.0, 2.0])).tolist()]
    [-0.2, 2.0]
    """
    return where(x > 0, x, x * alpha)


def elu(x, alpha: float = 1.0):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.elu(s4tf.Tensor([-1.0])).item(), 4)
    -0.6321
    """
    return where(x > 0, x, expm1(minimum(x, 0.0)) * alpha)


def selu(x):
    """Scaled ELU: ``scale * elu(x, alpha)`` with the self-normalising constants.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.selu(s4tf.Tensor([1.0])).item(), 4)
    1.0507
    """
    return where(x > 0, x, expm1(minimum(x, 0.0)) * _SELU_ALPHA) * _SELU_SCALE


def gelu(x):
    """Gaussian error linear unit, tanh approximation (as S4TF).

    ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.gelu(s4tf.Tensor([1.0])).item(), 4)
    0.8412
    """
    # One fused primitive (its kernel gives the composite's bits); int and bool
    # tensors are promoted to float32 as the composite's arithmetic did.
    if isinstance(x, Tensor) and not x.dtype.is_floating:
        x = cast(x, dtype=float32)
    return _gelu(x)


def softplus(x):
    """``log(1 + exp(x))``, without overflow for large ``x``.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.softplus(s4tf.Tensor([0.0])).item(), 4)
    0.6931
    >>> s4tf.softplus(s4tf.Tensor([1e4])).item()
    10000.0
    """
    return where(x > _SOFTPLUS_THRESHOLD, x, log1p(_exp(minimum(x, _SOFTPLUS_THRESHOLD))))


def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.log_sigmoid(s4tf.Tensor([0.0])).item(), 4)
    -0.6931
    """
    return -softplus(-x)


def softsign(x):
    """``x / (1 + |x|)``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.softsign(s4tf.Tensor([1.0, -3.0])).tolist()
    [0.5, -0.75]
    """
    return x / (abs(x) + 1.0)


def swish(x):
    """``x * sigmoid(x)`` (also called SiLU).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.swish(s4tf.Tensor([0.0])).item()
    0.0
    """
    return x * sigmoid(x)


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``, S4TF's piecewise-linear sigmoid.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.hard_sigmoid(s4tf.Tensor([-4.0, 0.0, 4.0])).tolist()
    [0.0, 0.5, 1.0]
    """
    return relu6(x + 3.0) / 6.0


def hard_swish(x):
    """``x * relu6(x + 3) / 6``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.hard_swish(s4tf.Tensor([-4.0, 4.0])).tolist()
    [-0.0, 4.0]
    """
    return x * hard_sigmoid(x)


def mish(x):
    """``x * tanh(softplus(x))``.

    Examples
    --------
    >>> import s4tf
    >>> round(s4tf.mish(s4tf.Tensor([1.0])).item(), 4)
    0.8651
    """
    return x * tanh(softplus(x))


# `sigmoid`, `tanh`, `softmax` and `log_softmax` are the op library's own
# functions, re-exported so every activation can be imported from here.
_REEXPORTED = (sigmoid, tanh, softmax, log_softmax)
