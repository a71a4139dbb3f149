"""The training loop (``s4tf.TrainingLoop``), its callbacks and running metrics.

Examples
--------
>>> import s4tf
>>> s4tf.TrainingLoop is s4tf.training_loop.TrainingLoop
True
"""

from . import callbacks
from .callbacks import (
    Callback,
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    NonFiniteLossError,
    TerminateOnNaN,
)
from .loop import TrainingLoop
from .metrics import Accuracy, Mean, Metric, make_metric

__all__ = [
    "Accuracy", "CSVLogger", "Callback", "EarlyStopping", "LearningRateScheduler", "Mean",
    "Metric", "ModelCheckpoint", "NonFiniteLossError", "TerminateOnNaN", "TrainingLoop",
    "callbacks", "make_metric",
]
