"""The optimizer base: ``model = opt.update(model, grads)`` with copy-on-write.

An optimizer is built from a model's structure (leaf paths, shapes, dtypes) and
keeps only that and its own state (per-parameter slots such as moments, and the
step count); never the model or its tensors. ``update`` validates every
gradient, decides with :mod:`s4tf.cow` which parameter buffers nobody else can
see, consumes the old model if it writes any in place, and runs the subclass's
per-parameter rule (:meth:`Optimizer.update_parameter`) on each buffer: in
place, or on a fresh copy when the old value must stay observable.
"""

from __future__ import annotations

import sys
import typing

import numpy as np

from .. import cow
from ..autodiff.diagnostics import user_location
from ..consumed import consume as _consume
from ..cow import calibration
from ..differentiable import Differentiable
from ..tensor import Tensor
from ..tree import tree_flatten
from ._paths import leaf_paths

__all__ = ["Optimizer"]


class Optimizer:
    """Base class of optimizers; subclasses define the per-parameter rule.

    Subclasses set :attr:`state_names` (per-parameter slots, zero-initialised
    unless :meth:`initial_state` says otherwise), :attr:`hyperparameters`
    (saved by :meth:`state_dict`), and implement :meth:`step_constants` and
    :meth:`update_parameter`. They do not override :meth:`update`.

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
    >>> opt.update([s4tf.ones([2])], [s4tf.Tensor([3.0, -1.0])])[0].tolist()
    [0.5, 1.5]
    """

    state_names: typing.ClassVar[tuple[str, ...]] = ()
    hyperparameters: typing.ClassVar[tuple[str, ...]] = ("learning_rate",)

    def __init__(self, model) -> None:
        leaves, _ = tree_flatten(model, differentiable=True)
        if not leaves:
            raise TypeError(
                f"{type(self).__name__} got a {type(model).__name__} with no parameters (no "
                "floats or floating tensors outside no_derivative fields); pass the model to train."
            )
        self._paths = leaf_paths(model)
        self._shapes = [() if isinstance(x, float) else x.shape for x in leaves]
        self._dtypes = [np.dtype(np.float64) if isinstance(x, float) else x.dtype.numpy
                        for x in leaves]
        self.step = 0
        self._state: list[dict[str, Tensor]] = [
            {name: Tensor._wrap(self.initial_state(name, shape, dtype), _host_backend())
             for name in self.state_names}
            for shape, dtype in zip(self._shapes, self._dtypes, strict=True)
        ]

    # What subclasses customise.
    def initial_state(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """The initial value of slot ``name`` for a parameter (zeros by default)."""
        return np.zeros(shape, dtype)

    def step_constants(self, step: int) -> dict:
        """Scalars shared by every parameter at this step (e.g. the decayed rate)."""
        raise NotImplementedError(f"step_constants is abstract: {type(self).__name__} must define it.")

    def update_parameter(self, param: np.ndarray, grad: np.ndarray, state: dict,
                         constants: dict) -> None:
        """Write one parameter's update into ``param`` and its ``state`` slots, in place."""
        raise NotImplementedError(f"update_parameter is abstract: {type(self).__name__} must define it.")

    # The update.
    def update(self, model, grads, *, consume: bool = True):
        """``model`` moved one step along ``grads``: the updated model.

        Writes parameter buffers in place when nothing but ``model`` refers to
        them, and then consumes the old model object (later uses raise
        :class:`s4tf.ConsumedValueError`); copies whatever anyone else can see.

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
            calibration.record_probe(count)
        grad_arrays = self._gradients(model, grads)
        root_unique = cow.root_is_unique(model, count, _ROOT_BASELINE, consume)
        found = cow.analyze(model, root_unique)
        location = user_location()
        cls = type(model)
        fields = _consume(model, location) if root_unique else None
        self.step += 1
        constants = self.step_constants(self.step)
        new_leaves = [
            self._apply(i, leaf, grad, in_place, constants)
            for i, (leaf, grad, in_place) in enumerate(
                zip(found.leaves, grad_arrays, found.in_place, strict=True))
        ]
        if fields is not None:
            new = cow.rebuild_consumed(cls, fields, iter(new_leaves), found)
        else:
            new = cow.rebuild(model, iter(new_leaves), found)
        if cow.debug_enabled() and not all(found.in_place):
            self._report_copy(model, count, consume, root_unique, found, location, fields)
        return new

    def _report_copy(self, model, count, consume, root_unique, found, location, fields):
        sizes = zip(self._shapes, self._dtypes, strict=True)
        nbytes = sum(int(np.prod(s)) * d.itemsize for s, d in sizes)
        # A consumed model must not be touched again: it would raise.
        reason = None if root_unique else cow.copy_reason(model, count, _ROOT_BASELINE, consume)
        blocker = found.blocker
        if not root_unique and reason is None:
            blocker = model  # someone else holds the model itself
        cow.report_copy(f"{type(self).__name__}.update", nbytes, blocker, location,
                        ignore=(found, found.leaves, fields), own=found.visited, reason=reason)

    def _gradients(self, model, grads) -> list:
        """The gradient of every leaf as a NumPy array, checked before anything is written."""
        leaves, treedef = tree_flatten(model, differentiable=True)
        name = type(self).__name__
        if len(leaves) != len(self._shapes):
            raise ValueError(
                f"{name} was made for a model with {len(self._shapes)} parameters, but update() "
                f"got a {type(model).__name__} with {len(leaves)}. Make a new optimizer for a "
                "model of a different structure."
            )
        try:
            tangents = treedef.tangent_leaves(grads)
        except (TypeError, ValueError) as error:
            raise type(error)(
                f"{name}.update: the gradients do not match the model's structure ({error}). "
                f"Pass the gradient of this {type(model).__name__}, e.g. from "
                "s4tf.value_with_gradient(model, of=loss_fn)."
            ) from None
        out = []
        for path, leaf, grad, shape, dtype in zip(self._paths, leaves, tangents, self._shapes,
                                                  self._dtypes, strict=True):
            leaf_shape = () if isinstance(leaf, float) else leaf.shape
            if leaf_shape != shape:
                raise ValueError(
                    f"{name}.update: parameter {path!r} has shape {leaf_shape}, but the optimizer "
                    f"was made for shape {shape}. Make a new optimizer for the changed model."
                )
            out.append(_gradient_array(name, path, grad, shape, dtype))
        return out

    def _apply(self, i, leaf, grad, in_place, constants):
        state = {name: t._data for name, t in self._state[i].items()}
        if isinstance(leaf, float):
            param = np.array(leaf, np.float64)
            self.update_parameter(param, grad, state, constants)
            return float(param)
        if in_place:
            self.update_parameter(leaf._data, grad, state, constants)
            return leaf
        backend = leaf._backend
        param = np.array(backend.to_numpy(leaf._data), copy=True)
        self.update_parameter(param, grad, state, constants)
        if getattr(backend, "xp", None) is np:
            return Tensor._wrap(param, backend)
        return Tensor._wrap(backend.asarray(param, leaf.dtype), backend)

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
        for path, slots in zip(self._paths, self._state, strict=True):
            for slot, tensor in slots.items():
                out[f"slot.{slot}.{path}"] = np.array(tensor._data, copy=True)
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
        for path, slots, shape, dtype in zip(self._paths, self._state, self._shapes,
                                             self._dtypes, strict=True):
            loaded = {}
            for slot in slots:
                value = np.asarray(state[f"slot.{slot}.{path}"])
                if value.shape != shape:
                    raise ValueError(
                        f"{type(self).__name__}.load_state_dict: slot {slot!r} of {path!r} has "
                        f"shape {value.shape}, expected {shape}."
                    )
                loaded[slot] = Tensor._wrap(np.array(value, dtype, copy=True), _host_backend())
            new_slots.append(loaded)
        self._state = new_slots
        self.step = int(np.asarray(state["step"]))
        for name in self.hyperparameters:
            setattr(self, name, float(np.asarray(state[f"hyper.{name}"])))

    def __repr__(self) -> str:
        hyper = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.hyperparameters)
        return f"{type(self).__name__}({hyper}, step={self.step})"


def _host_backend():
    from ..backends.base import get_backend_object

    return get_backend_object("naive")


def _gradient_array(name, path, grad, shape, dtype) -> np.ndarray:
    if grad is None:
        return np.zeros(shape, dtype)
    if isinstance(grad, float | int) and not isinstance(grad, bool):
        if shape == ():
            return np.asarray(grad, dtype)
        raise TypeError(
            f"{name}.update: the gradient of {path!r} is the number {grad!r}, but the parameter is "
            f"a tensor of shape {shape}; pass a Tensor of that shape (or None for zero)."
        )
    if not isinstance(grad, Tensor):
        raise TypeError(
            f"{name}.update: the gradient of {path!r} is a {type(grad).__name__}; expected a "
            f"Tensor of shape {shape} (or None for zero)."
        )
    if grad.shape != shape:
        raise ValueError(
            f"{name}.update: the gradient of {path!r} has shape {grad.shape}, but the parameter "
            f"has shape {shape}. Pass the gradient computed for this model."
        )
    if grad.dtype.numpy != dtype and shape != ():
        raise TypeError(
            f"{name}.update: the gradient of {path!r} has dtype {grad.dtype}, but the parameter "
            f"is {np.dtype(dtype).name}; cast it with grad.astype(...) first."
        )
    return np.asarray(grad._backend.to_numpy(grad._data))


class _ProbeModel(Differentiable):
    w: float


class _ProbeOptimizer(Optimizer):
    def step_constants(self, step):
        return {}

    def update_parameter(self, param, grad, state, constants):
        param -= grad


def _calibrate() -> int | None:
    optimizer = _ProbeOptimizer(_ProbeModel(0.0))
    return calibration.calibrate_root(
        optimizer.update, lambda: _ProbeModel(0.0), args=(_ProbeModel.TangentVector(w=1.0),),
        keyword="model", arg_names=("grads",),
    )


_ROOT_BASELINE = _calibrate()
