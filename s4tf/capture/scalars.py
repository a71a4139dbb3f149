"""Python floats that remember how they were computed, so a captured step can redo the arithmetic.

A captured step (:func:`s4tf.xla.compile`) replays a compiled program without
running the step's Python. The numbers that program takes as inputs, such as a
learning rate passed as an argument or an optimizer's bias correction, are
Python floats the body computed; a replay must compute the new ones. While the
body runs, those floats are :class:`TrackedFloat` values: each arithmetic
operator returns another one holding the expression it came from, so the
replay evaluates the same expressions on the new inputs, operation for
operation, and gets the same bits the body would have.

A Python decision on a tracked number (a comparison, ``bool``, ``int``,
``round``, ``float()``, hashing) makes its inputs *static*: the capture is then
kept only for calls with those same values, as ``jax.jit``'s static arguments.
A number turned into something else without Python's operators (``math.sqrt``,
NumPy) cannot be followed; the periodic verification run notices when such a
number changes (:mod:`s4tf.capture.step`).
"""

from __future__ import annotations

import operator
import sys

import numpy as np

__all__ = ["TrackedFloat", "evaluator", "sources_of"]

_plain = float.__float__  # the value as an exact float, without the tracked __float__


class TrackedFloat(float):
    """A float of a step being captured, with the expression that computes it.

    Parameters
    ----------
    value : float
    expression : tuple
        ``("source", i)`` (input ``i`` of the recording), ``("number", x)`` (a
        constant), or ``(function, *operands)`` of operand expressions.
    recording : object
        The recording it belongs to; its ``make_static(expression)`` is called
        when Python decides something with the value, and ``float()`` in one
        of its ``quiet_codes`` (the backend's scalar conversion) is not a decision.

    Examples
    --------
    >>> class Recording:
    ...     static, quiet_codes = set(), set()
    ...     def make_static(self, expression):
    ...         self.static |= sources_of(expression)
    >>> recording = Recording()
    >>> lr = TrackedFloat(0.5, ("source", 0), recording)
    >>> step = 1 - lr * 0.25
    >>> step, evaluator(step.expression)([0.1])
    (0.875, 0.975)
    >>> bool(lr > 0), recording.static       # a decision: lr becomes static
    (True, {0})
    """

    def __new__(cls, value=0.0, expression=None, recording=None):
        self = super().__new__(cls, value)
        self.expression = expression if expression is not None else ("number", _plain(self))
        self.recording = recording
        return self

    def _decided(self):
        if self.recording is not None:
            self.recording.make_static(self.expression)
        return _plain(self)

    def __repr__(self) -> str:
        return repr(_plain(self))

    def __reduce__(self):
        # Copies and pickles are plain numbers (and a decision made with the value).
        return float, (self._decided(),)


def _operand(value):
    if isinstance(value, TrackedFloat):
        return value.expression, _plain(value)
    if isinstance(value, int | float | np.integer | np.floating):
        return ("number", value), value
    return None, None


def _binary(function, reflected):
    def method(self, other):
        expression, plain = _operand(other)
        if expression is None:
            return NotImplemented
        if reflected:
            value, operands = function(plain, _plain(self)), (expression, self.expression)
        else:
            value, operands = function(_plain(self), plain), (self.expression, expression)
        if not isinstance(value, float | np.floating):
            return value
        return TrackedFloat(value, (function, *operands), self.recording)

    return method


def _unary(function):
    def method(self):
        return TrackedFloat(function(_plain(self)), (function, self.expression), self.recording)

    return method


def _decision(function):
    def method(self, *args):
        return function(self._decided(), *[a._decided() if isinstance(a, TrackedFloat) else a
                                            for a in args])

    return method


def _float(self):
    # NumPy converts through __float__: in an op's scalar conversion (a site the
    # recording knows) that is the followed path; anywhere else the number leaves
    # the recording (np.float32(lr), s4tf.Tensor(lr)) and becomes static.
    recording = self.recording
    if recording is not None and sys._getframe(1).f_code not in recording.quiet_codes:
        recording.make_static(self.expression)
    return _plain(self)


for _name, _function in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                         ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                         ("mod", operator.mod), ("pow", operator.pow)):
    setattr(TrackedFloat, f"__{_name}__", _binary(_function, reflected=False))
    setattr(TrackedFloat, f"__r{_name}__", _binary(_function, reflected=True))
for _name, _function in (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs)):
    setattr(TrackedFloat, f"__{_name}__", _unary(_function))
# Everything that turns the value into a Python decision or a number of another kind.
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "bool", "int", "round", "trunc",
              "floor", "ceil", "hash", "divmod", "rdivmod"):
    setattr(TrackedFloat, f"__{_name}__", _decision(getattr(float, f"__{_name}__")))
for _name in ("is_integer", "as_integer_ratio", "hex"):
    setattr(TrackedFloat, _name, _decision(getattr(float, _name)))
TrackedFloat.__float__ = _float
del _name, _function


def sources_of(expression) -> set[int]:
    """The input indices an expression reads.

    Examples
    --------
    >>> import operator
    >>> sources_of((operator.mul, ("source", 2), (operator.add, ("source", 0), ("number", 1))))
    {0, 2}
    """
    if expression[0] == "source":
        return {expression[1]}
    if expression[0] == "number":
        return set()
    found: set[int] = set()
    for operand in expression[1:]:
        found |= sources_of(operand)
    return found


def evaluator(expression):
    """A function of the list of input values that computes ``expression`` as the body did.

    Examples
    --------
    >>> import operator
    >>> evaluator((operator.sub, ("number", 1), ("source", 0)))([0.25])
    0.75
    """
    if expression[0] == "source":
        index = expression[1]
        return lambda values: values[index]
    if expression[0] == "number":
        number = expression[1]
        return lambda values: number
    function, *operands = expression
    if len(operands) == 1:
        (inner,) = [evaluator(e) for e in operands]
        return lambda values: function(inner(values))
    left, right = [evaluator(e) for e in operands]
    return lambda values: function(left(values), right(values))
