"""The warning of a captured step that ran differently from its capture (``s4tf.xla.compile``)."""

from __future__ import annotations

__all__ = ["CaptureMismatchWarning"]


class CaptureMismatchWarning(UserWarning):
    """A captured step (:func:`s4tf.xla.compile`) ran differently from its capture, or keeps re-capturing.

    Raised as a warning when a verification run's trace differs from the
    captured one (Python took another path: the message names the ops,
    shapes or dtypes that changed), when a number the step feeds its program
    changed in a way the capture could not follow, or when the step keeps
    running its body instead of replaying.

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.xla.CaptureMismatchWarning)  # make it fatal
    """
