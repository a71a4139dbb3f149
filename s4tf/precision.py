"""Precision policies: layers compute in float16 or bfloat16, parameters stay float32.

Under ``mixed_bfloat16`` or ``mixed_float16`` every layer whose parameters
are float32 (the *master weights*) computes in the low dtype: the wrapper the
:class:`s4tf.Layer` base puts around ``__call__`` casts the layer's float32
tensor fields and its floating inputs to the low dtype before the layer runs.
The casts are differentiable, so gradients come back float32, in the
parameters' dtype; optimizers keep float32 slots and write float32 updates.
Layers whose parameters were made in another dtype (``Dense(..., dtype=
s4tf.float64)``) keep it. Losses compute in float32 (``softmax_cross_entropy``
and the other losses upcast float16 and bfloat16 logits), as in Keras.

float16 overflows above 65,504, so small gradients underflow and large
activations overflow: pair ``mixed_float16`` with
:class:`s4tf.optimizers.LossScale`. bfloat16 has float32's range and needs
no loss scaling.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as _dtypes

__all__ = ["Policy", "get_policy", "policy", "set_policy"]


class Policy:
    """A precision policy: the dtype layers compute in and the dtype of their parameters.

    Attributes
    ----------
    name : str
        ``"float32"``, ``"mixed_bfloat16"`` or ``"mixed_float16"``.
    compute_dtype : DType
        What layers compute in.
    variable_dtype : DType
        What parameters, optimizer slots and updates are kept in (float32).

    Examples
    --------
    >>> import s4tf
    >>> p = s4tf.precision.get_policy()
    >>> p.name, p.compute_dtype, p.variable_dtype
    ('float32', float32, float32)
    """

    __slots__ = ("name", "compute_dtype", "variable_dtype")

    def __init__(self, name: str, compute_dtype, variable_dtype) -> None:
        self.name = name
        self.compute_dtype = compute_dtype
        self.variable_dtype = variable_dtype

    def __repr__(self) -> str:
        return f"Policy({self.name!r})"


POLICIES = {
    "float32": Policy("float32", _dtypes.float32, _dtypes.float32),
    "mixed_bfloat16": Policy("mixed_bfloat16", _dtypes.bfloat16, _dtypes.float32),
    "mixed_float16": Policy("mixed_float16", _dtypes.float16, _dtypes.float32),
}

_current = POLICIES["float32"]
# What the layer wrapper reads on every call: the low compute dtype, or None under
# "float32" (one attribute read, so the default policy costs nothing).
# Shared within s4tf (layers/layer.py), not part of the public API.
low_compute_dtype: _dtypes.DType | None = None


def _resolve(value) -> Policy:
    if isinstance(value, Policy):
        return value
    if isinstance(value, str) and value in POLICIES:
        return POLICIES[value]
    raise ValueError(
        f"s4tf.precision: no policy {value!r}; use one of {sorted(POLICIES)} "
        "(e.g. s4tf.precision.set_policy(\"mixed_bfloat16\"))."
    )


def get_policy() -> Policy:
    """The policy in force.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.precision.policy("mixed_bfloat16"):
    ...     s4tf.precision.get_policy().compute_dtype
    bfloat16
    """
    return _current


def set_policy(policy) -> None:
    """Make ``policy`` (a name or a :class:`Policy`) the policy of every later layer call.

    A process-wide setting, as Keras's ``set_dtype_policy``; :func:`policy`
    sets it for a ``with`` block only.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.precision.set_policy("mixed_float16")
    >>> s4tf.layers.Dense(2, 3)(s4tf.ones([1, 2])).dtype
    float16
    >>> s4tf.precision.set_policy("float32")
    """
    global _current, low_compute_dtype
    _current = _resolve(policy)
    low = _current.compute_dtype
    low_compute_dtype = None if low == _current.variable_dtype else low


class policy:
    """Use precision policy ``name`` inside a ``with`` block (restored after it).

    Parameters
    ----------
    name : str or Policy
        ``"float32"`` (the default policy: layers compute in their parameters'
        dtype), ``"mixed_bfloat16"`` or ``"mixed_float16"`` (layers with
        float32 parameters compute in the low dtype; parameters, gradients
        and optimizer state stay float32).

    Examples
    --------
    >>> import s4tf
    >>> dense = s4tf.layers.Dense(2, 3)
    >>> with s4tf.precision.policy("mixed_bfloat16"):
    ...     y = dense(s4tf.ones([1, 2]))
    ...     g = s4tf.gradient(dense, of=lambda m: m(s4tf.ones([1, 2])).sum())
    >>> y.dtype, g.weight.dtype, dense.weight.dtype
    (bfloat16, float32, float32)
    """

    def __init__(self, name) -> None:
        self._policy = _resolve(name)
        self._previous: list[Policy] = []

    def __enter__(self) -> Policy:
        self._previous.append(_current)
        set_policy(self._policy)
        return self._policy

    def __exit__(self, *exc) -> None:
        set_policy(self._previous.pop())


# The smallest positive normal number of each floating dtype.
_SMALLEST_NORMAL = {"float16": 2.0**-14, "bfloat16": 2.0**-126, "float32": 2.0**-126,
                    "float64": 2.0**-1022}


def representable_epsilon(epsilon: float, dtype) -> float:
    """``epsilon`` raised to ``dtype``'s smallest normal number when it is smaller (0 stays 0).

    An optimizer's epsilon guards a division (``m / (sqrt(v) + epsilon)``);
    Adam's default ``1e-8`` rounds to 0 in float16, where small gradients'
    squares also underflow, so the division would give inf. float16's smallest
    normal, about ``6.1e-5``, keeps the step bounded; in float32, bfloat16 and
    float64 every usual epsilon is already representable and unchanged.
    Shared within s4tf (the optimizers' rules), not part of the public API.

    Examples
    --------
    >>> import numpy as np
    >>> representable_epsilon(1e-8, np.float16), representable_epsilon(1e-8, np.float32)
    (6.103515625e-05, 1e-08)
    """
    if epsilon <= 0:
        return epsilon
    return max(epsilon, _SMALLEST_NORMAL.get(np.dtype(dtype).name, 0.0))
