"""Learning-rate schedules: callables from the step number (1, 2, ...) to a learning rate.

Give one to any optimizer as its rate, ``SGD(model, learning_rate=schedule)``
(update ``t`` then uses ``schedule(t)``; any function of the step works, see
:mod:`s4tf.optimizers.hyperparameters`), or to the training loop's
:class:`~s4tf.callbacks.LearningRateScheduler`.

Examples
--------
>>> import s4tf
>>> from s4tf.optimizers import SGD, schedules
>>> opt = SGD([s4tf.ones([2])], learning_rate=schedules.StepDecay(1.0, step_size=1, gamma=0.5))
>>> rates = []
>>> for _ in range(3):
...     rates.append(opt.learning_rate)                      # the next update's rate
...     _ = opt.update([s4tf.ones([2])], [s4tf.ones([2])], consume=False)
>>> rates
[0.5, 0.25, 0.125]
"""

from __future__ import annotations

import math

__all__ = ["CosineDecay", "ExponentialDecay", "LinearWarmup", "OneCycle", "StepDecay"]


def _check_positive(owner: str, **values) -> None:
    for name, value in values.items():
        if not value > 0:
            raise ValueError(f"{owner}: {name} must be > 0, got {value!r}.")


class StepDecay:
    """``initial * gamma ** (step // step_size)``: drop by ``gamma`` every ``step_size`` steps.

    Examples
    --------
    >>> from s4tf.optimizers.schedules import StepDecay
    >>> [StepDecay(1.0, step_size=2, gamma=0.5)(s) for s in (1, 2, 3, 4)]
    [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, initial: float, step_size: int, gamma: float = 0.1) -> None:
        _check_positive("StepDecay", step_size=step_size)
        self.initial, self.step_size, self.gamma = initial, step_size, gamma

    def __call__(self, step: int) -> float:
        return self.initial * self.gamma ** (step // self.step_size)


class ExponentialDecay:
    """``initial * decay_rate ** (step / decay_steps)`` (floored exponent with ``staircase``).

    Examples
    --------
    >>> from s4tf.optimizers.schedules import ExponentialDecay
    >>> ExponentialDecay(1.0, decay_rate=0.5, decay_steps=10)(20)
    0.25
    """

    def __init__(self, initial: float, decay_rate: float, decay_steps: int,
                 staircase: bool = False) -> None:
        _check_positive("ExponentialDecay", decay_steps=decay_steps, decay_rate=decay_rate)
        self.initial, self.decay_rate, self.decay_steps = initial, decay_rate, decay_steps
        self.staircase = staircase

    def __call__(self, step: int) -> float:
        exponent = step / self.decay_steps
        if self.staircase:
            exponent = math.floor(exponent)
        return self.initial * self.decay_rate**exponent


class CosineDecay:
    """Cosine from ``initial`` down to ``initial * alpha`` over ``decay_steps``, then flat.

    Examples
    --------
    >>> from s4tf.optimizers.schedules import CosineDecay
    >>> [round(CosineDecay(1.0, decay_steps=4)(s), 3) for s in (0, 2, 4, 8)]
    [1.0, 0.5, 0.0, 0.0]
    """

    def __init__(self, initial: float, decay_steps: int, alpha: float = 0.0) -> None:
        _check_positive("CosineDecay", decay_steps=decay_steps)
        self.initial, self.decay_steps, self.alpha = initial, decay_steps, alpha

    def __call__(self, step: int) -> float:
        progress = min(step, self.decay_steps) / self.decay_steps
        cosine = 0.5 * (1 + math.cos(math.pi * progress))
        return self.initial * ((1 - self.alpha) * cosine + self.alpha)


class LinearWarmup:
    """Rise linearly from ``start`` to ``then(warmup_steps)`` over ``warmup_steps``, then ``then``.

    ``then`` is a schedule or a constant learning rate. ``then`` is read at
    the global step, so ``LinearWarmup(CosineDecay(0.1, 1000), 100)`` warms up
    over the first 100 steps of the cosine's 1000.

    Examples
    --------
    >>> from s4tf.optimizers.schedules import CosineDecay, LinearWarmup
    >>> [LinearWarmup(1.0, warmup_steps=4)(s) for s in (1, 2, 4, 9)]
    [0.25, 0.5, 1.0, 1.0]
    >>> warm_cosine = LinearWarmup(CosineDecay(1.0, decay_steps=8), warmup_steps=2)
    >>> [round(warm_cosine(s), 3) for s in (1, 2, 4, 8)]
    [0.427, 0.854, 0.5, 0.0]
    """

    def __init__(self, then, warmup_steps: int, start: float = 0.0) -> None:
        _check_positive("LinearWarmup", warmup_steps=warmup_steps)
        self.then = then if callable(then) else (lambda step, value=float(then): value)
        self.warmup_steps, self.start = warmup_steps, start

    def __call__(self, step: int) -> float:
        if step >= self.warmup_steps:
            return self.then(step)
        target = self.then(self.warmup_steps)
        return self.start + (target - self.start) * step / self.warmup_steps


class OneCycle:
    """The one-cycle policy (Smith 2018): warm up to ``max_learning_rate``, then anneal far below.

    Update 1 uses ``max_learning_rate / initial_divisor``; the rate rises to
    ``max_learning_rate`` at step ``round(warmup_fraction * total_steps)``,
    then falls to ``max_learning_rate / (initial_divisor * final_divisor)``
    at ``total_steps`` and stays there; both phases follow a half cosine
    (``anneal="cos"``) or a line (``"linear"``). The defaults are PyTorch's
    ``OneCycleLR``'s. ``total_steps`` is the number of updates of the run:
    ``epochs * len(data.training)`` (divided by ``accumulate``).

    Examples
    --------
    >>> from s4tf.optimizers.schedules import OneCycle
    >>> cycle = OneCycle(1.0, total_steps=10, warmup_fraction=0.3)
    >>> [round(cycle(s), 4) for s in (1, 3, 10, 11)]
    [0.04, 1.0, 0.0, 0.0]
    >>> round(cycle(10) * 1e6, 2)
    4.0
    """

    def __init__(self, max_learning_rate: float, total_steps: int, warmup_fraction: float = 0.3,
                 initial_divisor: float = 25.0, final_divisor: float = 1e4,
                 anneal: str = "cos") -> None:
        _check_positive("OneCycle", max_learning_rate=max_learning_rate,
                        total_steps=total_steps, initial_divisor=initial_divisor,
                        final_divisor=final_divisor)
        if not 0 < warmup_fraction < 1:
            raise ValueError(f"OneCycle: warmup_fraction must lie strictly between 0 and 1, "
                             f"got {warmup_fraction!r}.")
        if anneal not in ("cos", "linear"):
            raise ValueError(f"OneCycle: anneal must be 'cos' or 'linear', got {anneal!r}.")
        self.max_learning_rate, self.total_steps = max_learning_rate, total_steps
        self.warmup_fraction, self.anneal = warmup_fraction, anneal
        self.initial = max_learning_rate / initial_divisor
        self.final = self.initial / final_divisor
        self.peak_step = max(1, min(total_steps - 1, round(warmup_fraction * total_steps)))

    def _between(self, start: float, end: float, progress: float) -> float:
        if self.anneal == "linear":
            return start + (end - start) * progress
        return end + (start - end) * 0.5 * (1 + math.cos(math.pi * progress))

    def __call__(self, step: int) -> float:
        if step <= self.peak_step:
            progress = (step - 1) / (self.peak_step - 1) if self.peak_step > 1 else 1.0
            return self._between(self.initial, self.max_learning_rate, max(0.0, progress))
        progress = min(1.0, (step - self.peak_step) / (self.total_steps - self.peak_step))
        return self._between(self.max_learning_rate, self.final, progress)
