"""The optimizer base: ``model = opt.update(model, grads)`` with copy-on-write.

An optimizer is built from a model's structure (leaf paths, shapes, dtypes) and
keeps only that and its own state (per-parameter slots such as moments, and the
step count); never the model or its tensors. ``update`` validates every
gradient, decides with :mod:`s4tf.cow` which parameter buffers nobody else can
see, consumes the old model if it writes any in place, and runs the subclass's
per-parameter rule (:meth:`Optimizer.update_parameter`) on each buffer: in
place, or on a fresh copy when the old value must stay observable.

Gradients and state slots stay on the parameter's backend: eager backends run
the rule on their own arrays; the lazy xla backend runs it on
:class:`~.tensor_buffers.TensorBuffer` objects, so the update joins the step's
graph and returns new tensors (the old buffers are donated when unused).
"""

from __future__ import annotations

import sys
import typing

import numpy as np

from .. import cow
from ..cow import calibration, callsite
from ..differentiable import Differentiable
from ..tensor import Tensor
from ..tree import tree_flatten, tree_leaf_paths
from .blocks import Pack, is_elementwise, packable, run_chunked
from .copied_update import warn_copied_root
from .gradients import leaf_gradients
from .hyperparameters import Hyperparameter, declare, number
from .tensor_buffers import TensorBuffer

__all__ = ["Optimizer"]

