"""Optimizers: ``model = opt.update(model, grads)``, in place when nobody else can see it.

Swift for TensorFlow's optimizers with its update rules and defaults, plus
AdamW; learning-rate ``schedules`` and gradient clipping. See
:class:`Optimizer` for how the copy-on-write update works and how to write a
new rule.
"""

from . import schedules
from .adadelta import AdaDelta
from .adagrad import AdaGrad
from .adam import Adam, AdamW, AMSGrad
from .adamax import AdaMax
from .clipping import clip_by_global_norm, global_norm
from .copied_update import CopiedUpdateWarning
from .loss_scale import LossScale
from .optax_adapter import Optax
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSProp
from .sgd import SGD

__all__ = [
    "AMSGrad", "AdaDelta", "AdaGrad", "AdaMax", "Adam", "AdamW", "CopiedUpdateWarning",
    "LossScale", "Optax", "Optimizer", "RAdam",
    "RMSProp", "SGD", "clip_by_global_norm", "global_norm", "schedules",
]
