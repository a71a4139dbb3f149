"""Running a step's body once with the lazy backend's listeners on, and learning from it.

:func:`record` runs the body as usual (every op is recorded on the lazy
backend, every number computed in Python) while listening, through
:mod:`s4tf.hooks`, to four places:

* arrays made from host data (``hooks.on_array``): a
  :class:`~.scalars.TrackedFloat` entering an op becomes a host input the
  replay recomputes; any other such array is a constant the body made;
* optimizer updates (``hooks.on_update``): the optimizer
  joins the capture; its slots are inputs and outputs, its ``step_constants``
  become tracked numbers the replay recomputes from the step count;
* draws from :mod:`s4tf.random`'s global stream (``hooks.on_draw``):
  drawn again on replay;
* barriers (``hooks.on_barrier``): a barrier *inside* the body means it
  read a value, which a replay cannot do, and is refused with an explanation.

A barrier after the body runs the step's graph and keeps its trace
(:func:`~s4tf.backends.xla.capture.recorded_barrier`); every input and output
of that trace then gets a role (:mod:`.replay`), and the result is a
:class:`~.replay.Capture`.
"""

from __future__ import annotations

import contextlib
import weakref

import numpy as np

from .. import hooks
from ..backends.xla import backend as _backend
from ..backends.xla.capture import recorded_barrier
from ..backends.xla.lazy import LazyArray
from ..tensor import Tensor
from ..tree import tree_flatten
from .calls import loose_statics, tensor_part
from .replay import Capture, Update
from .roles import Constant, Draw, Expr, Leaf, Number, Out, Outside, Slot
from .scalars import TrackedFloat, evaluator, sources_of

__all__ = ["ReadsValueError", "active", "record"]

_plain = float.__float__
# Static results a replay returns as they were (they depend only on the signature).
_CARRIED = (type(None), bool, int, str, bytes)
_OWNER = "captured step"  # how the hook stack knows a recording (s4tf.hooks)


def active() -> bool:
    """Whether a captured step's body is running (a captured step called inside it runs inline).

    Examples
    --------
    >>> active()
    False
    """
    return hooks.installed(_OWNER)


class ReadsValueError(RuntimeError):
    """A captured step's body read a tensor's value, which its replays could not do."""


