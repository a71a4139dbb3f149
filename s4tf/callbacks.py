"""Training-loop callbacks: ``from s4tf.callbacks import EarlyStopping`` works.

The callbacks live in :mod:`s4tf.training_loop.callbacks`; this module is
their public address, so both ``s4tf.callbacks.EarlyStopping`` and the
``from`` import read the same classes. See that module for the events.

Examples
--------
>>> from s4tf.callbacks import EarlyStopping
>>> import s4tf
>>> EarlyStopping is s4tf.training_loop.callbacks.EarlyStopping
True
"""

from .training_loop.callbacks import (
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

__all__ = [
    "CSVLogger", "Callback", "EarlyStopping", "ExponentialMovingAverage",
    "LearningRateScheduler", "ModelCheckpoint", "NonFiniteLossError", "ReduceLROnPlateau",
    "TensorBoard", "TerminateOnNaN",
]
