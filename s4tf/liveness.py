"""Liveness from CPython reference counts, calibrated for the running interpreter.

Whether nothing but its owner refers to an object is read from
``sys.getrefcount``, but the count an owner alone leaves depends on the
interpreter (stack references, argument passing, borrowed references from
CPython 3.14 on) and on the code that measures it. So nothing here is
hard-coded: every place that reads a count (copy-on-write's entry points and
walk, the lazy graph's liveness and donation, a captured step's slot
donation) measures, at import, what its own code sees for a private object
held once, and trusts the count only if one more holder shows as exactly one
more. This module is that measuring, in one place:

- :func:`one_holder_count`: the count a measuring function sees for an object
  held once (one more holder must show as one more), for checks of one kind of
  object (the lazy graph's arrays, a captured step's slots);
- :func:`agreed_counts`: the counts a walk saw per kind of object, kept only
  where every probe agreed (copy-on-write's inner objects);
- :func:`calibrate_root`: the counts an entry point (``Optimizer.update``,
  ``moved``) sees for a root its caller alone holds, per holder kind, from
  probe callers run in several call shapes;
- :func:`holder_kind`: which running frames name a value, where borrowed
  references hide holders from the count (3.14+).

:func:`counts_trusted` says whether counts mean anything here at all (CPython
with the GIL).
"""

from __future__ import annotations

import inspect
import sys
import sysconfig

__all__ = [
    "ProbeDone", "RootBaseline", "agreed_counts", "calibrate_root", "counts_trusted",
    "holder_kind", "one_holder_count", "probing", "proxies_are_safe", "record_probe",
]

# Counts collected while a probe caller runs an entry point; None otherwise.
probing: list | None = None


class ProbeDone(Exception):
    """Raised by an entry point right after it measured a probe's count."""


def counts_trusted() -> bool:
    """Whether reference counts can be trusted here: CPython with the GIL.

    Examples
    --------
    >>> from s4tf import liveness
    >>> isinstance(liveness.counts_trusted(), bool)
    True
    """
    if sys.implementation.name != "cpython":
        return False
    # Free-threaded builds use biased, deferred reference counts that do not
    # show a single owner the same way; copying is always correct.
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return False
    gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return gil_enabled is None or bool(gil_enabled())


def one_holder_count(measure):
    """The count ``measure(0)`` reports for a fresh object held once; ``None`` if untrusted.

    ``measure(extra)`` makes a private object, holds it once as the real code's
    owner does plus ``extra`` more times, and returns the count the real
    check's code reads for it. The count is trusted only if one more holder
    shows as exactly one more (else the caller treats every object as shared).

    Examples
    --------
    >>> import sys
    >>> from s4tf import liveness
    >>> def measure(extra):
    ...     owner = [object()]
    ...     aliases = owner * extra
    ...     return sys.getrefcount(owner[0])
    >>> liveness.one_holder_count(measure) == measure(0)
    True
    >>> liveness.one_holder_count(lambda extra: 2) is None   # blind to holders
    True
    """
    once = measure(0)
    return once if measure(1) == once + 1 else None


def agreed_counts(seen: dict) -> dict:
    """``{key: count}`` for each key of ``seen`` (``key -> counts``) whose counts all agree.

    A key whose probes disagree is left out: its objects count as shared.

    Examples
    --------
    >>> from s4tf import liveness
    >>> liveness.agreed_counts({("node", "tensor"): [2, 2], ("list", "dict"): [2, 3]})
    {('node', 'tensor'): 2}
    """
    return {key: counts[0] for key, counts in seen.items() if min(counts) == max(counts)}


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
        (:func:`holder_kind`), since the count alone cannot tell a helper
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
            holder_kind(value, caller))
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
    kind = holder_kind(value, caller) if proxies_are_safe() else None
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
    >>> from s4tf import liveness
    >>> def entry(value):
    ...     count = sys.getrefcount(value)
    ...     if liveness.probing is not None:
    ...         liveness.record_probe(value, count, sys._getframe(1))
    >>> baseline = liveness.calibrate_root(entry, make=object, calls=["entry({value})"])
    >>> baseline is not None
    True
    """
    if not counts_trusted():
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
    if borrowing and not proxies_are_safe():
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


# Which frames name a value (for interpreters that borrow references, 3.14+). Loading a
# local for a call may push a *borrowed* reference (LOAD_FAST_BORROW) that the count does
# not show, and the callee's parameter keeps it borrowed; what it is borrowed from is always
# a name in a frame still running, so counting those names recovers what the count hides.

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
    >>> from s4tf.liveness import holder_kind
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
