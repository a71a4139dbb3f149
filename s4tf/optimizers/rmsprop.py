"""RMSProp (S4TF's rule: a running average of squared gradients divides the step)."""

from __future__ import annotations

import numpy as np

from ..precision import representable_epsilon
from .blocks import elementwise
from .hyperparameters import hyperparameter, non_negative
from .optimizer import Optimizer

__all__ = ["RMSProp"]


class RMSProp(Optimizer):
    """RMSProp, as Swift for TensorFlow's.

    ``lr_t = learning_rate / (1 + decay * t)``,
    ``alpha = rho * alpha + (1 - rho) * grad**2``,
    ``param -= lr_t * grad / (sqrt(alpha) + epsilon)``.

    Parameters
    ----------
    model : Differentiable
    learning_rate, rho, epsilon, decay : float
        Defaults ``1e-3``, ``0.9``, ``1e-8``, ``0``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.RMSProp([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.6838
    """

    state_names = ("alpha",)
    learning_rate: float = hyperparameter(1e-3, check=non_negative)
    rho: float = hyperparameter(0.9, check=non_negative)
    epsilon: float = hyperparameter(1e-8)
    decay: float = hyperparameter(0.0, check=non_negative)

    def step_constants(self, step: int) -> dict:
        return {"lr": self.learning_rate / (1 + self.decay * step)}

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        alpha = state["alpha"]
        tmp = np.multiply(grad, grad, out=np.empty_like(param))
        tmp *= 1 - self.rho
        alpha *= self.rho
        alpha += tmp
        np.sqrt(alpha, out=tmp)
        tmp += representable_epsilon(self.epsilon, param.dtype)
        np.divide(grad, tmp, out=tmp)
        tmp *= constants["lr"]
        param -= tmp
