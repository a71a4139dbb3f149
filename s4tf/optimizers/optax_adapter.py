"""Any optax gradient transformation as an s4tf optimizer: ``Optax(model, optax.adam(1e-3))``.

optax transformations act on whole trees (``clip_by_global_norm``, chains,
masks), not one parameter at a time, so :class:`Optax` replaces
:meth:`Optimizer.update` instead of writing a per-parameter rule: the model's
parameters and gradients go to JAX as arrays (:meth:`Backend.to_jax
<s4tf.backends.base.Backend.to_jax>`: the buffers themselves on xla and jax),
one jitted call runs ``transformation.update`` and ``optax.apply_updates``,
and the new arrays come back as tensors on each parameter's backend.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np

from .. import cow
from ..cow import callsite
from ..tensor import Tensor
from ..tree import tree_flatten
from . import application
from .gradients import leaf_gradients
from .optimizer import Optimizer

__all__ = ["Optax"]


def _optax():
    try:
        return importlib.import_module("optax")
    except ImportError as error:
        raise ImportError(
            f"s4tf.optimizers.Optax needs optax, which could not be imported ({error}). "
            "Install it with: pip install 's4tf[optax]'"
        ) from error


class Optax(Optimizer):
    """An s4tf optimizer running an optax gradient transformation.

    ``model = opt.update(model, grads)`` as with every s4tf optimizer; the
    transformation's state (``opt.optax_state``, an optax pytree of JAX
    arrays) is made at the first update and kept by the optimizer object, as
    s4tf's optimizers keep their slots. The update is copy-on-write, as every
    s4tf optimizer's: the new values are written into the parameters'
    buffers (naive, cupy) when nobody else can see the model, which is then
    consumed; otherwise new tensors are made and every old value stays as it
    was.

    Parameters
    ----------
    model : Differentiable
        The model whose structure the optimizer is made for.
    transformation : optax.GradientTransformation
        E.g. ``optax.adam(1e-3)``, ``optax.chain(optax.clip_by_global_norm(1.0),
        optax.sgd(0.1))``. It receives the model's parameters (floating tensors
        and floats outside ``no_derivative`` fields) as a list of JAX arrays, in
        :func:`s4tf.tree_leaves` order.

    Raises
    ------
    ImportError
        Without optax, naming the extra to install (``pip install 's4tf[optax]'``).

    Examples
    --------
    >>> import optax
    >>> import s4tf
    >>> class Line(s4tf.Differentiable):
    ...     w: s4tf.Tensor
    >>> model = Line(s4tf.Tensor([1.0, 2.0]))
    >>> opt = s4tf.optimizers.Optax(model, optax.sgd(0.5))
    >>> model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    >>> model.w.tolist(), model.w.backend, opt.step
    ([0.5, 1.5], 'naive', 1)
    """

    def __init__(self, model, transformation) -> None:
        optax = _optax()
        if not isinstance(transformation, optax.GradientTransformation):
            raise TypeError(
                f"Optax(model, transformation) takes an optax GradientTransformation, e.g. "
                f"optax.adam(1e-3); received {type(transformation).__name__}."
            )
        super().__init__(model)
        self.transformation = transformation
        self.optax_state = None
        self._jitted = None

    def step_constants(self, step: int) -> dict:
        return {}

    def update_parameter(self, param, grad, state, constants) -> None:
        raise TypeError("Optax updates whole trees through optax; it has no per-parameter rule.")

    def update(self, model, grads, *, consume: bool = True):
        """``model`` moved by the transformation's update for ``grads``: the updated model.

        Copy-on-write as in :meth:`Optimizer.update`: when nothing but
        ``model`` refers to it, the new values are written into the parameter
        buffers of the naive and cupy backends and the old model object is
        consumed; otherwise (or on xla and jax, whose buffers are never
        written) the parameters are new tensors and the old model stays valid.

        Examples
        --------
        >>> import optax, s4tf
        >>> model = [s4tf.Tensor([1.0])]
        >>> opt = s4tf.optimizers.Optax(model, optax.sgd(1.0))
        >>> opt.update(model, [s4tf.Tensor([0.25])], consume=False)[0].tolist(), model[0].tolist()
        ([0.75], [1.0])
        """
        # Measured first, before any other local refers to the model.
        count = sys.getrefcount(model)
        jax = importlib.import_module("jax")
        name = type(self).__name__
        grad_leaves = leaf_gradients(name, model, grads, self._paths, self._shapes, self._dtypes)
        gradients = [_as_jax(jax, g) for g in grad_leaves]
        params = [_as_jax(jax, leaf) for leaf in tree_flatten(model, differentiable=True)[0]]
        if self.optax_state is None:
            self.optax_state = self.transformation.init(params)
        if self._jitted is None:
            self._jitted = jax.jit(_step_function(self.transformation, _optax()))
        new_params, new_state = self._jitted(gradients, self.optax_state, params)
        del params  # (the tensors themselves were never kept: copy-on-write counts them)

        def new_leaf(i, leaf, in_place):
            return _back(new_params[i], leaf, in_place)

        def commit():
            self.optax_state = new_state
            self.step += 1

        return cow.update(cow.UpdateRequest(
            value=model, count=count, baseline=application.ROOT_BASELINE, consume=consume,
            new_leaf=new_leaf, what=f"{name}.update", caller=sys._getframe(1),
            entry=callsite.UPDATE, commit=commit))

    def state_dict(self) -> dict:
        """The step and the optax state's arrays (host NumPy), in optax's leaf order.

        Examples
        --------
        >>> import optax, s4tf
        >>> opt = s4tf.optimizers.Optax([s4tf.ones([2])], optax.adam(0.1))
        >>> _ = opt.update([s4tf.ones([2])], [s4tf.ones([2])])
        >>> sorted(opt.state_dict()), opt.state_dict()["step"]
        (['optax_state', 'step'], 1)
        """
        jax = importlib.import_module("jax")
        leaves = [] if self.optax_state is None else jax.tree_util.tree_leaves(self.optax_state)
        return {"step": self.step, "optax_state": [np.array(leaf) for leaf in leaves]}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict`'s result (after one update made the state's structure,
        or for a fresh optimizer, whose state is built from the model first)."""
        jax = importlib.import_module("jax")
        if self.optax_state is None:
            self.optax_state = self.transformation.init(
                [jax.numpy.zeros(shape, dtype) for shape, dtype in
                 zip(self._shapes, self._dtypes, strict=True)])
        treedef = jax.tree_util.tree_structure(self.optax_state)
        arrays = state["optax_state"]
        if len(arrays) != treedef.num_leaves:
            raise ValueError(
                f"Optax.load_state_dict: the saved optax state has {len(arrays)} arrays, this "
                f"transformation's has {treedef.num_leaves}. Load a state saved by an Optax "
                "optimizer with the same transformation and model."
            )
        self.optax_state = jax.tree_util.tree_unflatten(
            treedef, [jax.numpy.asarray(a) for a in arrays])
        self.step = int(state["step"])


def _step_function(transformation, optax):
    def step(gradients, state, params):
        updates, state = transformation.update(gradients, state, params)
        return optax.apply_updates(params, updates), state

    return step


def _as_jax(jax, leaf):
    if isinstance(leaf, Tensor):
        return leaf._backend.to_jax(leaf._data)
    return jax.numpy.asarray(leaf)  # a float leaf, or a float's 0-d gradient


def _back(array, old, in_place):
    """Parameter ``old``'s new value ``array``: written into its buffer when ``in_place``."""
    if not isinstance(old, Tensor):
        return float(array)
    backend = old._backend
    if in_place and backend.supports_inplace:
        backend.xp.copyto(old._data, backend.xp.asarray(np.asarray(array), dtype=old._data.dtype))
        return old
    from ..differentiable.jax_pytrees import tensor_from_jax

    return tensor_from_jax(array.astype(old.dtype.numpy), backend)