class _Recording:
    """One run of a body and what it revealed (see the module docstring)."""

    def __init__(self, call) -> None:
        self.call = call
        self.quiet_codes = frozenset({_backend.XLABackend.scalar.__code__})
        self.sources: list = []
        self.static: set[int] = set()
        self.known: dict = {}       # id(array) -> (weak reference, role): inputs by identity
        self.scalars: dict = {}     # id(host array) -> (array, expression)
        self.made: dict = {}        # id(array) -> weak reference: arrays the body made
        self.draws: list = []
        self.updates: list[Update] = []
        self.optimizers: list = []
        self.parameters: list[int] = []  # per optimizer: how many parameters its model has
        self.attribute_sources: dict = {}  # (optimizer, attribute) -> its source expression
        self.kept: dict = {}        # id(array) -> copy of a donated constant's buffer
        self.in_body = False
        for j, leaf in enumerate(call.leaves):
            if isinstance(leaf, Tensor):
                self._know(leaf._data, Leaf(j))

    def _know(self, array, role) -> None:
        if id(array) not in self.known:
            self.known[id(array)] = (weakref.ref(array), role)

    def role_of(self, array):
        found = self.known.get(id(array))
        return found[1] if found is not None and found[0]() is array else None

    # The body's inputs: direct float arguments become the first tracked numbers.
    def arguments(self):
        def follow(value):
            return self._source(value) if isinstance(value, float) else value

        args = tuple(follow(a) for a in self.call.args)
        return args, {k: follow(v) for k, v in self.call.kwargs.items()}

    # TrackedFloat's recording interface.
    def make_static(self, expression) -> None:
        if self.in_body:
            self.static |= sources_of(expression)

    # The listeners.
    def on_array(self, value, array) -> None:
        self.made[id(array)] = weakref.ref(array)
        if isinstance(value, TrackedFloat) and value.recording is self:
            self.scalars[id(array)] = (array, value.expression)

    def on_draw(self, tensor, redraw) -> None:
        self._know(tensor._data, Draw(len(self.draws)))
        self.draws.append(redraw)

    def on_barrier(self) -> None:
        raise ReadsValueError(
            "s4tf.xla.compile: the step read a tensor's value while it ran (float(), int(), "
            "bool(), .item(), .numpy(), .tolist(), printing, an `if` on a tensor, or "
            "s4tf.barrier(); or it recorded more than S4TF_XLA_MAX_PENDING ops). A captured "
            "step replays its compiled program without running "
            "Python, so nothing in it may depend on the numbers it computes. Return what you "
            "want to read and read it after the call (or call the function without "
            "s4tf.xla.compile)."
        )

    def on_update(self, optimizer, model, constants):
        if optimizer not in self.optimizers:
            self._join(optimizer, model)
        o = self.optimizers.index(optimizer)
        offset = sum(1 for u in self.updates if u.optimizer == o)
        assignments, read, guards = [], [], {}
        for name, value in _settings(optimizer).items():
            followed = self.attribute_sources.get((o, name))
            if isinstance(value, TrackedFloat) and value.recording is self:
                if value.expression != followed:
                    assignments.append((name, value.expression))  # set from the call's numbers
            elif isinstance(value, float):
                if followed is not None:
                    assignments.append((name, ("number", _plain(value))))  # set to a constant
                else:
                    # Read when the step is called: a schedule may change it between calls.
                    tracked = self._source(value)
                    self.attribute_sources[(o, name)] = tracked.expression
                    setattr(optimizer, name, tracked)
                    read.append(name)
            else:
                guards[name] = value  # not a number: the program was made for this value
        new, float_keys, fixed = {}, [], {}
        for key, value in constants.items():
            if isinstance(value, float):
                new[key] = self._source(value)
                float_keys.append(key)
            else:
                new[key] = fixed[key] = value
        self.updates.append(Update(o, offset, assignments, read, guards, float_keys, fixed))
        return new

    def _source(self, value) -> TrackedFloat:
        source = TrackedFloat(_plain(value), ("source", len(self.sources)), self)
        self.sources.append(source)
        return source

    def _join(self, optimizer, model) -> None:
        """Make ``optimizer``'s slots now (the update would) so they are inputs of the program."""
        o = len(self.optimizers)
        self.optimizers.append(optimizer)
        leaves, _ = tree_flatten(model, differentiable=True)
        self.parameters.append(len(leaves))
        for i, leaf in enumerate(leaves):
            if isinstance(leaf, Tensor) and leaf._backend is _backend.BACKEND:
                for name, tensor in optimizer.place_slots(i, leaf._backend).items():
                    if tensor._data.op is None:
                        self._know(tensor._data, Slot(o, i, name, tensor_part(tensor)))

    @contextlib.contextmanager
    def listening(self):
        listener = hooks.Listener(_OWNER, on_array=self.on_array, on_barrier=self.on_barrier,
                                  on_update=self.on_update, on_draw=self.on_draw)
        self.in_body = True
        try:
            with hooks.listening(listener):
                yield
        finally:
            self.in_body = False

    # After the body.
    def capture(self, results) -> Capture:
        """Run the step's graph and give every input and output of its program a role."""
        result_leaves, result_def = tree_flatten(results)
        for leaf in result_leaves:
            _check_result(leaf)
        for value in loose_statics(results):
            if not isinstance(value, _CARRIED):
                raise TypeError(
                    f"s4tf.xla.compile: the step returned a {type(value).__name__}, which a "
                    "replay cannot recompute; a captured step returns xla tensors, Python "
                    "numbers, None, bools, ints and strings, in lists, tuples, dicts and "
                    "Differentiable values (models, tangent vectors). Return it as a tensor "
                    "and convert it after the call."
                )
        call = self.call
        changed_cells = []
        for index, (cell, j) in enumerate(call.cells):
            if j is not None and cell.value is not call.leaves[j]:
                if not isinstance(cell.value, Tensor):
                    raise TypeError(
                        f"s4tf.xla.compile: the step put a {type(cell.value).__name__} into a "
                        "State cell that held a tensor; a captured step carries tensors in "
                        "State cells (as BatchNorm's statistics).")
                _check_result(cell.value)
                changed_cells.append((index, cell.value))
        slots = [[(i, dict(s)) for i, s in ((i, opt.slots(i)) for i in range(n))
                  if s is not None and all(t._backend is _backend.BACKEND for t in s.values())]
                 for opt, n in zip(self.optimizers, self.parameters, strict=True)]
        program = recorded_barrier(keep=lambda array: self.role_of(array) is None)
        self.kept = {} if program is None else program.kept
        outputs = {} if program is None else {id(node): k for node, k in program.outputs}

        def role(value):
            if isinstance(value, TrackedFloat) and value.recording is self:
                return Expr(evaluator(value.expression))
            if isinstance(value, float):
                return Number(_plain(value))
            array = value._data
            k = outputs.get(id(array))
            if k is not None:
                return Out(k)
            known = self.role_of(array)
            if known is not None:
                return known
            return self._constant(array)

        device_roles = [] if program is None else [
            self.role_of(a) or self._constant(a) for a in program.device]
        host_roles = [] if program is None else [self._host_role(a) for a in program.host]
        capture = Capture(
            program=program,
            static={i: _plain(self.sources[i]) for i in self.static},
            device_roles=device_roles,
            host_roles=host_roles,
            results=(result_def, [role(leaf) for leaf in result_leaves]),
            cell_writes=[(index, role(value)) for index, value in changed_cells],
            optimizers=self.optimizers,
            slot_outputs=[[(i, {name: role(t) for name, t in s.items()}) for i, s in per]
                          for per in slots],
            updates=[_compiled(u) for u in self.updates],
            draws=self.draws,
            values=[_plain(source) for source in self.sources],
        )
        if program is not None:
            program.forget_arrays()
        return capture

    def release(self) -> None:
        """Give optimizers back plain numbers, and let go of the call and the optimizers."""
        for optimizer in self.optimizers:
            for name, value in _settings(optimizer).items():
                if isinstance(value, TrackedFloat):
                    setattr(optimizer, name, _plain(value))
        # Its numbers refer to it: break the cycle now, not at the next garbage collection.
        self.call = self.known = self.scalars = self.made = self.sources = self.optimizers = None

    def _outside(self, array) -> bool:
        """Whether ``array`` existed before the body (the body did not make it)."""
        made = self.made.get(id(array))
        return made is None or made() is not array

    def _constant(self, array):
        if self._outside(array):
            return Outside(weakref.ref(array))
        kept = self.kept.get(id(array))
        if kept is not None:  # the recorded run donated it: its copy is the constant
            array = LazyArray(array.shape, array.dtype, buffer=kept)
        return Constant(array)

    def _host_role(self, array):
        known = self.role_of(array)
        if known is not None:
            return known
        found = self.scalars.get(id(array))
        if found is not None and found[0] is array:
            return Expr(evaluator(found[1]))
        if self._outside(array):
            return Outside(weakref.ref(array))
        # A NumPy scalar, not a view of the buffer: an immutable value, which a replay
        # feeds as the same object every time (its device buffer is then reused).
        return Number(np.asarray(array.buffer).reshape(())[()])


