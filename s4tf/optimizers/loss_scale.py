"""Loss scaling for float16 training: scale the loss, unscale the gradients, skip overflows.

float16's smallest normal number is about ``6e-5``: gradients smaller than
that lose precision or vanish. Multiplying the loss by a large ``scale`` (a
power of two, so exact) multiplies every gradient by it; :class:`LossScale`
divides the gradients back before the wrapped optimizer's rule sees them, and
skips a step whose gradients overflowed (inf or NaN) instead of writing them
into the model.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import liveness
from ..tensor import Tensor
from ..tree import tree_flatten, tree_map
from . import application
from .optimizer import Optimizer

__all__ = ["LossScale"]


class LossScale:
    """An optimizer wrapper that scales the loss and skips steps whose gradients are not finite.

    Compute the gradient of ``opt.scale_loss(loss)`` and hand it to
    ``opt.update(model, grads)``, which divides it by :attr:`scale`, checks
    that every value is finite, and then either applies the wrapped
    optimizer's update or skips the step: a skipped step writes nothing (the
    model is returned as it was, not consumed; the wrapped optimizer's slots
    and ``step`` are unchanged, so schedules count applied updates only) and
    adds one to :attr:`skipped`. With ``dynamic=True`` the scale halves on
    every skipped step and doubles after ``growth_interval`` finite steps in a
    row. ``TrainingLoop(loss_scale="dynamic")`` does all of this for you.

    The finiteness check reads one number per step: on the lazy xla backend
    it waits for the step's gradients before recording the update.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer that applies the (unscaled) gradients.
    initial : float, default 2**15
        The first scale.
    dynamic : bool, default True
        Adapt the scale; ``False`` keeps ``initial`` (steps with non-finite
        gradients are still skipped).
    growth_interval : int, default 2000
        Finite steps in a row after which a dynamic scale doubles.

    Attributes
    ----------
    scale : float
        The current scale.
    skipped : int
        Steps skipped because their gradients were not finite.

    Examples
    --------
    >>> import s4tf
    >>> model = s4tf.layers.Dense(2, 1)
    >>> opt = s4tf.optimizers.LossScale(s4tf.optimizers.SGD(model), initial=1024.0)
    >>> x = s4tf.ones([4, 2])
    >>> grads = s4tf.gradient(model, of=lambda m: opt.scale_loss(m(x).sum()))
    >>> model = opt.update(model, grads)
    >>> opt.scale, opt.skipped, opt.step
    (1024.0, 0, 1)
    """

    def __init__(self, optimizer, initial: float = 2.0**15, dynamic: bool = True,
                 growth_interval: int = 2000) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LossScale wraps an s4tf optimizer (e.g. LossScale(Adam(model))); "
                            f"received {optimizer!r}.")
        if isinstance(initial, bool) or not isinstance(initial, int | float) or not (
                math.isfinite(initial) and initial > 0):
            raise ValueError(f"LossScale: initial must be a positive finite number, e.g. 2**15; "
                             f"received initial={initial!r}.")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or \
                growth_interval < 1:
            raise ValueError(f"LossScale: growth_interval must be a positive int; received "
                             f"growth_interval={growth_interval!r}.")
        if not isinstance(dynamic, bool):
            raise TypeError(f"LossScale: dynamic must be True or False; received {dynamic!r}.")
        object.__setattr__(self, "optimizer", optimizer)
        self.scale = float(initial)
        self.dynamic = dynamic
        self.growth_interval = growth_interval
        self.skipped = 0
        self._finite_steps = 0  # finite steps in a row since the scale last changed

    # The wrapped optimizer's settings (learning_rate, step, ...) read and written through.
    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "optimizer"), name)

    def __setattr__(self, name, value) -> None:
        if name in type(self).__dict__ or name in {"scale", "dynamic", "growth_interval",
                                                   "skipped", "_finite_steps"}:
            object.__setattr__(self, name, value)
        else:
            setattr(self.optimizer, name, value)

    def scale_loss(self, loss):
        """``loss * scale``: differentiate this, then pass the gradient to :meth:`update`.

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.LossScale(s4tf.optimizers.SGD([s4tf.ones([1])]), initial=8.0)
        >>> float(opt.scale_loss(s4tf.Tensor(0.5)))
        4.0
        """
        return loss * self.scale

    def update(self, model, grads, *, consume: bool = True):
        """``model`` moved along ``grads / scale``, or ``model`` itself when they are not finite.

        Same contract as :meth:`Optimizer.update` (copy-on-write, consumption);
        ``grads`` is the gradient of :meth:`scale_loss`'s result.

        Examples
        --------
        >>> import math, s4tf
        >>> opt = s4tf.optimizers.LossScale(s4tf.optimizers.SGD([s4tf.ones([1])]), initial=4.0)
        >>> opt.update([s4tf.ones([1])], [s4tf.Tensor([math.inf])], consume=False)[0].tolist()
        [1.0]
        >>> opt.scale, opt.skipped
        (2.0, 1)
        """
        # Measured first, as Optimizer.update does, so copy-on-write sees the caller's count.
        count = sys.getrefcount(model)
        if liveness.probing is not None:
            liveness.record_probe(model, count, sys._getframe(1))
        inverse = 1.0 / self.scale
        unscaled = tree_map(lambda g: g * inverse, grads)
        if not _all_finite(unscaled):
            self.skipped += 1
            self._finite_steps = 0
            if self.dynamic:
                self.scale = max(self.scale * 0.5, 1.0)
            return model
        new = application.apply_update(self.optimizer, model, unscaled, count, consume,
                                       sys._getframe(1))
        self._finite_steps += 1
        if self.dynamic and self._finite_steps >= self.growth_interval:
            self.scale *= 2.0
            self._finite_steps = 0
        return new

    def state_dict(self) -> dict:
        """The wrapped optimizer's state plus ``loss_scale.scale``, ``.skipped`` and ``.finite_steps``.

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.LossScale(s4tf.optimizers.SGD([s4tf.ones([1])]))
        >>> float(opt.state_dict()["loss_scale.scale"])
        32768.0
        """
        return {**self.optimizer.state_dict(),
                "loss_scale.scale": np.array(self.scale, np.float64),
                "loss_scale.skipped": np.array(self.skipped, np.int64),
                "loss_scale.finite_steps": np.array(self._finite_steps, np.int64)}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved.

        Examples
        --------
        >>> import s4tf
        >>> opt = s4tf.optimizers.LossScale(s4tf.optimizers.SGD([s4tf.ones([1])]))
        >>> opt.load_state_dict({**opt.state_dict(), "loss_scale.scale": 8.0})
        >>> opt.scale
        8.0
        """
        own = {k: state[k] for k in state if k.startswith("loss_scale.")}
        self.optimizer.load_state_dict({k: v for k, v in state.items() if k not in own})
        self.scale = float(own.get("loss_scale.scale", self.scale))
        self.skipped = int(own.get("loss_scale.skipped", self.skipped))
        self._finite_steps = int(own.get("loss_scale.finite_steps", self._finite_steps))

    def __repr__(self) -> str:
        return f"LossScale({self.optimizer!r}, scale={self.scale!r}, dynamic={self.dynamic})"


def _all_finite(grads) -> bool:
    """Whether every gradient value is finite: one number read, whatever the model's size.

    ``g * 0`` is 0 where ``g`` is finite and NaN where it is inf or NaN, so
    the sum of those sums is finite exactly when every value is.
    """
    total = 0.0
    for leaf in tree_flatten(grads)[0]:
        total = total + ((leaf * 0.0).sum() if isinstance(leaf, Tensor) else leaf * 0.0)
    return math.isfinite(float(total))
