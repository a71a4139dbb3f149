"""Applying an optimizer to a model: ``opt.update(model, grads)`` after its first line.

:meth:`Optimizer.update <s4tf.optimizers.Optimizer.update>` measures the
model's reference count and hands everything else to :func:`apply_update`:
check every gradient, let a captured step's recording see the update
(:mod:`s4tf.hooks`), and ask :mod:`s4tf.cow` for the new model, giving it the
per-leaf work (:func:`.leaf_updates.new_leaf`: the rule on each parameter's
backend, in place where copy-on-write allows it) and a ``commit`` that makes
the new slots and step count the optimizer's only once the update is done.
:func:`calibrate` measures, at import, the counts the entry point sees for a
model its caller alone holds.
"""

from __future__ import annotations

from .. import cow, hooks, liveness
from ..cow import callsite
from ..differentiable import Differentiable
from .blocks import is_elementwise
from .copied_update import warn_copied_root
from .gradients import leaf_gradients
from .leaf_updates import new_leaf, run_packed
from .param_groups import overridden

__all__ = ["ROOT_BASELINE", "apply_update", "calibrate"]

# The counts Optimizer.update sees for a model its caller alone holds (measured by
# calibrate() when the optimizer module is imported); None: always copy.
ROOT_BASELINE: liveness.RootBaseline | None = None


def apply_update(optimizer, model, grads, count: int, consume: bool, caller):
    """``model`` moved one step along ``grads`` by ``optimizer``: the body of ``update``.

    ``count`` is ``sys.getrefcount(model)`` measured on the entry point's first
    line and ``caller`` the frame that called it. A copying update that fails
    leaves the optimizer's step and slots as they were.

    Examples
    --------
    >>> import sys, s4tf
    >>> from s4tf.optimizers.application import apply_update
    >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], learning_rate=0.5)
    >>> model = [s4tf.ones([2])]
    >>> apply_update(opt, model, [s4tf.ones([2])], sys.getrefcount(model), False,
    ...              sys._getframe())[0].tolist()
    [0.5, 0.5]
    """
    name = type(optimizer).__name__
    grad_arrays = leaf_gradients(name, model, grads, optimizer._paths, optimizer._shapes,
                                 optimizer._dtypes)
    if consume and not isinstance(model, Differentiable) and ROOT_BASELINE is not None:
        warn_copied_root(name, model, grad_arrays)
    # The rule and step_constants see the new step, as S4TF's do; the new
    # slots take effect only at commit, so an abandoned update changes nothing.
    old_step, pending, committed = optimizer.step, {}, []
    # An element-wise rule runs on blocks (see .blocks): small parameters written
    # in place wait here (indices, params, grads) to run packed after the last leaf.
    packed = ([], [], []) if is_elementwise(optimizer) else None
    last = len(grad_arrays) - 1
    state = optimizer._state  # read per leaf: the list itself, not a method call each time

    selection = optimizer._selection  # None: every parameter trained, by one group

    def leaf(i, value, in_place):
        if selection is None:
            new, slots = new_leaf(optimizer, i, value, grad_arrays[i], in_place, constants,
                                  names, packed)
        elif selection.trainable[i]:
            group = selection.group_of[i]
            with overridden(optimizer, optimizer.param_groups[group - 1] if group else {}):
                new, slots = new_leaf(optimizer, i, value, grad_arrays[i], in_place,
                                      group_constants[group], names, packed)
        else:  # frozen: handed back as it was, no slots
            new, slots = value, state[i]
        if slots is not state[i]:  # (most in-place leaves keep theirs)
            pending[i] = slots
        if i == last and packed is not None:
            run_packed(optimizer, *packed, group_constants, pending)
        return new

    def commit():
        for i, slots in pending.items():
            optimizer.set_slots(i, slots)
        committed.append(True)

    try:
        optimizer.step = old_step + 1
        constants = optimizer.step_constants(optimizer.step)
        if hooks.on_update is not None:  # a captured step's recording (s4tf/capture)
            if optimizer.param_groups:
                raise NotImplementedError(
                    f"{name}.update: an optimizer with param_groups cannot run inside "
                    "s4tf.xla.compile yet (a captured step follows one set of hyperparameters "
                    "per optimizer); call the step without s4tf.xla.compile, or use one "
                    "optimizer per group."
                )
            constants = hooks.on_update(optimizer, model, constants)
        # Each param_groups entry's constants, its settings in force (index 0: the default).
        group_constants = [constants]
        for group in optimizer.param_groups:
            with overridden(optimizer, group):
                group_constants.append(optimizer.step_constants(optimizer.step))
        # Read after the listener: a captured step sees the decision on its settings.
        names = dict.fromkeys(optimizer.state_names)  # ordered, and its keys compare as a set
        return cow.update(cow.UpdateRequest(
            value=model, count=count, baseline=ROOT_BASELINE, consume=consume, new_leaf=leaf,
            what=f"{name}.update", caller=caller, entry=callsite.UPDATE, commit=commit))
    except BaseException:
        if not committed:
            optimizer.step = old_step
        raise


def calibrate(base: type) -> None:
    """Measure :data:`ROOT_BASELINE` by calling ``base.update`` from probe callers.

    ``base`` is :class:`~s4tf.optimizers.Optimizer`: a probe subclass with an
    empty rule updates a one-float probe model in every call shape that
    :func:`s4tf.liveness.calibrate_root` tries.
    """
    global ROOT_BASELINE

    class ProbeModel(Differentiable):
        w: float

    class ProbeOptimizer(base):
        def step_constants(self, step):
            return {}

        def update_parameter(self, param, grad, state, constants):
            param -= grad

    optimizer = ProbeOptimizer(ProbeModel(0.0))
    ROOT_BASELINE = liveness.calibrate_root(
        optimizer.update, lambda: ProbeModel(0.0), args=(ProbeModel.TangentVector(w=1.0),),
        calls=("entry({value}, args[0])", "entry(model={value}, grads=args[0])"),
    )
