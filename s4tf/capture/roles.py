"""Where each input and output of a captured program comes from on a replay: its *role*.

A recording (:mod:`.recording`) gives every device and host parameter of the
compiled program, every result and every new slot or ``State`` value a role;
a replay (:mod:`.replay`) asks each role for its value in that replay
(:meth:`Role.resolve`), given the replay's :class:`Inputs`:

* :class:`Leaf`: a leaf of the call's arguments (a tensor, or a host scalar);
* :class:`Slot`: an optimizer's state slot of one parameter (read before the
  step, written after it);
* :class:`Draw`: a draw from :mod:`s4tf.random`'s global stream, drawn again
  on replay so the stream advances as the body would advance it;
* :class:`Outside`: an array that existed before the body (a closure's
  tensor), held by a weak reference; :class:`Constant`: one the body made
  from constants;
* :class:`Expr` / :class:`Number`: a host number, recomputed from the call's
  Python numbers (:mod:`.scalars`) or fixed;
* :class:`Out`: an output of the program (results, new slots, new ``State``
  values).

Device parameters also say whether the program may reuse their buffer
(:meth:`Role.device_input`): a redraw always, a slot only its optimizer holds,
a copy of a constant the recorded run gave away.
"""

from __future__ import annotations

import dataclasses
import sys
import typing
import weakref

import numpy as np

from .. import liveness
from ..backends.xla.backend import BACKEND
from ..backends.xla.lazy import LazyArray
from ..tensor import Tensor
from .calls import tensor_part

__all__ = ["Constant", "Draw", "Expr", "Inputs", "Leaf", "Miss", "Number", "Out", "Outside",
           "Role", "Slot"]


class Miss(Exception):
    """A capture cannot replay the call; the message says why."""


@dataclasses.dataclass(slots=True)
class Inputs:
    """What one replay resolves roles against.

    Attributes
    ----------
    call : Call
        The call being replayed (its leaves).
    optimizers : list
        The capture's optimizers.
    values : list of float
        The call's Python numbers, as the body would compute them.
    drawn_arrays : list of LazyArray
        This replay's redraws.
    outs : list of LazyArray
        The program's outputs, once it ran.
    """

    call: typing.Any = None
    optimizers: list = dataclasses.field(default_factory=list)
    values: list = dataclasses.field(default_factory=list)
    drawn_arrays: list = dataclasses.field(default_factory=list)
    outs: list = dataclasses.field(default_factory=list)
    _tensors: dict = dataclasses.field(default_factory=dict)


class Role:
    """Base of the roles: one method resolves a role; the others derive from it."""

    __slots__ = ()

    def resolve(self, inputs: Inputs):
        """The role's value in this replay: a Tensor, or a Python number."""
        raise NotImplementedError(f"{type(self).__name__} must define resolve")

    def device_input(self, inputs: Inputs, donated: bool) -> tuple[LazyArray, bool]:
        """The array fed to the program, and whether the program may reuse its buffer.

        ``donated``: the recorded run donated this parameter.
        """
        return self.resolve(inputs)._data, False

    def host_value(self, inputs: Inputs):
        """The host number fed to the program for this parameter."""
        return np.asarray(self.resolve(inputs)._data.buffer).reshape(())

    def check(self, optimizers: list) -> None:
        """Raise :class:`Miss` if this call cannot replay for this role (before anything runs)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Leaf(Role):
    """Leaf ``index`` of the call's arguments."""

    index: int

    def resolve(self, inputs):
        return inputs.call.leaves[self.index]


@dataclasses.dataclass(frozen=True, slots=True)
class Slot(Role):
    """Optimizer ``optimizer``'s slot ``name`` of parameter ``parameter``, recorded as ``spec``."""

    optimizer: int
    parameter: int
    name: str
    spec: tuple

    def resolve(self, inputs):
        return inputs.optimizers[self.optimizer].slots(self.parameter)[self.name]

    def device_input(self, inputs, donated):
        slot = inputs.optimizers[self.optimizer].slots(self.parameter)[self.name]
        array = slot._data
        # The old slot is dropped after the step: XLA may reuse it if nobody else can read it.
        return array, donated and _only_its_optimizer_holds(slot, array) and not array.shared

    def check(self, optimizers):
        optimizer = optimizers[self.optimizer]
        slots = optimizer.slots(self.parameter)
        tensor = None if slots is None else slots.get(self.name)
        if (tensor is None or tensor._backend is not BACKEND or tensor._data.op is not None
                or tensor_part(tensor) != self.spec):
            raise Miss(f"the slots of {type(optimizer).__name__} are not those the step was "
                       "captured with")