# Called as listener(optimizer, model, constants) -> constants by every update while
# s4tf.xla.compile records a step (s4tf/capture), which replays it without Python.
update_listener = None


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
    :meth:`update`. A subclass may instead list ``hyperparameters`` itself and
    write its own ``__init__`` that sets them before calling
    ``super().__init__(model)``, as below.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> class SignSGD(s4tf.optimizers.Optimizer):
    ...     hyperparameters = ("learning_rate",)
    ...     def __init__(self, model, learning_rate=0.5):
    ...         self.learning_rate = learning_rate
    ...         super().__init__(model)
    ...     def step_constants(self, step):
    ...         return {"lr": self.learning_rate}
    ...     def update_parameter(self, param, grad, state, constants):
    ...         param -= constants["lr"] * np.sign(grad)
    >>> opt = SignSGD([s4tf.ones([2])])
    >>> opt.update([s4tf.ones([2])], [s4tf.Tensor([3.0, -1.0])], consume=False)[0].tolist()
    [0.5, 1.5]
    """

    state_names: typing.ClassVar[tuple[str, ...]] = ()
    hyperparameters: typing.ClassVar[tuple[str, ...]] = ("learning_rate",)
    # The declared fields (name -> Hyperparameter), base classes' first.
    _fields: typing.ClassVar[dict[str, Hyperparameter]] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        fields = declare(cls, cls._fields, Optimizer.__init__)
        if fields is not cls._fields:
            cls._fields = fields
            cls.hyperparameters = tuple(name for name, field in fields.items() if field.saved)

    def __init__(self, model) -> None:
        # The hyperparameters are set by now (by the generated __init__, or by the
        # subclass's own before it calls this): one check for all, in order. One set
        # later is checked when state_dict() reads it.
        owner = type(self).__name__
        for name in self.hyperparameters:
            if hasattr(self, name):
                value = getattr(self, name)
                number(owner, name, value)
                field = self._fields.get(name)
                if field is not None and field.check is not None:
                    field.check(owner, name, value)
        leaves, _ = tree_flatten(model, differentiable=True)
        if not leaves:
            raise TypeError(
                f"{type(self).__name__} got a {type(model).__name__} with no parameters (no "
                "floats or floating tensors outside no_derivative fields); pass the model to train."
            )
        self._paths = tree_leaf_paths(model, differentiable=True)
        self._shapes = [() if isinstance(x, float) else x.shape for x in leaves]
        self._dtypes = [np.dtype(np.float64) if isinstance(x, float) else x.dtype.numpy
                        for x in leaves]
        self.step = 0
        # Slots are made at first use, on the parameter's backend (see _slots):
        # None until then, so a model on a device never has its state made on the host.
        self._state: list[dict[str, Tensor] | None] = [None] * len(leaves)
        # Small parameters' slots, packed (see .blocks.Pack), by dtype.
        self._packs: dict[np.dtype, Pack] = {}

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
        if calibration.probing is not None:
            calibration.record_probe(model, count, sys._getframe(1))
        grad_arrays = leaf_gradients(type(self).__name__, model, grads, self._paths,
                                     self._shapes, self._dtypes)
        if consume and not isinstance(model, Differentiable) and _ROOT_BASELINE is not None:
            warn_copied_root(type(self).__name__, model, grad_arrays)
        # The rule and step_constants see the new step, as S4TF's do; the new
        # slots take effect only at commit, so an abandoned update changes nothing.
        old_step, pending, committed = self.step, {}, []
        # An element-wise rule runs on blocks (see .blocks): small parameters written
        # in place wait here (indices, params, grads) to run packed after the last leaf.
        packed = ([], [], []) if is_elementwise(self) else None
        last = len(grad_arrays) - 1

        def new_leaf(i, leaf, in_place):
            new, slots = self._apply(i, leaf, grad_arrays[i], in_place, constants, names, packed)
            if slots is not self._state[i]:  # (most in-place leaves keep theirs)
                pending[i] = slots
            if i == last and packed is not None:
                self._run_packed(*packed, constants, pending)
            return new

        def commit():
            for i, slots in pending.items():
                self._state[i] = slots
            committed.append(True)

        try:
            self.step = old_step + 1
            constants = self.step_constants(self.step)
            if update_listener is not None:
                constants = update_listener(self, model, constants)
            # Read after the listener: a captured step sees the decision on its settings.
            names = dict.fromkeys(self.state_names)  # ordered, and its keys compare as a set
            return cow.update(model, count, _ROOT_BASELINE, consume, new_leaf,
                              f"{type(self).__name__}.update", sys._getframe(1), callsite.UPDATE,
                              commit)
        except BaseException:
            if not committed:
                self.step = old_step
            raise

    def _slots(self, i: int, backend, names: dict) -> dict:
        """Parameter ``i``'s state slots as Tensors on ``backend``, made or moved there.

        ``names`` are the slot names, as dict keys. Nothing is stored: the update
        commits the slots it used once it is done.
        """
        slots = self._state[i]
        if slots is None or slots.keys() != names.keys():
            # First use, or the slots changed with a hyperparameter (SGD's momentum).
            shape, dtype = self._shapes[i], self._dtypes[i]
            old = slots or {}
            slots = {name: old[name] if name in old else
                     _tensor_on(backend, self.initial_state(name, shape, dtype), dtype)
                     for name in names}
        for t in slots.values():
            if t._backend is not backend:
                # The model moved to another backend after the optimizer was made.
                return {name: t if t._backend is backend else t.to(backend.name)
                        for name, t in slots.items()}
        return slots

    def _apply(self, i, leaf, grad, in_place, constants, names, packed):
        """The new leaf ``i`` and the slots to commit for it.

        A leaf written in place writes its slots in place too (its model is
        consumed: there is nothing to go back to); a small one joins ``packed``
        (not None for an element-wise rule) and is written after the last leaf.
        Otherwise the rule runs on copies of the parameter and of the slots, so
        that the old ones stay as they were until the update commits.
        """
        if isinstance(leaf, float):
            host = _host_backend()
            state = {name: np.array(t._data, copy=True)
                     for name, t in self._slots(i, host, names).items()}
            param = np.array(leaf, np.float64)
            self.update_parameter(param, grad, state, constants)
            return float(param), {name: Tensor._wrap(a, host) for name, a in state.items()}
        backend = leaf._backend
        slots = self._slots(i, backend, names)
        if backend.supports_inplace:
            # Eager backends (NumPy, CuPy) run the rule on their own arrays: both
            # speak NumPy's ufunc and array-function protocols.
            run = _run_whole if packed is None else run_chunked
            if in_place:
                param, grad = leaf._data, grad._data
                if packed is not None and packable(param, grad):
                    packed[0].append(i)
                    packed[1].append(param)
                    packed[2].append(grad)
                else:
                    run(self.update_parameter, param, grad,
                        {name: t._data for name, t in slots.items()}, constants)
                return leaf, slots
            xp = backend.xp
            state = {name: xp.array(t._data, copy=True) for name, t in slots.items()}
            param = xp.array(leaf._data, copy=True)
            run(self.update_parameter, param, grad._data, state, constants)
            return (Tensor._wrap(param, backend),
                    {name: Tensor._wrap(a, backend) for name, a in state.items()})
        # The lazy backend: the rule records new values; the old tensors are
        # never written, so whoever still holds them keeps their values, and
        # buffers nobody holds are donated at the next barrier.
        param = TensorBuffer(leaf)
        state = {name: TensorBuffer(t) for name, t in slots.items()}
        self.update_parameter(param, TensorBuffer(grad), state, constants)
        # Under a distribution strategy the new values keep the parameter's layout
        # (slots follow their parameter); elsewhere this changes nothing.
        return (_follow(param.tensor, leaf),
                {name: _follow(buffer.tensor, leaf) for name, buffer in state.items()})

    def _run_packed(self, indices, params, grads, constants, pending) -> None:
        """The rule on the small parameters written in place, packed by dtype (see .blocks).

        Keeps the packs used now (none when no small parameter was written in
        place, e.g. in a copying update) and lets go of the others.
        """
        groups: dict = {}
        for k, param in enumerate(params):
            groups.setdefault(param.dtype, []).append(k)
        packs = {}
        for dtype, members in groups.items():
            keys, group_params, group_grads = indices, params, grads
            if len(members) < len(params):  # several dtypes: this one's share
                keys = [indices[k] for k in members]
                group_params, group_grads = [params[k] for k in members], [grads[k] for k in members]
            pack = self._packs.get(dtype)
            if (pack is None or pack.indices != keys
                    or any(pending.get(i, self._state[i]) is not slots
                           for i, slots in zip(keys, pack.slots, strict=True))):
                # First use, or the state was replaced (loaded, or a copying update).
                pack = Pack(keys, [self._shapes[i] for i in keys], dtype,
                            [pending.get(i, self._state[i]) for i in keys])
                pending.update(zip(keys, pack.slots, strict=True))
            packs[dtype] = pack
            pack.run(self.update_parameter, group_params, group_grads, constants)
        self._packs = packs

    # Saving and restoring.
    def state_dict(self) -> dict:
        """The optimizer's state as a flat dict of NumPy arrays (safetensors-ready).

        Keys: ``"step"``, ``"hyper.<name>"`` and ``"slot.<slot>.<parameter path>"``.

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
        for path, slots, shape, dtype in zip(self._paths, self._state, self._shapes,
                                             self._dtypes, strict=True):
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
        for path, shape, dtype in zip(self._paths, self._shapes, self._dtypes, strict=True):
            loaded = {}
            for slot in self.state_names:
                value = np.asarray(state[f"slot.{slot}.{path}"])
                if value.shape != shape:
                    raise ValueError(
                        f"{type(self).__name__}.load_state_dict: slot {slot!r} of {path!r} has "
                        f"shape {value.shape}, expected {shape}."
                    )
                # On the host; _slots moves it to the parameter's backend at first use.
                loaded[slot] = Tensor._wrap(np.array(value, dtype, copy=True), _host_backend())
            new_slots.append(loaded)
        self._state = new_slots
        self._packs = {}
        self.step = int(np.asarray(state["step"]))
        for name in self.hyperparameters:
            setattr(self, name, float(np.asarray(state[f"hyper.{name}"])))

    def __repr__(self) -> str:
        hyper = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.hyperparameters)
        return f"{type(self).__name__}({hyper}, step={self.step})"


