"""Hyperparameter checks shared by the optimizers (S4TF's preconditions, as errors).

Every check starts with :func:`number`: a hyperparameter is a real number, never
a string, a bool or None, so ``SGD(model, learning_rate="0.1")`` fails at
construction with an error naming the argument. ``Optimizer.__init__`` runs it
on every name in ``hyperparameters``, so subclasses need no checks of their own
for that.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["non_negative", "number", "unit_interval"]


def number(owner: str, name: str, value) -> float:
    """``value`` as a float; ``TypeError`` naming ``name`` unless it is a real number.

    Examples
    --------
    >>> from s4tf.optimizers._checks import number
    >>> number("SGD", "learning_rate", 0.1)
    0.1
    >>> number("SGD", "learning_rate", "0.1")
    Traceback (most recent call last):
    ...
    TypeError: SGD: learning_rate must be a number, got '0.1' (a str). Pass learning_rate=0.1.
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        return float(value)
    hint = ""
    if isinstance(value, str):
        try:
            hint = f" Pass {name}={float(value)!r}."
        except ValueError:
            pass
    raise TypeError(
        f"{owner}: {name} must be a number, got {value!r} (a {type(value).__name__}).{hint}"
    )


def non_negative(owner: str, **values: float) -> None:
    """Raise ``ValueError`` naming the first negative hyperparameter."""
    for name, value in values.items():
        if not number(owner, name, value) >= 0:
            raise ValueError(f"{owner}: {name} must be >= 0, got {value!r}.")


def unit_interval(owner: str, **values: float) -> None:
    """Raise ``ValueError`` naming the first hyperparameter outside [0, 1]."""
    for name, value in values.items():
        if not 0 <= number(owner, name, value) <= 1:
            raise ValueError(f"{owner}: {name} must be between 0 and 1, got {value!r}.")
