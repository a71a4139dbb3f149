"""What one recorded run of a step's body learned, and replaying it on a new call.

A :class:`Capture` holds the compiled program of the body's run and a *role*
(:mod:`.roles`) for each of its inputs and outputs: a leaf of the call's
arguments, an optimizer's slot, a redraw, a constant, a recomputed or fixed
number, or an output of the program.

:meth:`Capture.prepare` checks that a call can replay (every check first:
Python numbers the body decided on, optimizer settings the program baked in,
slots that exist with the recorded shapes) and raises :class:`Miss` with the
reason otherwise; :meth:`Capture.replay` then runs the program and performs
the body's effects: new slots and step counts, new ``State`` values, results.
"""

from __future__ import annotations

import weakref

from ..backends.xla.backend import BACKEND
from .roles import Inputs, Miss, Role

__all__ = ["Capture", "Miss", "Update"]

_MISSING = object()


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
        # The roles with something to check before a replay (slots, outside tensors): most
        # inputs are argument leaves and numbers, whose check does nothing on every call.
        self._checked = [role for role in [*device_roles, *host_roles]
                         if type(role).check is not Role.check]
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
        for role in self._checked:
            role.check(optimizers)
        return values, optimizers

    def replay(self, call, prepared):
        """Run the program for ``call`` (as :meth:`prepare` found it) and do the body's effects."""
        values, optimizers = prepared
        drawn = [redraw() for redraw in self.draws]
        inputs = Inputs(call=call, optimizers=optimizers, values=values,
                        drawn_arrays=[BACKEND.asarray(v, v.dtype) for v in drawn])
        if self.program is not None:
            donated = set(self.program.donate)
            arrays, donate = [], []
            for k, role in enumerate(self.device_roles):
                array, reuse = role.device_input(inputs, k in donated)
                arrays.append(array)
                if reuse:
                    donate.append(k)
            host = [role.host_value(inputs) for role in self.host_roles]
            inputs.outs = self.program.run(arrays, host, tuple(donate))
            del arrays
        for cell, role in self.cell_writes:
            call.cells[cell][0].value = role.resolve(inputs)
        for optimizer, steps, outputs in zip(optimizers, self.steps, self.slot_outputs,
                                             strict=True):
            for i, roles in outputs:
                optimizer.set_slots(i, {name: role.resolve(inputs) for name, role in roles.items()})
            optimizer.advance_step(steps)
        treedef, roles = self.results
        return treedef.unflatten([role.resolve(inputs) for role in roles])
