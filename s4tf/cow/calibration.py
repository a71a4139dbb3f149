"""Calibrating reference counts for the running interpreter.

Whether the caller holds the only reference to a model is read from CPython's
reference count, but the count a function sees for its argument depends on
the interpreter version (stack references, argument passing). So nothing here
is hard-coded: at import, probe callers that hold exactly one reference call
each real entry point (``Optimizer.update``, ``moved``, ``Differentiable.moved``)
in several call shapes and with each kind of holder (a function's local, a
module-level name, an attribute), and the counts seen become its
:class:`RootBaseline`. One more holder must show as exactly one more, and a
helper frame between the caller and the entry point must be seen, or in-place
updates stay off for that entry point. Inner objects (fields, list items,
tensors, storages) are calibrated the same way, by walking a private model of
every container shape through the same code the real update runs.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from . import frames

__all__ = [
    "ProbeDone", "RootBaseline", "calibrate_root", "in_place_supported", "mode", "probing",
    "record_probe",
]

MODES = ("auto", "always-copy")

# Counts collected while a probe caller runs an entry point; None otherwise.
probing: list | None = None


class ProbeDone(Exception):
    """Raised by an entry point right after it measured a probe's count."""


def mode() -> str:
    """``S4TF_COPY_ON_WRITE``: ``"auto"`` (default) or ``"always-copy"``."""
    value = os.environ.get("S4TF_COPY_ON_WRITE", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(
            f"S4TF_COPY_ON_WRITE={value!r} is not understood; use 'auto' (update in place "
            "when nothing else refers to the model) or 'always-copy'."
        )
    return value


def in_place_supported() -> bool:
    """Whether reference counts can be trusted here: CPython with the GIL."""
    if sys.implementation.name != "cpython":
        return False
    # Free-threaded builds use biased, deferred reference counts that do not
    # show a single owner the same way; copying is always correct.
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return gil_enabled is None or bool(gil_enabled())


class RootBaseline:
    """The counts an entry point sees for a root whose caller alone holds it.

    Attributes
    ----------
    local, namespace, other : int
        The count when the one holder is a local variable of the caller, a
        name in a module or class namespace (a notebook cell), or no name at
        all (an attribute, a container item, a temporary).
    borrowing : bool
        Whether this interpreter passes borrowed references to locals
        (CPython 3.14+): then the holder's kind is read off the running frames
        (:mod:`s4tf.cow.frames`), since the count alone cannot tell a helper
        frame naming the model from the caller naming it.
    """

    __slots__ = ("local", "namespace", "other", "borrowing")

    def __init__(self, local: int, namespace: int, other: int, borrowing: bool) -> None:
        self.local, self.namespace, self.other, self.borrowing = local, namespace, other, borrowing

    def allows(self, value, count: int, caller) -> bool:
        """Whether ``count`` proves that ``caller``'s one reference is the only one."""
        if not self.borrowing:
            return count <= min(self.local, self.namespace, self.other)
        limit = {"local": self.local, "namespace": self.namespace, "none": self.other}.get(
            frames.holder_kind(value, caller))
        return limit is not None and count <= limit

    def __repr__(self) -> str:
        return (f"RootBaseline(local={self.local}, namespace={self.namespace}, "
                f"other={self.other}, borrowing={self.borrowing})")


class _Holder:
    """An object whose attribute holds the probe value (``self.model = ...``)."""


# Probe bodies by the holder they model. Each holds exactly one reference to the
# probe value (the "alias" ones one more); {call} is the entry point's call with
# {value} standing for the expression that passes the value.
_SHAPES = {
    "local": ("value = make()\n{call:value}", "value = make()\nvalue = {call:value}"),
    "other": ("holder = Holder()\nholder.value = make()\nholder.value = {call:holder.value}",
              "{call:make()}"),
    "alias": ("value = make()\nalias = value\n{call:value}",),
    "other-alias": ("holder = Holder()\nholder.value = make()\nkeep = [holder.value]\n"
                    "{call:holder.value}",),
    "helper": ("def helper(model):\n    {call:model}\nvalue = make()\nhelper(value)",),
}


def _source(body: str, call: str) -> str:
    out, rest = [], body
    while "{call:" in rest:
        head, _, tail = rest.partition("{call:")
        expression, _, rest = tail.partition("}")
        out.append(head + call.replace("{value}", expression))
    return "".join(out) + rest


def _run_probe(code: str, entry, make, args, in_function: bool):
    global probing
    probing = []
    names = {"entry": entry, "make": make, "args": args, "Holder": _Holder}
    try:
        if in_function:
            body = "\n".join("    " + line for line in code.splitlines())
            exec(f"def probe(entry, make, args, Holder):\n{body}\n", names)
            names["probe"](entry, make, args, _Holder)
        else:
            # A module-level (notebook) binding: names live in a globals dict.
            exec(code, names)
    except ProbeDone:
        pass
    finally:
        seen, probing = probing, None
    return seen[0] if seen else None


def record_probe(value, count: int, caller) -> None:
    """Record what an entry point measured for a probe, and stop it (calibration only).

    ``caller`` is the frame that called the entry point.
    """
    kind = frames.holder_kind(value, caller) if frames.proxies_are_safe() else None
    probing.append((count, kind))
    raise ProbeDone


def calibrate_root(entry, make, calls, args=()) -> RootBaseline | None:
    """The root counts ``entry`` sees when its caller holds the only reference.

    ``calls`` are source templates of the entry point's call, with ``{value}``
    for the value and ``args[i]`` for the other arguments (e.g.
    ``"entry({value}, args[0])"`` or ``"{value}.moved(along=args[0])"``).
    ``entry`` must measure ``sys.getrefcount(value)`` first and call
    :func:`record_probe` when :data:`probing` is set. Returns ``None`` (always
    copy) unless every probe behaves as expected: one more holder shows as
    exactly one more reference, and a helper frame between the caller and the
    entry point is seen.

    Examples
    --------
    >>> import sys
    >>> from s4tf.cow import calibration
    >>> def entry(value):
    ...     count = sys.getrefcount(value)
    ...     if calibration.probing is not None:
    ...         calibration.record_probe(value, count, sys._getframe(1))
    >>> baseline = calibration.calibrate_root(entry, make=object, calls=["entry({value})"])
    >>> baseline is not None
    True
    """
    if not in_place_supported():
        return None
    seen: dict[tuple[str, bool], list] = {}
    for shape, bodies in _SHAPES.items():
        for body in bodies:
            for call in calls:
                for in_function in (True, False):
                    found = _run_probe(_source(body, call), entry, make, args, in_function)
                    if found is None:
                        return None
                    seen.setdefault((shape, in_function), []).append(found)
    return _baseline(seen)


def _baseline(seen) -> RootBaseline | None:
    def counts(shape, in_function):
        return [count for count, _ in seen[(shape, in_function)]]

    local, namespace = max(counts("local", True)), max(counts("local", False))
    other = max(counts("other", True) + counts("other", False))
    if min(counts("local", True)) != local or min(counts("local", False)) != namespace:
        return None  # one holder shows different counts in different call shapes
    borrowing = local < namespace
    if borrowing and not frames.proxies_are_safe():
        return None
    expected = {("alias", True): local + 1, ("alias", False): namespace + 1,
                ("other-alias", True): other + 1, ("other-alias", False): other + 1}
    if any(set(counts(*key)) != {want} for key, want in expected.items()):
        return None
    baseline = RootBaseline(local, namespace, other, borrowing)
    if borrowing:
        kinds = {("local", True): "local", ("local", False): "namespace",
                 ("other", True): "none", ("other", False): "none",
                 ("helper", True): "several", ("helper", False): "several"}
        if any({kind for _, kind in seen[key]} != {want} for key, want in kinds.items()):
            return None
    elif min(counts("helper", True)) <= min(local, namespace, other):
        return None  # a helper frame between caller and entry point must show
    return baseline
