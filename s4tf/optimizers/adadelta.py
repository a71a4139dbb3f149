"""AdaDelta (S4TF's rule: steps scaled by running averages of squared steps and gradients)."""

from __future__ import annotations

import numpy as np

from ..precision import representable_epsilon
from .blocks import elementwise
from .hyperparameters import hyperparameter, non_negative, unit_interval
from .optimizer import Optimizer

__all__ = ["AdaDelta"]


class AdaDelta(Optimizer):
    """AdaDelta, as Swift for TensorFlow's.

    ``lr_t = learning_rate / (1 + decay * t)``;
    ``average_squared = rho * average_squared + (1 - rho) * grad**2``;
    ``step = grad * sqrt(accumulated_delta + epsilon) / sqrt(average_squared + epsilon)``;
    ``param -= lr_t * step``;
    ``accumulated_delta = rho * accumulated_delta + (1 - rho) * step**2``.

    Parameters
    ----------
    model : Differentiable
    learning_rate, rho, epsilon, decay : float
        Defaults ``1``, ``0.95``, ``1e-6``, ``0``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.AdaDelta([1.0])
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.9955
    """

    state_names = ("average_squared", "accumulated_delta")
    learning_rate: float = hyperparameter(1.0, check=non_negative)
    rho: float = hyperparameter(0.95, check=unit_interval)
    epsilon: float = hyperparameter(1e-6, check=non_negative)
    decay: float = hyperparameter(0.0, check=non_negative)

    def step_constants(self, step: int) -> dict:
        return {"lr": self.learning_rate / (1 + self.decay * step)}

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        rho, eps = self.rho, representable_epsilon(self.epsilon, param.dtype)
        average, delta = state["average_squared"], state["accumulated_delta"]
        step = np.multiply(grad, grad, out=np.empty_like(param))
        step *= 1 - rho
        average *= rho
        average += step
        np.add(delta, eps, out=step)
        np.sqrt(step, out=step)
        step *= grad
        scratch = np.add(average, eps, out=np.empty_like(param))
        np.sqrt(scratch, out=scratch)
        step /= scratch
        np.multiply(step, constants["lr"], out=scratch)
        param -= scratch
        np.multiply(step, step, out=step)
        step *= 1 - rho
        delta *= rho
        delta += step
