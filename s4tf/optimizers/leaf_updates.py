"""One parameter's update on its backend: the float, eager and lazy paths, packing, layouts.

:func:`new_leaf` runs an optimizer's rule (:meth:`~s4tf.optimizers.Optimizer.update_parameter`)
on one parameter where it lives:

- a float leaf on host NumPy arrays, always on copies;
- an eager backend's tensor (NumPy, CuPy: both speak NumPy's ufunc and
  array-function protocols) on its own arrays, in place on the parameter's
  storage when copy-on-write allows it, else on copies made with the
  backend's ``xp``; an element-wise rule runs on bounded blocks
  (:mod:`.blocks`), and small parameters written in place wait to run packed
  (:func:`run_packed`);
- the lazy xla backend's tensor on :class:`~.tensor_buffers.TensorBuffer`
  objects, which record new values and never write the old ones (whoever holds
  them keeps their values; buffers nobody holds are donated at the next
  barrier); the new values keep the parameter's layout across devices.

:func:`slots_on` makes or moves a parameter's state slots to its backend.
"""

from __future__ import annotations

import numpy as np

from ..backends.base import get_backend_object
from ..tensor import Tensor
from .blocks import Pack, packable, run_chunked
from .param_groups import overridden
from .tensor_buffers import TensorBuffer

__all__ = ["new_leaf", "run_packed", "slots_on"]


def slots_on(optimizer, i: int, backend, names: dict) -> dict:
    """Parameter ``i``'s state slots as Tensors on ``backend``, made or moved there.

    ``names`` are the slot names, as dict keys. Nothing is stored.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.optimizers.leaf_updates import slots_on
    >>> opt = s4tf.optimizers.Adam([s4tf.ones([2])])
    >>> host = s4tf.ones([1])._backend
    >>> sorted(slots_on(opt, 0, host, dict.fromkeys(opt.state_names)))
    ['first_moments', 'second_moments']
    """
    slots = optimizer._state[i]  # the optimizer's own machinery: its state list, read directly
    if slots is None or slots.keys() != names.keys():
        # First use, or the slots changed with a hyperparameter (SGD's momentum).
        shape, dtype = optimizer._shapes[i], optimizer._dtypes[i]
        old = slots or {}
        slots = {name: old[name] if name in old else
                 _tensor_on(backend, optimizer.initial_state(name, shape, dtype), dtype)
                 for name in names}
    for t in slots.values():
        if t._backend is not backend:
            # The model moved to another backend after the optimizer was made.
            return {name: t if t._backend is backend else t.to(backend.name)
                    for name, t in slots.items()}
    return slots


def new_leaf(optimizer, i, leaf, grad, in_place, constants, names, packed):
    """The new leaf ``i`` and the slots to commit for it.

    A leaf written in place writes its slots in place too (its model is
    consumed: there is nothing to go back to); a small one joins ``packed``
    (not None for an element-wise rule) and is written by :func:`run_packed`
    after the last leaf. Otherwise the rule runs on copies of the parameter and
    of the slots, so that the old ones stay as they were until the update
    commits.
    """
    rule = optimizer.update_parameter
    if isinstance(leaf, float):
        host = get_backend_object("naive")
        state = {name: np.array(t._data, copy=True)
                 for name, t in slots_on(optimizer, i, host, names).items()}
        param = np.array(leaf, np.float64)
        rule(param, grad, state, constants)
        return float(param), {name: Tensor._wrap(a, host) for name, a in state.items()}
    backend = leaf._backend
    slots = slots_on(optimizer, i, backend, names)
    if backend.supports_inplace:
        run = _run_whole if packed is None else run_chunked
        if in_place:
            param, grad = leaf._data, grad._data
            if packed is not None and packable(param, grad):
                packed[0].append(i)
                packed[1].append(param)
                packed[2].append(grad)
            else:
                run(rule, param, grad, {name: t._data for name, t in slots.items()}, constants)
            return leaf, slots
        xp = backend.xp
        state = {name: xp.array(t._data, copy=True) for name, t in slots.items()}
        param = xp.array(leaf._data, copy=True)
        run(rule, param, grad._data, state, constants)
        return (Tensor._wrap(param, backend),
                {name: Tensor._wrap(a, backend) for name, a in state.items()})
    param = TensorBuffer(leaf)
    state = {name: TensorBuffer(t) for name, t in slots.items()}
    rule(param, TensorBuffer(grad), state, constants)
    # Under a distribution strategy the new values keep the parameter's layout
    # (slots follow their parameter); elsewhere this changes nothing.
    return (_follow(param.tensor, leaf),
            {name: _follow(buffer.tensor, leaf) for name, buffer in state.items()})


def run_packed(optimizer, indices, params, grads, group_constants, pending) -> None:
    """The rule on the small parameters written in place, packed by group and dtype (see .blocks).

    ``group_constants[g]`` are the step's constants of parameter group ``g``
    (0: the optimizer's own settings; see :mod:`.param_groups`), and
    ``pending`` maps parameter indices to the slots the update will commit.
    Keeps the packs used now (none when no small parameter was written in
    place, e.g. in a copying update) and lets go of the others.
    """
    state = optimizer._state
    selection = optimizer._selection
    groups: dict = {}
    for k, param in enumerate(params):
        group = 0 if selection is None else selection.group_of[indices[k]]
        groups.setdefault((group, param.dtype), []).append(k)
    packs = {}
    for key, members in groups.items():
        group, dtype = key
        keys, group_params, group_grads = indices, params, grads
        if len(members) < len(params):  # several dtypes: this one's share
            keys = [indices[k] for k in members]
            group_params, group_grads = [params[k] for k in members], [grads[k] for k in members]
        pack = optimizer._packs.get(key)
        if (pack is None or pack.indices != keys
                or any(pending.get(i, state[i]) is not slots
                       for i, slots in zip(keys, pack.slots, strict=True))):
            # First use, or the state was replaced (loaded, or a copying update).
            pack = Pack(keys, [optimizer._shapes[i] for i in keys], dtype,
                        [pending.get(i, state[i]) for i in keys])
            pending.update(zip(keys, pack.slots, strict=True))
        packs[key] = pack
        with overridden(optimizer, optimizer.param_groups[group - 1] if group else {}):
            pack.run(optimizer.update_parameter, group_params, group_grads, group_constants[group])
    optimizer._packs = packs


def _run_whole(rule, param, grad, state, constants) -> None:
    rule(param, grad, state, constants)


def _tensor_on(backend, value: np.ndarray, dtype) -> Tensor:
    if getattr(backend, "xp", None) is np and value.dtype == dtype:
        return Tensor._wrap(value, backend)  # already a fresh host array: no copy
    return Tensor._wrap(backend.asarray(value, dtype), backend)


def _follow(tensor: Tensor, parameter: Tensor) -> Tensor:
    """``tensor`` laid out across devices as ``parameter`` is (s4tf.distributed)."""
    data = tensor._backend.follow_layout(tensor._data, parameter._data)
    return tensor if data is tensor._data else Tensor._wrap(data, tensor._backend)
