"""AdaMax: Adam with the infinity norm (S4TF's rule)."""

from __future__ import annotations

import numpy as np

from ..precision import representable_epsilon
from .blocks import elementwise
from .hyperparameters import hyperparameter, non_negative, unit_interval
from .optimizer import Optimizer

__all__ = ["AdaMax"]


class AdaMax(Optimizer):
    """AdaMax, as Swift for TensorFlow's.

    ``lr_t = learning_rate / (1 + decay * t)``, ``step_size = lr_t / (1 - beta1**t)``;
    ``first = beta1 * first + (1 - beta1) * grad``;
    ``infinity_norm = max(beta2 * infinity_norm, |grad|)``;
    ``param -= step_size * first / (infinity_norm + epsilon)``.

    Parameters
    ----------
    model : Differentiable
    learning_rate, beta1, beta2, epsilon, decay : float
        Defaults ``0.002``, ``0.9``, ``0.999``, ``1e-8``, ``0``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.AdaMax([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.9
    """

    state_names = ("first_moments", "infinity_norm")
    learning_rate: float = hyperparameter(0.002, check=non_negative)
    beta1: float = hyperparameter(0.9, check=unit_interval)
    beta2: float = hyperparameter(0.999, check=unit_interval)
    epsilon: float = hyperparameter(1e-8)
    decay: float = hyperparameter(0.0, check=non_negative)

    def step_constants(self, step: int) -> dict:
        lr = self.learning_rate / (1 + self.decay * step)
        return {"step_size": lr / (1 - self.beta1**step)}

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        first, norm = state["first_moments"], state["infinity_norm"]
        scratch = np.multiply(grad, 1 - self.beta1, out=np.empty_like(param))
        first *= self.beta1
        first += scratch
        norm *= self.beta2
        np.abs(grad, out=scratch)
        np.maximum(norm, scratch, out=norm)
        np.add(norm, representable_epsilon(self.epsilon, param.dtype), out=scratch)
        np.divide(first, scratch, out=scratch)
        scratch *= constants["step_size"]
        param -= scratch
