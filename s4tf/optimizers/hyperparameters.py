"""Hyperparameters declared once, as fields with their checks (S4TF's preconditions, as errors).

An optimizer lists its constructor arguments as class fields::

    class SGD(Optimizer):
        learning_rate: float = hyperparameter(0.01, check=non_negative)
        momentum: float = hyperparameter(0.0, check=non_negative)
        nesterov: bool = flag(False)
        decay: float = hyperparameter(0.0, check=non_negative)

and :class:`~s4tf.optimizers.Optimizer` builds ``__init__(self, model,
learning_rate=0.01, momentum=0.0, nesterov=False, decay=0.0, *,
trainable=None, param_groups=None)`` from them, in declaration order, after
the fields of its base classes (as dataclasses do); the two keyword-only
arguments, every optimizer's, choose the parameters it trains
(:mod:`.param_groups`).
Each hyperparameter is a plain attribute afterwards (schedules assign
``learning_rate``), is saved by ``state_dict()``, and is checked at
construction: first :func:`number` (a real number, never a string, a bool or
None, so ``SGD(model, learning_rate="0.1")`` fails naming the argument), then
its own ``check``. A :func:`flag` is a bool setting, stored as ``bool(value)``
and not saved.

Any numeric hyperparameter may also be a schedule, a function of the step
(1, 2, ...) such as those in :mod:`s4tf.optimizers.schedules`:
``SGD(model, learning_rate=schedules.OneCycle(0.1, total_steps=1000))``.
Reading the attribute then gives the number for the next update (inside
``step_constants(step)``, for that ``step``), so rules, ``state_dict()`` and
``repr`` see plain floats; assigning a number replaces the schedule (unless
it is the number the schedule gives for the next update, as a restored
``state_dict()`` does), assigning a function sets a new one, and
:func:`schedule_of` returns the schedule in force.
"""

from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

__all__ = ["Hyperparameter", "declare", "flag", "hyperparameter", "non_negative", "number",
           "schedule_of", "unit_interval"]


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
    if "step_constants" in vars(cls):
        cls.step_constants = _at_step(vars(cls)["step_constants"])
    own = {name: value for name, value in vars(cls).items() if isinstance(value, Hyperparameter)}
    if not own:
        return inherited
    annotations = inspect.get_annotations(cls)
    fields = dict(inherited)
    for name, field in own.items():
        field.annotation = annotations.get(name, inspect.Parameter.empty)
        fields[name] = field
        setattr(cls, name, _Scheduled(name, field.default) if field.saved else field.default)
    if "__init__" not in vars(cls):
        cls.__init__ = _make_init(cls, fields, finish)
    return fields


def _make_init(cls, fields: dict[str, Hyperparameter], finish):
    # Compiled with real parameters (as dataclasses do), so inspect.signature, help()
    # and Python's own errors for a missing or unexpected argument read as for a
    # hand-written __init__.
    names = ", ".join(fields)
    source = (f"def __init__(self, model, {names}, *, trainable=None, param_groups=None):\n"
              f"    for name, field, value in zip(_names, _fields, ({names},)):\n"
              f"        setattr(self, name, field.stored(value))\n"
              f"    _finish(self, model, trainable=trainable, param_groups=param_groups)\n")
    namespace = {"_names": tuple(fields), "_fields": tuple(fields.values()), "_finish": finish}
    exec(source, namespace)  # noqa: S102 (the source is built from identifiers only)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    if hasattr(init.__code__, "co_qualname"):  # Python 3.11+ names the code's in errors
        init.__code__ = init.__code__.replace(co_qualname=init.__qualname__)
    init.__module__ = cls.__module__
    init.__defaults__ = tuple(field.default for field in fields.values())
    init.__kwdefaults__ = {"trainable": None, "param_groups": None}
    init.__annotations__ = {name: field.annotation for name, field in fields.items()
                            if field.annotation is not inspect.Parameter.empty}
    init.__annotations__["return"] = "None"
    return init


# The step whose constants are being computed, per optimizer (set by _at_step).
_AT_STEP = "_hyperparameters_at_step"


class _Scheduled:
    """A numeric hyperparameter's class attribute: a number, or a schedule read at the step.

    The instance's ``__dict__`` holds what was assigned; reading gives a
    float: the number, or the schedule's value at the step being computed
    (inside ``step_constants``) or else at the next update's step.
    """

    def __init__(self, name: str, default) -> None:
        self.name, self.default = name, default

    def __get__(self, instance, owner=None):
        if instance is None:
            return self.default
        value = instance.__dict__.get(self.name, self.default)
        if not _is_schedule(value):
            return value
        step = instance.__dict__.get(_AT_STEP)
        if step is None:
            step = getattr(instance, "step", 0) + 1
        result = value(step)
        if isinstance(result, numbers.Real) and not isinstance(result, bool | np.bool_):
            return float(result)
        raise TypeError(
            f"{type(instance).__name__}: the schedule given as {self.name} ({value!r}) returned "
            f"{result!r} (a {type(result).__name__}) for step {step}; a schedule must return a "
            "number for every step (1, 2, ...)."
        )

    def __set__(self, instance, value) -> None:
        held = instance.__dict__.get(self.name)
        if _is_schedule(held) and not _is_schedule(value):
            try:
                unchanged = float(value) == self.__get__(instance)
            except (TypeError, ValueError):
                unchanged = False
            if unchanged:  # a restored state_dict, a captured step's tracked copy
                return
        instance.__dict__[self.name] = value


def _is_schedule(value) -> bool:
    return callable(value) and not isinstance(value, numbers.Number)


def _at_step(step_constants):
    """``step_constants`` reading scheduled hyperparameters at its ``step`` argument."""

    @functools.wraps(step_constants)
    def at_step(self, step, *args, **kwargs):
        outer = self.__dict__.get(_AT_STEP)
        self.__dict__[_AT_STEP] = step
        try:
            return step_constants(self, step, *args, **kwargs)
        finally:
            self.__dict__[_AT_STEP] = outer

    return at_step


def schedule_of(optimizer, name: str = "learning_rate"):
    """The schedule set as ``optimizer``'s hyperparameter ``name``, or None for a number.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.optimizers import schedules
    >>> from s4tf.optimizers.hyperparameters import schedule_of
    >>> warmup = schedules.LinearWarmup(0.1, warmup_steps=10)
    >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], learning_rate=warmup)
    >>> schedule_of(opt) is warmup, opt.learning_rate          # the rate of update 1
    (True, 0.01)
    >>> opt.learning_rate = 0.5                                # a number replaces it
    >>> schedule_of(opt) is None
    True
    """
    value = vars(optimizer).get(name)
    return value if _is_schedule(value) else None
