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
    ExponentialMovingAverage,
    LearningRateScheduler,
    ModelCheckpoint,
    NonFiniteLossError,
    ReduceLROnPlateau,
    TensorBoard,
    TerminateOnNaN,
)
from .loop import TrainingLoop
from .metrics import Accuracy, Mean, Metric, Precision, Recall, make_metric

__all__ = [
    "Accuracy", "CSVLogger", "Callback", "EarlyStopping", "ExponentialMovingAverage",
    "LearningRateScheduler", "Mean", "Metric", "ModelCheckpoint", "NonFiniteLossError",
    "Precision", "Recall", "ReduceLROnPlateau", "TensorBoard", "TerminateOnNaN", "TrainingLoop",
    "callbacks", "make_metric",
]
