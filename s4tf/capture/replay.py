"""What one recorded run of a step's body learned, and replaying it on a new call.

A :class:`Capture` holds the compiled program of the body's run and a *role*
for each of its inputs and outputs:

* ``("leaf", j)``: leaf ``j`` of the call's arguments (a tensor, or a host
  scalar tensor);
* ``("slot", o, i, name, spec)``: optimizer ``o``'s slot ``name`` of
  parameter ``i`` (read before the step, written after it);
* ``("draw", d)``: the ``d``-th draw from :mod:`s4tf.random`'s global stream,
  drawn again on replay so the stream advances as the body would advance it;
* ``("constant", array, outside)``: an array the body read from elsewhere
  (``outside``: it existed before the body, e.g. a closure's tensor) or made
  from constants;
* ``("expr", evaluate)`` / ``("number", x)``: a host number, recomputed from
  the call's Python numbers (:mod:`.scalars`) or fixed;
* ``("out", k)``: output ``k`` of the program (for results, new slots and new
  ``State`` values).

:meth:`Capture.prepare` checks that a call can replay (every check first:
Python numbers the body decided on, optimizer settings the program baked in,
slots that exist with the recorded shapes) and raises :class:`Miss` with the
reason otherwise; :meth:`Capture.replay` then runs the program and performs
the body's effects: new slots and step counts, new ``State`` values, results.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from ..backends.xla.backend import BACKEND
from ..backends.xla.lazy import LazyArray
from ..tensor import Tensor
from .calls import _tensor_part

__all__ = ["Capture", "Miss", "Update"]

_MISSING = object()


class Miss(Exception):
    """This capture cannot replay the call; the message says why."""


class Update:
    """One ``opt.update`` of the body: what a replay redoes in Python before running the program.

    Attributes
    ----------
    optimizer : int
        Which of the capture's optimizers.
    offset : int
        How many updates of that optimizer came before it in the body.
    assignments : list of (str, callable)
        Optimizer attributes the body set (from the call's numbers, or to
        constants), with the functions of the numbers that compute them.
    read : list of str
        Float attributes (hyperparameters) whose values at the call are
        inputs: a schedule may change them between calls.
    guards : dict
        The other attributes, which the program was made for.
    float_keys : list of str
        Keys of ``step_constants`` whose floats are inputs of the program.
    fixed : dict
        The other ``step_constants`` entries, which the body decided on.
    """

    __slots__ = ("optimizer", "offset", "assignments", "read", "guards", "float_keys", "fixed")

    def __init__(self, optimizer, offset, assignments, read, guards, float_keys, fixed) -> None:
        self.optimizer, self.offset = optimizer, offset
        self.assignments, self.read, self.guards = assignments, read, guards
        self.float_keys, self.fixed = float_keys, fixed


def _same(a, b) -> bool:
    if a is b:
        return True
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an array or another value without a plain truth value
        return False


def _counts(tensor) -> tuple[int, int]:
    return sys.getrefcount(tensor), sys.getrefcount(tensor._data)


def _calibrate() -> tuple[int, int]:
    """The counts :func:`_counts` shows for a slot held only by its dict (as in ``_gather``)."""
    slots = {"probe": Tensor._wrap(BACKEND.scalar(0.0, np.dtype(np.float32)), BACKEND)}
    arrays = []
    tensor = slots["probe"]
    arrays.append(tensor._data)
    return _counts(tensor)


_SLOT_ONLY = _calibrate()


class Capture:
    """A replayable recording of a step's body (built by :mod:`.recording`).

    Examples
    --------
    >>> import s4tf
    >>> step = s4tf.xla.compile(lambda x, scale: x * scale)
    >>> x = s4tf.ones([2]).to("xla")
    >>> step(x, 2.0).tolist(), step(x, 3.0).tolist()     # the second call replays
    ([2.0, 2.0], [3.0, 3.0])
    """

    def __init__(self, *, program, static, device_roles, host_roles, results, cell_writes,
                 optimizers, slot_outputs, updates, draws, values) -> None:
        self.program = program
        self.values = values
        self.static = static
        self.device_roles = device_roles
        self.host_roles = host_roles
        self.results = results
        self.cell_writes = cell_writes
        # By weak reference: when the step's optimizer is replaced by a new one, capture again.
        self.optimizers = [weakref.ref(optimizer) for optimizer in optimizers]
        self.slot_outputs = slot_outputs
        self.updates = updates
        self.draws = draws
        self.steps = [0] * len(optimizers)
        for update in updates:
            self.steps[update.optimizer] += 1

    @property
    def entries(self):
        """The structure of the compiled trace (None when the body computed nothing)."""
        return None if self.program is None else self.program.entries

    def prepare(self, call) -> tuple[list, list]:
        """The call's Python numbers as the body would compute them, and the optimizers.

        Checks everything a replay relies on before anything irreversible
        happens (the only effect: optimizer attributes the body sets from the
        call's numbers are set, as the body would set them); raises
        :class:`Miss` with the reason when the call cannot replay.
        """
        optimizers = [ref() for ref in self.optimizers]
        if None in optimizers:
            raise Miss("an optimizer the step updated is gone (the step uses a new one)")
        values = [float.__float__(call.leaves[j]) for j in call.parameters]
        for update in self.updates:
            optimizer = optimizers[update.optimizer]
            for name, evaluate in update.assignments:
                setattr(optimizer, name, evaluate(values))
            values.extend(float(getattr(optimizer, name)) for name in update.read)
            for name, expected in update.guards.items():
                if not _same(getattr(optimizer, name, _MISSING), expected):
                    raise Miss(f"{type(optimizer).__name__}.{name} is now "
                               f"{getattr(optimizer, name, None)!r}, not {expected!r}")
            constants = optimizer.step_constants(optimizer.step + update.offset + 1)
            for key, expected in update.fixed.items():
                if not _same(constants.get(key, _MISSING), expected):
                    raise Miss(f"{type(optimizer).__name__}.step_constants()[{key!r}] is now "
                               f"{constants.get(key)!r}, not {expected!r}")
            values.extend(float(constants[key]) for key in update.float_keys)
        for index, expected in self.static.items():
            if values[index] != expected:
                raise Miss(f"a number the step decides on changed ({expected!r} -> "
                           f"{values[index]!r})")
        for role in [*self.device_roles, *self.host_roles]:
            if role[0] == "slot":
                _check_slot(role, optimizers)
            elif role[0] == "constant" and role[2]:
                _check_outside(role)
        return values, optimizers

    def replay(self, call, prepared):
        """Run the program for ``call`` (as :meth:`prepare` found it) and do the body's effects."""
        values, optimizers = prepared
        drawn = [redraw() for redraw in self.draws]
        drawn_arrays = [BACKEND.asarray(v, v.dtype) for v in drawn]
        arrays, donate = self._device_inputs(call, optimizers, drawn_arrays)
        host = [_host_value(role, call, optimizers, values, drawn) for role in self.host_roles]
        outs = self.program.run(arrays, host, donate) if self.program is not None else []
        tensors: dict = {}

        def tensor(role):
            kind = role[0]
            if kind == "out":
                found = tensors.get(role[1])
                if found is None:
                    found = tensors[role[1]] = Tensor._wrap(outs[role[1]], BACKEND)
                return found
            if kind == "leaf":
                return call.leaves[role[1]]
            if kind == "draw":
                return Tensor._wrap(drawn_arrays[role[1]], BACKEND)
            if kind == "constant":
                return Tensor._wrap(_array(role), BACKEND)
            if kind == "expr":
                return role[1](values)
            return role[1]  # a number

        for cell, role in self.cell_writes:
            call.cells[cell][0].value = tensor(role)
        for optimizer, steps, outputs in zip(optimizers, self.steps, self.slot_outputs,
                                             strict=True):
            state = optimizer._state
            for i, roles in outputs:
                state[i] = {name: tensor(role) for name, role in roles.items()}
            optimizer.step += steps
        treedef, roles = self.results
        return treedef.unflatten([tensor(role) for role in roles])

    def _device_inputs(self, call, optimizers, drawn_arrays):
        arrays, donate = [], []
        donated = set(self.program.donate) if self.program is not None else set()
        for k, role in enumerate(self.device_roles):
            kind = role[0]
            if kind == "leaf":
                arrays.append(call.leaves[role[1]]._data)
            elif kind == "slot":
                slot = optimizers[role[1]]._state[role[2]][role[3]]  # checked by prepare
                arrays.append(slot._data)
                # The old slot is dropped after the step: XLA may reuse it if nobody else can read it.
                if k in donated and _counts(slot) <= _SLOT_ONLY and not slot._data.shared:
                    donate.append(k)
                del slot
            elif kind == "draw":
                arrays.append(drawn_arrays[role[1]])
                if k in donated:
                    donate.append(k)
            elif k in donated and not role[2]:
                # A constant of the body that the recorded run gave away: give it a copy.
                arrays.append(LazyArray(role[1].shape, role[1].dtype, buffer=role[1].buffer.copy()))
                donate.append(k)
            else:
                arrays.append(_array(role))
        return arrays, tuple(donate)


def _host_value(role, call, optimizers, values, drawn):
    kind = role[0]
    if kind == "expr":
        return role[1](values)
    if kind == "number":
        return role[1]
    if kind == "draw":
        return drawn[role[1]].reshape(())
    if kind == "leaf":
        array = call.leaves[role[1]]._data
    elif kind == "slot":
        array = optimizers[role[1]]._state[role[2]][role[3]]._data
    else:
        array = _array(role)
    return np.asarray(array.buffer).reshape(())


def _check_slot(role, optimizers) -> None:
    _, o, i, name, spec = role
    slots = optimizers[o]._state[i]
    tensor = None if slots is None else slots.get(name)
    if (tensor is None or tensor._backend is not BACKEND or tensor._data.op is not None
            or _tensor_part(tensor) != spec):
        raise Miss(f"the slots of {type(optimizers[o]).__name__} are not those the step was "
                   "captured with")


def _array(role):
    """The array of a constant role (an outside one is held by a weak reference)."""
    return role[1]() if role[2] else role[1]


def _check_outside(role) -> None:
    array = role[1]()
    if array is None or (array.buffer is None and not array.host):
        raise Miss("a tensor the step reads from outside its arguments was replaced (its old "
                   "value is gone)")
