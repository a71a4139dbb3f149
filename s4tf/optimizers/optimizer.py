"""The optimizer base: the rule API, its state, and ``model = opt.update(model, grads)``.

An optimizer is built from a model's structure (leaf paths, shapes, dtypes) and
keeps only that and its own state (per-parameter slots such as moments, and the
step count); never the model or its tensors. A subclass declares its
hyperparameters as fields (:mod:`.hyperparameters`), names its slots and writes
``step_constants`` and one per-parameter rule, ``update_parameter``; this file
is that API, the slots and step it keeps, and ``state_dict``.

``update`` measures the model's reference count and hands the rest to
:mod:`.application`: gradients checked, copy-on-write decided by
:mod:`s4tf.cow`, and the rule run on each parameter's backend
(:mod:`.leaf_updates`: in place, on a fresh copy when the old value must stay
observable, or recorded on the lazy xla backend).
"""

from __future__ import annotations

import sys
import typing

import numpy as np

from .. import liveness
from ..backends.base import get_backend_object
from ..tensor import Tensor
from ..tree import tree_flatten, tree_leaf_paths
from . import application
from .hyperparameters import Hyperparameter, declare, number
from .leaf_updates import slots_on
from .param_groups import select
from .sharing import warn_shared_layers

__all__ = ["Optimizer"]