@dataclasses.dataclass(frozen=True, slots=True)
class Draw(Role):
    """The ``index``-th draw from the global random stream in the body."""

    index: int

    def resolve(self, inputs):
        return Tensor._wrap(inputs.drawn_arrays[self.index], BACKEND)

    def device_input(self, inputs, donated):
        return inputs.drawn_arrays[self.index], donated


@dataclasses.dataclass(frozen=True, slots=True)
class Outside(Role):
    """An array that existed before the body (a closure's tensor), by weak reference."""

    array: weakref.ref

    def resolve(self, inputs):
        return Tensor._wrap(self.array(), BACKEND)

    def check(self, optimizers):
        array = self.array()
        if array is None or (array.buffer is None and not array.host):
            raise Miss("a tensor the step reads from outside its arguments was replaced (its "
                       "old value is gone)")


@dataclasses.dataclass(frozen=True, slots=True)
class Constant(Role):
    """An array the body made from constants (a copy, if the recorded run donated it)."""

    array: LazyArray

    def resolve(self, inputs):
        return Tensor._wrap(self.array, BACKEND)

    def device_input(self, inputs, donated):
        if donated:  # the recorded run gave it away: give the program a copy
            array = self.array
            return LazyArray(array.shape, array.dtype, buffer=array.buffer.copy()), True
        return self.array, False


@dataclasses.dataclass(frozen=True, slots=True)
class Expr(Role):
    """A host number recomputed from the call's Python numbers by ``evaluate(values)``."""

    evaluate: typing.Callable

    def resolve(self, inputs):
        return self.evaluate(inputs.values)

    def host_value(self, inputs):
        return self.evaluate(inputs.values)


@dataclasses.dataclass(frozen=True, slots=True)
class Number(Role):
    """A fixed number."""

    value: typing.Any

    def resolve(self, inputs):
        return self.value

    def host_value(self, inputs):
        return self.value


@dataclasses.dataclass(frozen=True, slots=True)
class Out(Role):
    """Output ``index`` of the program (one Tensor per output, however often it is used)."""

    index: int

    def resolve(self, inputs):
        found = inputs._tensors.get(self.index)
        if found is None:
            found = inputs._tensors[self.index] = Tensor._wrap(inputs.outs[self.index], BACKEND)
        return found


# The counts _only_its_optimizer_holds sees for a slot and its array held by the
# optimizer alone, measured by running Slot.device_input on a probe (below).
_measured: list | None = None


def _only_its_optimizer_holds(slot, array) -> bool:
    counts = sys.getrefcount(slot), sys.getrefcount(array)
    if _measured is not None:
        _measured.append(counts)
        return False
    return (_SLOT_COUNT is not None and _ARRAY_COUNT is not None
            and counts[0] <= _SLOT_COUNT and counts[1] <= _ARRAY_COUNT)


class _ProbeOptimizer:
    """Holds slots as an optimizer does (a dict per parameter, read with ``slots(i)``)."""

    def __init__(self, slots: dict) -> None:
        self._state = [slots]

    def slots(self, i):
        return self._state[i]


def _measure(extra: int, of: int) -> int:
    """What :meth:`Slot.device_input` counts for a probe slot (``of`` 0) or its array (1)."""
    global _measured
    optimizer = _ProbeOptimizer({"probe": Tensor._wrap(BACKEND.scalar(0.0, np.float32), BACKEND)})
    held = optimizer.slots(0)["probe"]
    aliases = [held if of == 0 else held._data] * extra
    del held
    _measured = []
    try:
        Slot(0, 0, "probe", ()).device_input(Inputs(optimizers=[optimizer]), True)
        return _measured[0][of]
    finally:
        _measured = None
        del aliases


_SLOT_COUNT = liveness.one_holder_count(lambda extra: _measure(extra, 0))
_ARRAY_COUNT = liveness.one_holder_count(lambda extra: _measure(extra, 1))
