"""Hyperparameters declared once, as fields with their checks (S4TF's preconditions, as errors).

An optimizer lists its constructor arguments as class fields::

    class SGD(Optimizer):
        learning_rate: float = hyperparameter(0.01, check=non_negative)
        momentum: float = hyperparameter(0.0, check=non_negative)
        nesterov: bool = flag(False)
        decay: float = hyperparameter(0.0, check=non_negative)

and :class:`~s4tf.optimizers.Optimizer` builds ``__init__(self, model,
learning_rate=0.01, momentum=0.0, nesterov=False, decay=0.0)`` from them, in
declaration order, after the fields of its base classes (as dataclasses do).
Each hyperparameter is a plain attribute afterwards (schedules assign
``learning_rate``), is saved by ``state_dict()``, and is checked at
construction: first :func:`number` (a real number, never a string, a bool or
None, so ``SGD(model, learning_rate="0.1")`` fails naming the argument), then
its own ``check``. A :func:`flag` is a bool setting, stored as ``bool(value)``
and not saved.
"""

from __future__ import annotations

import inspect
import numbers

import numpy as np

__all__ = ["Hyperparameter", "declare", "flag", "hyperparameter", "non_negative", "number",
           "unit_interval"]


def number(owner: str, name: str, value) -> float:
    """``value`` as a float; ``TypeError`` naming ``name`` unless it is a real number.

    Examples
    --------
    >>> from s4tf.optimizers.hyperparameters import number
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


def non_negative(owner: str, name: str, value) -> None:
    """``ValueError`` unless ``value`` is a number ``>= 0``.

    Examples
    --------
    >>> from s4tf.optimizers.hyperparameters import non_negative
    >>> non_negative("SGD", "momentum", -0.5)
    Traceback (most recent call last):
    ...
    ValueError: SGD: momentum must be >= 0, got -0.5.
    """
    if not number(owner, name, value) >= 0:
        raise ValueError(f"{owner}: {name} must be >= 0, got {value!r}.")


def unit_interval(owner: str, name: str, value) -> None:
    """``ValueError`` unless ``value`` is a number in ``[0, 1]``.

    Examples
    --------
    >>> from s4tf.optimizers.hyperparameters import unit_interval
    >>> unit_interval("Adam", "beta1", 1.5)
    Traceback (most recent call last):
    ...
    ValueError: Adam: beta1 must be between 0 and 1, got 1.5.
    """
    if not 0 <= number(owner, name, value) <= 1:
        raise ValueError(f"{owner}: {name} must be between 0 and 1, got {value!r}.")


class Hyperparameter:
    """One declared constructor argument of an optimizer: its default and its check.

    Made by :func:`hyperparameter` or :func:`flag`; read by
    :func:`declare`. ``saved`` ones are numbers, checked and saved by
    ``state_dict()``; the others (flags) are stored as ``bool(value)``.
    """

    __slots__ = ("annotation", "check", "default", "saved")

    def __init__(self, default, check, saved: bool) -> None:
        self.default, self.check, self.saved = default, check, saved
        self.annotation = inspect.Parameter.empty

    def stored(self, value):
        """What the attribute holds for the argument ``value``."""
        return value if self.saved else bool(value)


def hyperparameter(default: float, *, check=None):
    """Declare a numeric hyperparameter with its default and its check.

    Every hyperparameter must be a real number (:func:`number`); ``check``
    (optional: :func:`non_negative`, :func:`unit_interval` or your own
    ``check(owner, name, value)``) then raises when ``value`` is not allowed.
    Both run at construction.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.optimizers.hyperparameters import hyperparameter, non_negative
    >>> class Scaled(s4tf.optimizers.Optimizer):
    ...     learning_rate: float = hyperparameter(0.1, check=non_negative)
    ...     def step_constants(self, step):
    ...         return {"lr": self.learning_rate}
    ...     def update_parameter(self, param, grad, state, constants):
    ...         param -= constants["lr"] * grad
    >>> Scaled([s4tf.ones([2])], learning_rate=0.5).learning_rate
    0.5
    >>> Scaled([s4tf.ones([2])], learning_rate=-1.0)
    Traceback (most recent call last):
    ...
    ValueError: Scaled: learning_rate must be >= 0, got -1.0.
    """
    return Hyperparameter(default, check, saved=True)


def flag(default: bool):
    """Declare a bool setting (SGD's ``nesterov``): stored as ``bool(value)``, not saved.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.optimizers.SGD([s4tf.ones([2])], nesterov=1).nesterov
    True
    """
    return Hyperparameter(default, None, saved=False)


def declare(cls, inherited: dict[str, Hyperparameter], finish):
    """The fields of ``cls``: ``inherited`` and those its body declares, in order.

    Replaces each declared field on the class by its default and, unless the
    class writes its own ``__init__``, gives it one with a parameter per field
    that stores the arguments and calls ``finish(self, model)``.
    """
    own = {name: value for name, value in vars(cls).items() if isinstance(value, Hyperparameter)}
    if not own:
        return inherited
    annotations = inspect.get_annotations(cls)
    fields = dict(inherited)
    for name, field in own.items():
        field.annotation = annotations.get(name, inspect.Parameter.empty)
        fields[name] = field
        setattr(cls, name, field.default)
    if "__init__" not in vars(cls):
        cls.__init__ = _make_init(cls, fields, finish)
    return fields


def _make_init(cls, fields: dict[str, Hyperparameter], finish):
    # Compiled with real parameters (as dataclasses do), so inspect.signature, help()
    # and Python's own errors for a missing or unexpected argument read as for a
    # hand-written __init__.
    names = ", ".join(fields)
    source = (f"def __init__(self, model, {names}):\n"
              f"    for name, field, value in zip(_names, _fields, ({names},)):\n"
              f"        setattr(self, name, field.stored(value))\n"
              f"    _finish(self, model)\n")
    namespace = {"_names": tuple(fields), "_fields": tuple(fields.values()), "_finish": finish}
    exec(source, namespace)  # noqa: S102 (the source is built from identifiers only)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    if hasattr(init.__code__, "co_qualname"):  # Python 3.11+ names the code's in errors
        init.__code__ = init.__code__.replace(co_qualname=init.__qualname__)
    init.__module__ = cls.__module__
    init.__defaults__ = tuple(field.default for field in fields.values())
    init.__annotations__ = {name: field.annotation for name, field in fields.items()
                            if field.annotation is not inspect.Parameter.empty}
    init.__annotations__["return"] = "None"
    return init
