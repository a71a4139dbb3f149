"""The warning for an update that copies a model because its root cannot be consumed."""

from __future__ import annotations

import warnings

from .. import cow, liveness
from ..tensor import Tensor
from ..user_frames import user_location, user_stacklevel

__all__ = ["CopiedUpdateWarning", "warn_copied_root"]

_warned_sites: set[tuple[str, str]] = set()  # (optimizer class, user's line)


class CopiedUpdateWarning(UserWarning):
    """An update copied every parameter: the model's root is a list, tuple or dict.

    ``params = opt.update(params, grads)`` cannot consume a plain container, so
    it never writes the parameters in place and each step holds a second copy
    of them. Issued once per optimizer class and line of user code. Make the
    parameters fields of an :class:`s4tf.Differentiable` class to update them
    in place, or pass ``consume=False`` to say that copying is intended, which
    silences it.

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.optimizers.CopiedUpdateWarning)  # make it fatal
    """


def warn_copied_root(name: str, model, grads) -> None:
    """Warn, once per optimizer ``name`` and user line, that ``model``'s tensors were copied.

    ``model`` is the container an update with ``consume=True`` got as its root;
    ``grads`` its leaves' gradients. Nothing is said where every update copies
    anyway (``S4TF_COPY_ON_WRITE=always-copy``, an interpreter without reliable
    reference counts) or where there are only floats, which are never written in
    place.
    """
    if cow.mode() != "auto" or not liveness.counts_trusted():
        return
    if not any(isinstance(grad, Tensor) for grad in grads):
        return
    site = user_location()
    if (name, site) in _warned_sites:
        return
    _warned_sites.add((name, site))
    kind = type(model).__name__
    warnings.warn(
        f"{name}.update copied every parameter of a {kind} (at {site}): a plain {kind} cannot "
        "be consumed, so its tensors are never updated in place and each step holds a second "
        "copy of them. Make the parameters fields of an s4tf.Differentiable class (class "
        "Params(s4tf.Differentiable): w: s4tf.Tensor ...) to update them in place, or pass "
        "consume=False if copying is intended, which silences this warning.",
        CopiedUpdateWarning,
        stacklevel=user_stacklevel(),
    )
