"""Learning-rate schedules: callables from the step number (1, 2, ...) to a learning rate.

Use one between updates: ``opt.learning_rate = schedule(opt.step + 1)``, or hand
it to the training loop's learning-rate callback.
"""

from __future__ import annotations

import math

__all__ = ["CosineDecay", "ExponentialDecay", "LinearWarmup", "StepDecay"]


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

    ``then`` is a schedule or a constant learning rate.

    Examples
    --------
    >>> from s4tf.optimizers.schedules import LinearWarmup
    >>> [LinearWarmup(1.0, warmup_steps=4)(s) for s in (1, 2, 4, 9)]
    [0.25, 0.5, 1.0, 1.0]
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
