"""The learning phase: whether layers run as in training or as in inference.

Dropout and its variants perturb their input and BatchNorm uses (and updates)
batch statistics only in the training phase, as S4TF's ``Context.local.
learningPhase``. The phase is per thread and defaults to inference, so a model
called outside a training loop is deterministic.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["current_learning_phase", "inference", "learning_phase", "training"]

_PHASES = ("training", "inference")
_local = threading.local()


def current_learning_phase() -> str:
    """The phase layers see now: ``"training"`` or ``"inference"`` (the default).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.current_learning_phase()
    'inference'
    >>> with s4tf.training():
    ...     s4tf.current_learning_phase()
    'training'
    """
    return getattr(_local, "phase", "inference")


def is_training() -> bool:
    """Whether the current phase is ``"training"`` (what Dropout and BatchNorm ask)."""
    return getattr(_local, "phase", "inference") == "training"


@contextlib.contextmanager
def learning_phase(phase: str):
    """Run the ``with`` block in ``phase`` (``"training"`` or ``"inference"``).

    The previous phase is restored on exit, also when the block raises.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.learning_phase("training"):
    ...     s4tf.current_learning_phase()
    'training'
    >>> s4tf.current_learning_phase()
    'inference'
    """
    if phase not in _PHASES:
        raise ValueError(
            f"learning_phase: unknown phase {phase!r}; expected 'training' or 'inference' "
            "(or use the s4tf.training() / s4tf.inference() context managers)."
        )
    previous = current_learning_phase()
    _local.phase = phase
    try:
        yield phase
    finally:
        _local.phase = previous


def training():
    """Context manager for the training phase; ``learning_phase("training")``.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.training():
    ...     s4tf.current_learning_phase()
    'training'
    """
    return learning_phase("training")


def inference():
    """Context manager for the inference phase; ``learning_phase("inference")``.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.training(), s4tf.inference():
    ...     s4tf.current_learning_phase()
    'inference'
    """
    return learning_phase("inference")
