"""Checkpoints: ``s4tf.save`` / ``s4tf.load`` for models and resumable training states.

Files are safetensors: raw tensors under dotted field paths plus a JSON
description of the model in the metadata. Reading one never executes code from
it: no pickle, no imports of module names it contains.
"""

from .callables import register_callable
from .errors import CheckpointError
from .files import load, save
from .structure import find_class
from .training_state import TrainingState, load_training_state, save_training_state

__all__ = [
    "CheckpointError", "TrainingState", "find_class", "load", "load_training_state",
    "register_callable", "save", "save_training_state",
]
