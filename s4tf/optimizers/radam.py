"""RAdam: Adam with a rectified adaptive learning rate (S4TF's rule)."""

from __future__ import annotations

import math

import numpy as np

from ..precision import representable_epsilon
from .adam import Adam, _update_moments
from .blocks import elementwise

__all__ = ["RAdam"]


class RAdam(Adam):
    """Rectified Adam, as Swift for TensorFlow's.

    With ``rho_inf = 2 / (1 - beta2) - 1`` and
    ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``: when ``rho_t >= 5``,
    ``param -= r_t * lr_t / (1 - beta1**t) * sqrt(1 - beta2**t) * first / (sqrt(second) + epsilon)``
    with ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``;
    otherwise ``param -= lr_t / (1 - beta1**t) * first`` (un-adapted momentum).
    ``lr_t = learning_rate / (1 + decay * t)``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.RAdam([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.8
    """

    def step_constants(self, step: int) -> dict:
        lr = self.learning_rate / (1 + self.decay * step)
        beta1_power, beta2_power = self.beta1**step, self.beta2**step
        rho_inf = 2 / (1 - self.beta2) - 1
        rho_t = rho_inf - 2 * step * beta2_power / (1 - beta2_power)
        if rho_t >= 5:
            rectifier = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                  / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            scale = rectifier * lr / (1 - beta1_power) * math.sqrt(1 - beta2_power)
            return {"rectified": True, "step_size": scale}
        return {"rectified": False, "step_size": lr / (1 - beta1_power)}

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        scratch = np.empty_like(param)
        _update_moments(grad, state, self.beta1, self.beta2, scratch)
        if constants["rectified"]:
            np.sqrt(state["second_moments"], out=scratch)
            scratch += representable_epsilon(self.epsilon, param.dtype)
            np.divide(state["first_moments"], scratch, out=scratch)
        else:
            np.copyto(scratch, state["first_moments"])
        scratch *= constants["step_size"]
        param -= scratch
