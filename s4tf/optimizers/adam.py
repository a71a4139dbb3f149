"""Adam, AMSGrad and AdamW (S4TF's Adam: epsilon added outside the bias correction)."""

from __future__ import annotations

import math

import numpy as np

from ..precision import representable_epsilon
from .blocks import elementwise
from .hyperparameters import hyperparameter, non_negative, unit_interval
from .optimizer import Optimizer

__all__ = ["AMSGrad", "Adam", "AdamW"]


def _update_moments(grad, state, beta1, beta2, scratch) -> None:
    """first = b1 first + (1-b1) g; second = b2 second + (1-b2) g**2, using one scratch buffer."""
    first, second = state["first_moments"], state["second_moments"]
    np.multiply(grad, 1 - beta1, out=scratch)
    first *= beta1
    first += scratch
    np.multiply(grad, grad, out=scratch)
    scratch *= 1 - beta2
    second *= beta2
    second += scratch


class Adam(Optimizer):
    """Adam, as Swift for TensorFlow's.

    ``lr_t = learning_rate / (1 + decay * t)``;
    ``step_size = lr_t * sqrt(1 - beta2**t) / (1 - beta1**t)``; the moments are
    running averages of ``grad`` and ``grad**2``;
    ``param -= step_size * first / (sqrt(second) + epsilon)`` (epsilon outside
    the bias correction, as in S4TF).

    Parameters
    ----------
    model : Differentiable
    learning_rate, beta1, beta2, epsilon, decay : float
        Defaults ``1e-3``, ``0.9``, ``0.999``, ``1e-8``, ``0``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.Adam([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.9
    """

    state_names = ("first_moments", "second_moments")
    learning_rate: float = hyperparameter(1e-3, check=non_negative)
    beta1: float = hyperparameter(0.9, check=unit_interval)
    beta2: float = hyperparameter(0.999, check=unit_interval)
    epsilon: float = hyperparameter(1e-8)
    decay: float = hyperparameter(0.0, check=non_negative)

    def step_constants(self, step: int) -> dict:
        lr = self.learning_rate / (1 + self.decay * step)
        step_size = lr * math.sqrt(1 - self.beta2**step) / (1 - self.beta1**step)
        return {"lr": lr, "step_size": step_size}

    def _denominator_source(self, state, scratch):
        return state["second_moments"]

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        scratch = np.empty_like(param)
        _update_moments(grad, state, self.beta1, self.beta2, scratch)
        np.sqrt(self._denominator_source(state, scratch), out=scratch)
        scratch += representable_epsilon(self.epsilon, param.dtype)
        np.divide(state["first_moments"], scratch, out=scratch)
        scratch *= constants["step_size"]
        param -= scratch


class AMSGrad(Adam):
    """AMSGrad, as Swift for TensorFlow's: Adam dividing by the running maximum of ``second``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.AMSGrad([1.0], learning_rate=0.1)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.9
    """

    state_names = ("first_moments", "second_moments", "second_moments_max")

    def _denominator_source(self, state, scratch):
        np.maximum(state["second_moments_max"], state["second_moments"],
                   out=state["second_moments_max"])
        return state["second_moments_max"]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter).

    Before the Adam step, ``param -= lr_t * weight_decay * param``, so the decay
    does not pass through the moments.

    Parameters
    ----------
    model : Differentiable
    learning_rate, beta1, beta2, epsilon, decay : float
        As :class:`Adam`.
    weight_decay : float
        Default ``0.01``.

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.AdamW([1.0], learning_rate=0.1, weight_decay=0.5)
    >>> round(opt.update([1.0], [2.0])[0], 4)
    0.85
    """

    weight_decay: float = hyperparameter(0.01, check=non_negative)

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        param *= 1 - constants["lr"] * self.weight_decay
        super().update_parameter(param, grad, state, constants)
