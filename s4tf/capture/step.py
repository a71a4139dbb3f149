"""The captured step: call by call, replay a capture, verify it, or run the body and capture.

Captures are kept per call signature (:mod:`.calls`); a signature may hold a
few captures that differ in what the body decided (a Python number it
compared, an optimizer setting, slots made on the host or on the device).
The first ``verify_first`` calls after a capture (calls 2 and 3 by default)
and every ``verify_every``-th call run the body even when a capture would
replay, and compare the new trace with the capture's: another path (a
Python branch on something the signature does not see) warns with
:class:`s4tf.xla.CaptureMismatchWarning` and the new trace replaces the old;
a number the capture could not follow (made with ``math``/NumPy, or read
from a global) that changed warns too, and then that signature always runs
its body. Every run of the body also checks that it changed no argument in
place (:mod:`.mutation`), which a replay could not repeat.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ..backends.xla import graph
from ..backends.xla.counters import describe_change, summarize
from ..user_frames import user_stacklevel
from . import mutation, recording
from .calls import Call, NotCapturable
from .mismatch import CaptureMismatchWarning
from .replay import Miss
from .roles import Constant, Expr, Inputs, Number

__all__ = ["CapturedStep"]

# Captures kept per signature; the oldest goes first.
MAX_CAPTURES = 8
# After this many body runs in a row that found no capture to replay, say why once.
WARN_AFTER = 8


class CapturedStep:
    """A step function that replays its compiled program (made by :func:`s4tf.xla.compile`).

    Parameters
    ----------
    fn : callable
        The step.
    verify_every : int
        Run the body and compare traces on every ``verify_every``-th call.
    verify_first : int
        Run the body and compare traces on this many calls after each
        capture too.

    Attributes
    ----------
    calls : int
        Calls so far.
    body_runs : int
        Calls that ran the Python body (captures and verifications).

    Examples
    --------
    >>> import s4tf
    >>> def double(x):
    ...     return x * 2
    >>> step = s4tf.xla.compile(double, verify_every=10)
    >>> x = s4tf.ones([3]).to("xla")
    >>> [step(x).tolist() for _ in range(5)][-1], step.calls, step.body_runs
    ([2.0, 2.0, 2.0], 5, 3)
    """

    def __init__(self, fn, verify_every: int = 100, verify_first: int = 2) -> None:
        if not callable(fn):
            raise TypeError(f"s4tf.xla.compile takes a function; got a {type(fn).__name__}.")
        if not _count(verify_every, 1):
            raise ValueError(
                f"s4tf.xla.compile: verify_every must be an int >= 1 (the body runs again on "
                f"every verify_every-th call); got {verify_every!r}. Use 1 to check every "
                "call, or a large number to check rarely."
            )
        if not _count(verify_first, 0):
            raise ValueError(
                f"s4tf.xla.compile: verify_first must be an int >= 0 (the calls after a "
                f"capture that run the body again to check it); got {verify_first!r}. Use 0 "
                "to replay from the second call on."
            )
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.verify_every = int(verify_every)
        self.verify_first = int(verify_first)
        self.calls = 0
        self.body_runs = 0
        self._captures: dict = {}
        self._always_run: set = set()  # signatures fed numbers a capture cannot follow
        # Capture -> how many of its next calls still verify it. Calls 2 and 3 after a capture
        # find what the signature cannot see (a Python random draw, str() of an argument).
        self._unchecked: dict = {}
        self._misses = 0
        self._warned_misses = False
        self._last_signature = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return (f"<captured step {name}: {self.calls} calls, {self.body_runs} ran the body, "
                f"verify_every={self.verify_every}>")

    def __get__(self, instance, owner=None):
        # Decorating a method: bind like a function.
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        if recording.active():
            return self.fn(*args, **kwargs)  # inside another step's body: part of its trace
        self.calls += 1
        if graph.pending_count():
            graph.barrier()  # the inputs are materialised; the body's graph starts empty
        try:
            call = Call(args, kwargs)
        except NotCapturable:
            return self.fn(*args, **kwargs)
        signature = call.signature
        if signature in self._always_run:
            self.body_runs += 1
            return self.fn(*args, **kwargs)
        verifying = self.calls % self.verify_every == 0
        captures = self._captures.get(signature, [])
        matched, reasons = None, []
        for capture in captures:
            try:
                prepared = capture.prepare(call)
            except Miss as miss:
                reasons.append(str(miss))
                continue
            if not verifying and not self._unchecked.get(capture):
                self._misses = 0
                return capture.replay(call, prepared)
            matched = capture
            break
        if not captures:
            reasons.append(self._new_signature(signature))
        self.body_runs += 1
        before = mutation.Snapshot(self.fn, args, kwargs)
        results, capture = recording.record(call, self.fn)
        before.check(self._name())
        self._last_signature = signature
        if matched is not None:
            left = self._unchecked.pop(matched, 0)
            # Another path is a new capture: it gets its own first checks.
            left = left - 1 if matched.entries == capture.entries else self.verify_first
            self._compare(matched, capture, signature)
            captures[captures.index(matched)] = capture
        else:
            self._note_miss(reasons)
            left = self.verify_first
            captures.append(capture)
            for old in captures[:-MAX_CAPTURES]:
                self._unchecked.pop(old, None)
            del captures[:-MAX_CAPTURES]
            self._captures[signature] = captures
        if left > 0:
            self._unchecked[capture] = left
        return results

    def _new_signature(self, signature) -> str:
        if self._last_signature is None:
            return "first call"
        for old, new in zip(self._last_signature.parts, signature.parts, strict=False):
            if old != new:
                return f"the arguments differ from the last call's ({_part(old)} -> {_part(new)})"
        return "the arguments differ from the last call's in structure"

    def _note_miss(self, reasons) -> None:
        self._misses += 1
        if self._misses > WARN_AFTER and not self._warned_misses:
            self._warned_misses = True
            warnings.warn(
                f"s4tf.xla.compile: {self._name()} ran its Python body on each of the last "
                f"{self._misses} calls instead of replaying, because {reasons[-1]}. Keep "
                "shapes, dtypes, ints and other static arguments fixed, pass numbers that "
                "change as float arguments, and decide nothing in Python on those numbers.",
                CaptureMismatchWarning, stacklevel=user_stacklevel())

    def _compare(self, old, new, signature) -> None:
        """Warn if a verification run took another path, or changed numbers the capture baked in."""
        if old.entries != new.entries:
            change = ("the step computed nothing before" if old.entries is None or
                      new.entries is None else describe_change(
                          summarize((old.entries,)), summarize((new.entries,)))
                      + _first_difference(old.entries, new.entries))
            self._warn(f"took another path than when it was captured: the trace differs in "
                       f"{change}. The new trace is replayed from now on. Python branches "
                       "on values the step does not take as arguments (globals, attributes) "
                       "are invisible to a capture until it is verified; pass them as "
                       "arguments to make each path its own capture.")
            return
        changed = _changed_numbers(old, new)
        if changed:
            self._always_run.add(signature)
            self._warn(f"fed its compiled program {changed} that differs from the captured "
                       "one although the arguments' numbers did not say so (computed with "
                       "math or NumPy functions, read from a global, or made into a tensor "
                       "from host data inside the step); the calls since the last "
                       "verification used the old value. From now on this step runs its body "
                       "on every call. Compute such numbers with Python arithmetic on float "
                       "arguments, or pass tensors as arguments.")

    def _warn(self, message: str) -> None:
        warnings.warn(f"s4tf.xla.compile: {self._name()} {message}", CaptureMismatchWarning,
                      stacklevel=user_stacklevel())

    def _name(self) -> str:
        return getattr(self.fn, "__qualname__", "the step")


def _count(value, least: int) -> bool:
    """Whether ``value`` is an int (not a bool) of at least ``least``."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer) and value >= least