class Optimizer:
    """Base class of optimizers; subclasses define the per-parameter rule.

    Subclasses declare their constructor arguments as fields
    (``learning_rate: float = hyperparameter(0.01, check=non_negative)``, see
    :mod:`s4tf.optimizers.hyperparameters`), from which the base builds
    ``__init__(self, model, ...)`` and :attr:`hyperparameters` (the names
    saved by :meth:`state_dict`); they set :attr:`state_names` (per-parameter
    slots, zero-initialised unless :meth:`initial_state` says otherwise) and
    implement :meth:`step_constants` and :meth:`update_parameter`, marked
    :func:`~s4tf.optimizers.blocks.elementwise` when it is (the built-in rules
    are), so that it runs on bounded blocks. They do not override
    :meth:`update`.

    Every optimizer's constructor also takes, keyword-only, ``trainable=``
    (path prefixes such as ``["head."]``, or a function of the dotted
    parameter path returning a bool: the parameters it trains; the others are
    never written, get no weight decay and no slots) and ``param_groups=``
    (``[{"params": "head.", "learning_rate": 1e-3}, ...]``: parameters with
    hyperparameters of their own, numbers or schedules, kept in
    :attr:`param_groups` and saved by :meth:`state_dict`). See
    :mod:`s4tf.optimizers.param_groups`.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.optimizers.hyperparameters import hyperparameter, non_negative
    >>> class SignSGD(s4tf.optimizers.Optimizer):
    ...     learning_rate: float = hyperparameter(0.5, check=non_negative)
    ...     def step_constants(self, step):
    ...         return {"lr": self.learning_rate}
    ...     def update_parameter(self, param, grad, state, constants):
    ...         param -= constants["lr"] * np.sign(grad)
    >>> opt = SignSGD([s4tf.ones([2])])
    >>> opt.update([s4tf.ones([2])], [s4tf.Tensor([3.0, -1.0])], consume=False)[0].tolist()
    [0.5, 1.5]
    """

    state_names: typing.ClassVar[tuple[str, ...]] = ()
    # The saved hyperparameters' names, from the declared fields.
    hyperparameters: typing.ClassVar[tuple[str, ...]] = ()
    # The declared fields (name -> Hyperparameter), base classes' first.
    _fields: typing.ClassVar[dict[str, Hyperparameter]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "hyperparameters" in vars(cls):
            raise TypeError(
                f"{cls.__name__} lists its hyperparameters in a `hyperparameters` tuple; declare "
                "each one as a field instead, e.g. `learning_rate: float = hyperparameter(0.01, "
                "check=non_negative)` (from s4tf.optimizers.hyperparameters), and the base "
                "builds __init__ and `hyperparameters` from the fields."
            )
        fields = declare(cls, cls._fields, Optimizer.__init__)
        if fields is not cls._fields:
            cls._fields = fields
            cls.hyperparameters = tuple(name for name, field in fields.items() if field.saved)

    def __init__(self, model, *, trainable=None, param_groups=None) -> None:
        # The fields are set by now (by the generated __init__, or by a subclass's own
        # calling it): one check for all, in order. One set later is checked when
        # state_dict() reads it.
        owner = type(self).__name__
        for name in self.hyperparameters:
            value = getattr(self, name)
            number(owner, name, value)
            check = self._fields[name].check
            if check is not None:
                check(owner, name, value)
        leaves, _ = tree_flatten(model, differentiable=True)
        if not leaves:
            raise TypeError(
                f"{type(self).__name__} got a {type(model).__name__} with no parameters (no "
                "floats or floating tensors outside no_derivative fields); pass the model to train."
            )
        self._paths = tree_leaf_paths(model, differentiable=True)
        # Which parameters are trained, and by which group's settings (.param_groups);
        # None when all are, by the optimizer's own.
        self._selection = select(self, self._paths, trainable, param_groups)
        self.param_groups = [dict(group) for group in param_groups or []]
        warn_shared_layers(model)
        self._shapes = [() if isinstance(x, float) else x.shape for x in leaves]
        self._dtypes = [np.dtype(np.float64) if isinstance(x, float) else x.dtype.numpy
                        for x in leaves]
        self.step = 0
        # Slots are made at first use, on the parameter's backend (.leaf_updates.slots_on):
        # None until then, so a model on a device never has its state made on the host.
        self._state: list[dict[str, Tensor] | None] = [None] * len(leaves)
        # Small parameters' slots, packed (see .blocks.Pack), by dtype.
        self._packs: dict = {}

    # What subclasses customise.
    def initial_state(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """The initial value of slot ``name`` for a parameter (zeros by default)."""
        return np.zeros(shape, dtype)

    def step_constants(self, step: int) -> dict:
        """Scalars shared by every parameter at this step (e.g. the decayed rate)."""
        raise NotImplementedError(f"step_constants is abstract: {type(self).__name__} must define it.")

    def update_parameter(self, param: np.ndarray, grad: np.ndarray, state: dict,
                         constants: dict) -> None:
        """Write one parameter's update into ``param`` and its ``state`` slots, in place.

        Write it with in-place NumPy (``param -= x``, ufuncs with ``out=``,
        ``np.empty_like``, ``np.copyto``): the arrays are the backend's own on
        eager backends (NumPy, CuPy) and :class:`~s4tf.optimizers.tensor_buffers.TensorBuffer`
        objects on the lazy xla backend, which record the same operations. A rule
        marked :func:`~s4tf.optimizers.blocks.elementwise` may get flat pieces of
        a parameter, or several small parameters joined, on the host
        (:mod:`s4tf.optimizers.blocks`): its temporaries stay small.
        """
        raise NotImplementedError(f"update_parameter is abstract: {type(self).__name__} must define it.")

    # The update.
    def update(self, model, grads, *, consume: bool = True):
        """``model`` moved one step along ``grads``: the updated model.

        Writes parameter buffers in place when nothing but ``model`` refers to
        them, and then consumes the old model object (later uses raise
        :class:`s4tf.ConsumedValueError`); copies whatever anyone else can see.
        A model passed from a list, a dict or an attribute is copied (the
        holder keeps it, valid and unchanged) unless the result is stored back
        into that very place (``models[i] = opt.update(models[i], g)``). A
        model that is itself a list, tuple or dict cannot be consumed: it is
        copied, with a :class:`~s4tf.optimizers.CopiedUpdateWarning` (once per
        line) that shows the fix.

        A copying update changes nothing if it fails: an exception from
        :meth:`update_parameter` or a Ctrl-C leaves the step count and the
        slots as they were, so a retry gives the numbers of one clean update.
        Ctrl-C during an in-place update is raised once the update is over,
        with ``model`` holding the updated value.

        Parameters
        ----------
        model : Differentiable
            A model of the structure this optimizer was made for.
        grads : model's TangentVector
            Its gradient, e.g. from :func:`s4tf.value_with_gradient`.
        consume : bool
            ``False`` always copies and leaves ``model`` valid and unchanged.

        Examples
        --------
        >>> import s4tf
        >>> class Line(s4tf.Differentiable):
        ...     w: s4tf.Tensor
        >>> model = Line(s4tf.Tensor([1.0, 2.0]))
        >>> opt = s4tf.optimizers.SGD(model, learning_rate=0.5)
        >>> model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
        >>> model.w.tolist()
        [0.5, 1.5]
        """
        # Measured first, before any other local refers to the model.
        count = sys.getrefcount(model)
        if liveness.probing is not None:
            liveness.record_probe(model, count, sys._getframe(1))
        return application.apply_update(self, model, grads, count, consume, sys._getframe(1))

    # The state, for the package's own machinery (the update, captured steps).
    def slots(self, i: int) -> dict[str, Tensor] | None:
        """Parameter ``i``'s current state slots (``{name: Tensor}``), or None before first use.

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], momentum=0.9)
        >>> opt.slots(0) is None
        True
        >>> model = opt.update([s4tf.ones([2])], [s4tf.ones([2])], consume=False)
        >>> sorted(opt.slots(0))
        ['velocity']
        """
        return self._state[i]

    def set_slots(self, i: int, slots: dict[str, Tensor]) -> None:
        """Make ``slots`` parameter ``i``'s state (an update's commit, a captured step's replay).

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], momentum=0.9)
        >>> opt.set_slots(0, {"velocity": s4tf.Tensor([1.0, 1.0])})
        >>> opt.state_dict()["slot.velocity.0"].tolist()
        [1.0, 1.0]
        """
        self._state[i] = slots

    def place_slots(self, i: int, backend) -> dict[str, Tensor]:
        """Parameter ``i``'s slots made (or moved) on ``backend`` now, as its next update would.

        ``backend`` is a backend object (a tensor's ``_backend``). Kept as the
        state: a captured step makes them before the body's update so that
        they are inputs of its program.

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.Adam([s4tf.ones([2])])
        >>> slots = opt.place_slots(0, s4tf.ones([1])._backend)
        >>> opt.slots(0) is slots, sorted(slots)
        (True, ['first_moments', 'second_moments'])
        """
        slots = self._state[i] = slots_on(self, i, backend, dict.fromkeys(self.state_names))
        return slots

    def advance_step(self, steps: int) -> None:
        """Count ``steps`` more updates (a captured step's replay, which runs no ``update``).

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])])
        >>> opt.advance_step(3)
        >>> opt.step
        3
        """
        self.step += steps

    # Saving and restoring.
    def state_dict(self) -> dict:
        """The optimizer's state as a flat dict of NumPy arrays (safetensors-ready).

        Keys: ``"step"``, ``"hyper.<name>"``, ``"group.<k>.<name>"`` (each
        ``param_groups`` entry's numbers) and ``"slot.<slot>.<parameter path>"``
        (none for a parameter it does not train).

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.Adam([s4tf.ones([2])])
        >>> sorted(opt.state_dict())[:3]
        ['hyper.beta1', 'hyper.beta2', 'hyper.decay']
        """
        out = {"step": np.array(self.step, np.int64)}
        for name in self.hyperparameters:
            out[f"hyper.{name}"] = np.array(float(getattr(self, name)), np.float64)
        for k, group in enumerate(self.param_groups):
            for name, value in group.items():
                if name != "params" and not callable(value):
                    out[f"group.{k}.{name}"] = np.array(float(value), np.float64)
        for i, (path, slots, shape, dtype) in enumerate(zip(self._paths, self._state, self._shapes,
                                                            self._dtypes, strict=True)):
            if not self.trains(i):
                continue
            for slot in self.state_names:
                if slots is None or slot not in slots:
                    value = self.initial_state(slot, shape, dtype)
                else:
                    # A host copy whatever the backend (on xla this runs pending work).
                    value = np.array(slots[slot].numpy(), copy=True)
                out[f"slot.{slot}.{path}"] = value
        return out

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved (arrays or plain scalars).

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], momentum=0.9)
        >>> opt.load_state_dict({**opt.state_dict(), "step": 7})
        >>> opt.step
        7
        """
        expected = set(self.state_dict())
        missing, unexpected = sorted(expected - set(state)), sorted(set(state) - expected)
        if missing or unexpected:
            raise KeyError(
                f"{type(self).__name__}.load_state_dict: the saved state does not fit this "
                f"optimizer (missing: {missing or 'none'}; unexpected: {unexpected or 'none'}). "
                "Load a state saved by the same optimizer class for a model of this structure."
            )
        new_slots = []
        for i, (path, shape, dtype) in enumerate(zip(self._paths, self._shapes, self._dtypes,
                                                     strict=True)):
            if not self.trains(i):
                new_slots.append(None)
                continue
            loaded = {}
            for slot in self.state_names:
                value = np.asarray(state[f"slot.{slot}.{path}"])
                if value.shape != shape:
                    raise ValueError(
                        f"{type(self).__name__}.load_state_dict: slot {slot!r} of {path!r} has "
                        f"shape {value.shape}, expected {shape}."
                    )
                # On the host; the update moves it to the parameter's backend at first use.
                loaded[slot] = Tensor._wrap(np.array(value, dtype, copy=True), get_backend_object("naive"))
            new_slots.append(loaded)
        self._state = new_slots
        self._packs = {}
        self.step = int(np.asarray(state["step"]))
        for name in self.hyperparameters:
            setattr(self, name, float(np.asarray(state[f"hyper.{name}"])))
        for k, group in enumerate(self.param_groups):
            for name in group:
                if f"group.{k}.{name}" in state:
                    group[name] = float(np.asarray(state[f"group.{k}.{name}"]))

    def trains(self, i: int) -> bool:
        """Whether parameter ``i`` is trained (``trainable=`` chose it; see :attr:`paths`).

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.SGD({"body": s4tf.ones([2]), "head": s4tf.ones([2])},
        ...                           trainable=["head"])
        >>> [(path, opt.trains(i)) for i, path in enumerate(opt.paths)]
        [('body', False), ('head', True)]
        """
        return self._selection is None or self._selection.trainable[i]

    @property
    def paths(self) -> list[str]:
        """The dotted paths of the parameters, in the order of the model's leaves."""
        return list(self._paths)

    def __repr__(self) -> str:
        hyper = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.hyperparameters)
        return f"{type(self).__name__}({hyper}, step={self.step})"


application.calibrate(Optimizer)
