"""The error of every checkpoint that cannot be read into the requested value."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read into the requested value.

    Raised by :func:`s4tf.load` and :func:`s4tf.load_training_state` for a file
    that is not an s4tf checkpoint, is damaged or edited, or does not fit the
    classes defined in the running program; the message says which field and
    what to do. It is a ``ValueError``.

    Examples
    --------
    >>> import s4tf
    >>> try:
    ...     s4tf.checkpoint.find_class("os.system")
    ... except s4tf.CheckpointError as error:
    ...     print(type(error).__name__)
    CheckpointError
    """
