"""The error for a non-differentiable operation on a value being differentiated.

Tracers raise it (``float(x)``, ``x.numpy()``, a NumPy call, ``round``), and
``Tensor(...)`` catches it to stack a list holding traced values, so it lives
below both: it imports nothing of s4tf but :mod:`s4tf.user_frames`.
"""

from __future__ import annotations

from .user_frames import user_location

__all__ = ["NonDifferentiableError", "non_differentiable"]


class NonDifferentiableError(TypeError):
    """A non-differentiable operation was applied to a value being differentiated.

    Examples
    --------
    >>> import s4tf, math
    >>> try:
    ...     s4tf.gradient(1.0, of=lambda x: math.sin(x))
    ... except s4tf.NonDifferentiableError as e:
    ...     print("caught")
    caught
    """


def non_differentiable(operation: str) -> NonDifferentiableError:
    """The error for ``operation`` applied to a traced value, naming the user's line.

    Examples
    --------
    >>> from s4tf.non_differentiable import non_differentiable
    >>> print(non_differentiable("round()").args[0].splitlines()[0])
    round() is not differentiable, but it was applied to a value being differentiated, at
    """
    return NonDifferentiableError(
        f"{operation} is not differentiable, but it was applied to a value being "
        f"differentiated, at\n    {user_location()}\n"
        "Derivatives cannot flow through it. If the value is meant to be a constant, wrap it "
        "in s4tf.without_derivative(x) first; to differentiate a foreign function, give it "
        "a derivative with s4tf.differentiable(fn, vjp=..., jvp=...); for math on values "
        "use the s4tf functions (s4tf.sin, s4tf.exp, ...) instead of math/NumPy ones."
    )
