"""Calibrating reference counts for the running interpreter.

Whether the caller holds the only reference to a model is read from CPython's
reference count, but the count a function sees for its argument depends on
the interpreter version (stack references, argument passing). So nothing here
is hard-coded: at import, probe callers that hold exactly one reference call
the real entry point (``Optimizer.update``) in several call shapes, and the
smallest count seen becomes the baseline. One alias must show as exactly one
more, or in-place updates stay off. Inner objects (fields, list items,
tensors, storages) are calibrated the same way, by walking a private model of
every container shape through the same code the real update runs.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["ProbeDone", "calibrate_root", "in_place_supported", "mode", "probing", "record_probe"]

MODES = ("auto", "always-copy")

# Counts collected while a probe caller runs an entry point; None otherwise.
probing: list | None = None


class ProbeDone(Exception):
    """Raised by an entry point right after it measured a probe's count."""


def record_probe(count: int) -> None:
    """Record the root count an entry point measured and stop it (calibration only)."""
    probing.append(count)
    raise ProbeDone


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


_SHAPES = {
    # Each body holds exactly one reference to the probe value (plus, for
    # "alias", one more), and passes the other arguments without tuples or
    # dicts that would hold it too.
    "positional": "value = make()\nentry(value, {args})",
    "rebinding": "value = make()\nvalue = entry(value, {args})",
    "keyword": "value = make()\nentry({keyword}=value, {kwargs})",
    "alias": "value = make()\nalias = value\nentry(value, {args})",
}


def _probe_sources(n_args: int, keyword: str, arg_names) -> dict:
    args = ", ".join(f"args[{i}]" for i in range(n_args))
    kwargs = ", ".join(f"{name}=args[{i}]" for i, name in enumerate(arg_names))
    return {k: v.format(args=args, keyword=keyword, kwargs=kwargs) for k, v in _SHAPES.items()}


def _run_probe(code: str, entry, make, args, in_function: bool) -> int | None:
    global probing
    probing = []
    try:
        if in_function:
            namespace: dict = {}
            body = "\n".join("    " + line for line in code.splitlines())
            exec(f"def probe(entry, make, args):\n{body}\n", namespace)
            namespace["probe"](entry, make, args)
        else:
            # A module-level (notebook) binding: names live in a globals dict.
            exec(code, {"entry": entry, "make": make, "args": args})
    except ProbeDone:
        pass
    finally:
        seen, probing = probing, None
    return seen[0] if seen else None


def calibrate_root(entry, make, args=(), keyword="value", arg_names=()) -> int | None:
    """The root count ``entry`` sees when its caller holds the only reference.

    ``entry(value, *args)`` must measure ``sys.getrefcount(value)`` first and
    call :func:`record_probe` when :data:`probing` is set. Returns ``None``
    (always copy) when the probes do not behave as expected.

    Examples
    --------
    >>> import sys
    >>> from s4tf.cow import calibration
    >>> def entry(value):
    ...     count = sys.getrefcount(value)
    ...     if calibration.probing is not None:
    ...         calibration.record_probe(count)
    >>> isinstance(calibration.calibrate_root(entry, make=object), int)
    True
    """
    if not in_place_supported():
        return None
    sources = _probe_sources(len(args), keyword, arg_names)
    counts = {}
    for name, code in sources.items():
        for in_function in (True, False):
            counts[(name, in_function)] = _run_probe(code, entry, make, args, in_function)
    if any(c is None for c in counts.values()):
        return None
    single = [c for (name, _), c in counts.items() if name != "alias"]
    baseline = min(single)
    if counts[("alias", True)] != baseline + 1:
        return None
    return baseline
