"""Which names on the running stack refer to a value (for interpreters that borrow).

From CPython 3.14 on, loading a local variable for a call may push a *borrowed*
reference (``LOAD_FAST_BORROW``) that the reference count does not show, and
the callee's parameter keeps it borrowed. A count then no longer tells
``model = opt.update(model, g)`` from a helper ``step(model)`` that calls
``opt.update(m, g)`` while its caller still names ``model``: both show one
reference. What a borrowed reference is borrowed from is always a name in a
frame that is still running, so walking the frames above the entry point and
counting the names bound to the value recovers what the count hides.

Only used where frame locals are read without side effects (3.13+, PEP 667):
on older interpreters reading ``f_locals`` of a function snapshots its locals
into a dict that holds references of its own.
"""

from __future__ import annotations

import inspect
import sys

__all__ = ["holder_kind", "proxies_are_safe"]


def proxies_are_safe() -> bool:
    """Whether ``frame.f_locals`` is a view with no side effects (PEP 667, 3.13+)."""
    return sys.version_info >= (3, 13)


def holder_kind(value, caller) -> str:
    """How the running frames from ``caller`` up name ``value``.

    Returns ``"local"`` (one name, a local variable of ``caller``),
    ``"namespace"`` (one name in ``caller``'s module or class namespace, as in
    a notebook cell), ``"none"`` (no name: an attribute, an item, a temporary)
    or ``"several"`` (more than one name, or one in a frame further up).

    Examples
    --------
    >>> import sys
    >>> from s4tf.cow.frames import holder_kind
    >>> def f():
    ...     value = object()
    ...     return holder_kind(value, sys._getframe())
    >>> f()
    'local'
    """
    names = 0
    seen: set[int] = set()
    frame = caller
    while frame is not None:
        namespace = frame.f_locals
        # Frames of one module share its globals: read each namespace once.
        if type(namespace) is dict:
            if id(namespace) in seen:
                frame = frame.f_back
                continue
            seen.add(id(namespace))
        for item in namespace.values():
            if item is value:
                names += 1
                if names > 1 or frame is not caller:
                    return "several"
        frame = frame.f_back
    if names == 0:
        return "none"
    return "local" if caller.f_code.co_flags & inspect.CO_OPTIMIZED else "namespace"