def _part(part) -> str:
    if isinstance(part, tuple) and len(part) == 3 and isinstance(part[0], tuple):
        return f"shape {part[0]} {np.dtype(part[1]).name}"
    return repr(part)


def _changed_numbers(old, new) -> str | None:
    """A description of a host number or constant array that differs between two equal traces."""
    inputs = Inputs(values=new.values)  # the old roles recompute their numbers from the new ones
    for a, b in zip(old.host_roles, new.host_roles, strict=True):
        if isinstance(a, _NUMBERS) and isinstance(b, _NUMBERS):
            before, after = a.resolve(inputs), b.resolve(inputs)
            if _differs(before, after):
                return f"a number ({before!r} -> {after!r})"
    for a, b in zip(old.device_roles, new.device_roles, strict=True):
        if isinstance(a, Constant) and isinstance(b, Constant) and \
                not np.array_equal(np.asarray(a.array.buffer), np.asarray(b.array.buffer),
                                   equal_nan=np.asarray(a.array.buffer).dtype.kind in "fc"):
            return f"a constant tensor of shape {a.array.shape}"
    for a, b in zip(old.results[1], new.results[1], strict=True):
        if isinstance(a, Number) and isinstance(b, Number) and _differs(a.value, b.value):
            return f"a returned number ({a.value!r} -> {b.value!r})"
    return None


_NUMBERS = (Number, Expr)


def _differs(a, b) -> bool:
    """Whether two numbers differ (a NaN fill value is the same NaN each time)."""
    return bool(a != b) and not bool(a != a and b != b)


def _first_difference(old, new) -> str:
    """The first op (with its static parameters: shapes, dtypes, axes) that differs."""
    for a, b in zip(old, new, strict=False):
        if a != b and a[0] != "P" and b[0] != "P":
            return f"; first {_op(a)} became {_op(b)}"
    return ""


def _op(entry) -> str:
    op, params, _ = entry
    return op + "(" + ", ".join(f"{k}={v!r}" for k, v in params) + ")"