def _run_whole(rule, param, grad, state, constants) -> None:
    rule(param, grad, state, constants)


def _host_backend():
    from ..backends.base import get_backend_object

    return get_backend_object("naive")


def _tensor_on(backend, value: np.ndarray, dtype) -> Tensor:
    if getattr(backend, "xp", None) is np and value.dtype == dtype:
        return Tensor._wrap(value, backend)  # already a fresh host array: no copy
    return Tensor._wrap(backend.asarray(value, dtype), backend)


class _ProbeModel(Differentiable):
    w: float


class _ProbeOptimizer(Optimizer):
    def step_constants(self, step):
        return {}

    def update_parameter(self, param, grad, state, constants):
        param -= grad


def _calibrate() -> calibration.RootBaseline | None:
    optimizer = _ProbeOptimizer(_ProbeModel(0.0))
    return calibration.calibrate_root(
        optimizer.update, lambda: _ProbeModel(0.0), args=(_ProbeModel.TangentVector(w=1.0),),
        calls=("entry({value}, args[0])", "entry(model={value}, grads=args[0])"),
    )


_ROOT_BASELINE = _calibrate()


def _follow(tensor: Tensor, parameter: Tensor) -> Tensor:
    """``tensor`` laid out across devices as ``parameter`` is (s4tf.distributed)."""
    data = tensor._backend.follow_layout(tensor._data, parameter._data)
    return tensor if data is tensor._data else Tensor._wrap(data, tensor._backend)
