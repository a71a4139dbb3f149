"""Stochastic gradient descent with momentum, Nesterov momentum and decay (S4TF's SGD)."""

from __future__ import annotations

import numpy as np

from .blocks import elementwise
from .hyperparameters import flag, hyperparameter, non_negative
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, as Swift for TensorFlow's ``SGD``.

    At step ``t`` (from 1): ``lr_t = learning_rate / (1 + decay * t)``,
    ``velocity = momentum * velocity - lr_t * grad``, and the parameter moves by
    ``velocity`` (or by ``momentum * velocity - lr_t * grad`` with ``nesterov``).

    Parameters
    ----------
    model : Differentiable
        The model whose structure the optimizer is made for.
    learning_rate, momentum, decay : float
        Defaults ``0.01``, ``0``, ``0``.
    nesterov : bool
        Nesterov momentum (default ``False``).

    Examples
    --------
    >>> import s4tf
    >>> opt = s4tf.optimizers.SGD([s4tf.ones([2])], learning_rate=0.5, momentum=0.9)
    >>> opt.update([s4tf.ones([2])], [s4tf.ones([2])], consume=False)[0].tolist()
    [0.5, 0.5]
    """

    learning_rate: float = hyperparameter(0.01, check=non_negative)
    momentum: float = hyperparameter(0.0, check=non_negative)
    nesterov: bool = flag(False)
    decay: float = hyperparameter(0.0, check=non_negative)

    def step_constants(self, step: int) -> dict:
        return {"lr": self.learning_rate / (1 + self.decay * step), "momentum": self.momentum}

    @property
    def state_names(self) -> tuple[str, ...]:
        # Without momentum the velocity is just -lr * grad: keeping it would hold a
        # second model-sized buffer for nothing (an update holds one copy of the model, never two).
        return ("velocity",) if self.momentum else ()

    @elementwise
    def update_parameter(self, param, grad, state, constants) -> None:
        lr, momentum = constants["lr"], constants["momentum"]
        scaled_grad = np.multiply(grad, lr, out=np.empty_like(param))  # the one temporary
        if "velocity" not in state:
            param -= scaled_grad
            return
        velocity = state["velocity"]
        velocity *= momentum
        velocity -= scaled_grad
        if self.nesterov:
            param -= scaled_grad
            np.multiply(velocity, momentum, out=scaled_grad)
            param += scaled_grad
        else:
            param += velocity
