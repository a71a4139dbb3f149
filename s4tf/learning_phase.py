"""The learning phase: whether layers run as in training or as in inference.

Dropout and its variants perturb their input and BatchNorm uses (and updates)
batch statistics only in the training phase, as S4TF's ``Context.local.
learningPhase``. The phase is per thread and defaults to inference, so a model
called outside a training loop is deterministic.

Differentiating such a layer in the *default* inference phase is almost always
a training step written without ``with s4tf.training():``, so it warns once
(:class:`InferencePhaseWarning`); an explicit ``with s4tf.inference():`` says
inference is meant and stays silent. The phase is therefore stored only when a
``with`` block sets it: absent means the default.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

__all__ = [
    "InferencePhaseWarning", "current_learning_phase", "inference", "learning_phase", "training",
]

_PHASES = ("training", "inference")
_local = threading.local()
_warned_sites: set[tuple[str, str]] = set()  # (layer class, user's line)


class InferencePhaseWarning(UserWarning):
    """BatchNorm, Dropout or StochasticDepth differentiated in the default inference phase.

    Issued once per layer class and line of user code. Wrap a training step in
    ``with s4tf.training():``; wrap intended inference in
    ``with s4tf.inference():`` to silence it.

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.InferencePhaseWarning)  # make it fatal
    """


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


def layer_is_training(layer, *values) -> bool:
    """Whether ``layer`` runs in training mode; warns if it is differentiated by default.

    What BatchNorm and the Dropout family ask. ``values`` are the call's input
    and the layer's differentiable parameters: if one of them is being
    differentiated while the phase is the default inference (no ``with``
    block chose it), an :class:`InferencePhaseWarning` names the fix, once
    per layer class and line of user code.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.learning_phase import layer_is_training
    >>> layer = s4tf.layers.Dropout(0.5)
    >>> with s4tf.training():
    ...     layer_is_training(layer, s4tf.ones([2]))
    True
    """
    phase = getattr(_local, "phase", None)
    if phase == "training":
        return True
    if phase is None:
        from .ops.tracer import Tracer

        if any(isinstance(v, Tracer) for v in values):
            _warn_differentiated_in_inference(layer)
    return False


def _warn_differentiated_in_inference(layer) -> None:
    from .user_frames import user_location, user_stacklevel

    site = user_location()
    name = type(layer).__name__
    if (name, site) in _warned_sites:
        return
    _warned_sites.add((name, site))
    effect = ("uses its running statistics and does not update them"
              if hasattr(layer, "running_mean") else "passes its input through unchanged")
    warnings.warn(
        f"{name} is being differentiated in the inference phase, the default outside "
        f"s4tf.TrainingLoop, so it {effect} (at {site}). For a training step, run it inside "
        "`with s4tf.training():`; if inference is intended, say so with "
        "`with s4tf.inference():`, which silences this warning.",
        InferencePhaseWarning,
        stacklevel=user_stacklevel(),
    )


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
    previous = getattr(_local, "phase", None)  # None: the default, not chosen by a block
    _local.phase = phase
    try:
        yield phase
    finally:
        if previous is None:
            del _local.phase
        else:
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
