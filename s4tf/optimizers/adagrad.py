"""AdaGrad (S4TF's rule: a running sum of squared gradients divides the step)."""

from __future__ import annotations

import numpy as np

from ..precision import representable_epsilon
from .blocks import elementwise
from .hyperparameters import hyperparameter, non_negative
from .optimizer import Optimizer

__all__ = ["AdaGrad"]


class AdaGrad(Optimizer):
    """AdaGrad, as Swift for TensorFlow's.

    ``accumulator += grad**2`` (starting at ``initial_accumulator_value``),
    ``param -= learning_rate * grad / (sqrt(accumulator) + epsilon)``.

    Parameters
    ----------
    model : Differentiable
    learning_rate, initial_accumulator_value, epsilon : float
        Defaults ``1e-3``, ``0.1``, ``1e-8``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.AdaGrad([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.9012
    """

    state_names = ("accumulator",)
    learning_rate: float = hyperparameter(1e-3, check=non_negative)
    initial_accumulator_value: float = hyperparameter(0.1, check=non_negative)
    epsilon: float = hyperparameter(1e-8)

    def initial_state(self, name, shape, dtype):
        return np.full(shape, self.initial_accumulator_value, dtype)

    def step_constants(self, step: int) -> dict:
        return {"lr": self.learning_rate}

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        accumulator = state["accumulator"]
        tmp = np.multiply(grad, grad, out=np.empty_like(param))
        accumulator += tmp
        np.sqrt(accumulator, out=tmp)
        tmp += representable_epsilon(self.epsilon, param.dtype)
        np.divide(grad, tmp, out=tmp)
        tmp *= constants["lr"]
        param -= tmp
