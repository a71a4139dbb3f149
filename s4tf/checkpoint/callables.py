"""The functions a checkpoint may name: s4tf's activations and the ones a user registers.

A layer's ``activation`` (or a ``layers.Function``'s ``fn``) is saved by name,
e.g. ``"s4tf.relu"``. Loading looks the name up here and nowhere else, so a
file can choose among these functions but never make s4tf import, find or run
anything else, not even another s4tf function (``s4tf.save``, a data set).
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import CheckpointError

__all__ = ["callable_name", "register_callable", "registered_callable"]

_registered: dict[str, Callable] = {}


def register_callable(name: str, fn: Callable) -> Callable:
    """Let checkpoints refer to ``fn`` (e.g. a custom activation) by ``name``.

    s4tf's activations (``s4tf.relu``, ``s4tf.gelu``, ..., as listed in
    :mod:`s4tf.activations`) are known already. Any other function a model
    holds must be registered, under a name of your choice, before the model is
    saved (so that its name is recorded) and before it is loaded without
    ``like=`` (so that the name is found). Loading never looks further than
    these names.

    Parameters
    ----------
    name : str
        The name recorded in files, e.g. ``"my_project.swish_beta"``.
    fn : callable
        The function.

    Returns
    -------
    callable
        ``fn`` itself.

    Examples
    --------
    >>> import s4tf
    >>> def swish_beta(x):
    ...     return x * s4tf.sigmoid(2.0 * x)
    >>> _ = s4tf.checkpoint.register_callable("my.swish_beta", swish_beta)
    >>> model = s4tf.layers.Dense(2, 1, activation=swish_beta)
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_callable needs a non-empty string name; received {name!r}.")
    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"register_callable({name!r}, ...) needs a function; received {fn!r}.")
    _registered[name] = fn
    return fn


def _known() -> dict[str, Callable]:
    from .. import activations

    # The names come from this list, never from a file; registered names win so
    # that a user's choice is what loads.
    known = {f"s4tf.{attr}": getattr(activations, attr) for attr in activations.__all__}
    known.update(_registered)
    return known


def callable_name(fn) -> str | None:
    """The name under which ``fn`` is saved, or ``None`` when it has none."""
    for name, candidate in _known().items():
        if candidate is fn:
            return name
    return None


def registered_callable(name, where: str) -> Callable:
    """The function a checkpoint names as ``name`` at the field ``where``."""
    known = _known()
    if not isinstance(name, str) or name not in known:
        raise CheckpointError(
            f"the checkpoint's field {where!r} names the function {name!r}, which is neither "
            "an s4tf activation nor registered with s4tf.checkpoint.register_callable "
            "(s4tf never imports or runs other code named in a file). Register it, or pass "
            "like=model to s4tf.load."
        )
    return known[name]