def _compiled(update: Update) -> Update:
    update.assignments = [(name, evaluator(e)) for name, e in update.assignments]
    return update


def _settings(optimizer) -> dict:
    """The optimizer's public attributes and hyperparameters (not its step or slots)."""
    names = [n for n in vars(optimizer) if not n.startswith("_") and n != "step"]
    names += [n for n in getattr(optimizer, "hyperparameters", ()) if n not in names]
    return {n: getattr(optimizer, n) for n in names if hasattr(optimizer, n)}


def _check_result(leaf) -> None:
    if isinstance(leaf, Tensor) and (leaf._backend is not _backend.BACKEND or leaf._traced):
        where = "being differentiated" if leaf._traced else f"on the {leaf._backend.name} backend"
        raise TypeError(
            f"s4tf.xla.compile: the step returned a tensor of shape {leaf.shape} {where}; a "
            "captured step carries xla tensors, Python numbers and structures of them "
            "(models, tangent vectors, lists, dicts). Make it on the xla backend, or convert "
            "it after the call."
        )


def record(call, fn):
    """Run ``fn`` on ``call``'s arguments as usual; return ``(results, Capture)``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.capture.calls import Call
    >>> x = s4tf.ones([2]).to("xla")
    >>> result, capture = record(Call((x, 3.0), {}), lambda x, scale: x * scale)
    >>> result.tolist(), capture.device_roles
    ([3.0, 3.0], [Leaf(index=0)])
    """
    recording = _Recording(call)
    args, kwargs = recording.arguments()
    try:
        with recording.listening():
            results = fn(*args, **kwargs)
        capture = recording.capture(results)
    finally:
        recording.release()
    return _plain_numbers(results), capture


def _plain_numbers(results):
    leaves, treedef = tree_flatten(results)
    if not any(isinstance(leaf, TrackedFloat) for leaf in leaves):
        return results
    return treedef.unflatten([_plain(x) if isinstance(x, TrackedFloat) else x for x in leaves])
