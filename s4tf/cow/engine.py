"""The copy-on-write update engine, shared by every entry point.

``opt.update(model, grads)``, ``s4tf.moved(value, along)`` and
``value.moved(along=)`` differ only in what they write into each leaf. Each
measures its argument's reference count on its first line (before any other
local refers to it) and hands the rest to :func:`update`: decide whether the
caller held the only reference (the count) and passed it in a way that leaves
no other holder (the call site, :mod:`.callsite`), find which buffers nobody
else can see, consume the old root if it is unique, produce every new leaf (in
place where allowed), and rebuild the new value. Ctrl-C waits until the update
is over (:mod:`.interrupts`).
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing

import numpy as np

from ..liveness import RootBaseline, counts_trusted
from ..tensor import Tensor
from ..tree import node_type
from ..user_frames import user_location
from . import callsite
from .consumed import can_consume, restore
from .consumed import consume as consume_value
from .holders import debug_enabled, report_copy
from .interrupts import InterruptsDeferred
from .walk import analyze, rebuild, rebuild_consumed

__all__ = ["MODES", "UpdateRequest", "copy_reason", "mode", "root_is_unique", "update"]

MODES = ("auto", "always-copy")


def mode() -> str:
    """``S4TF_COPY_ON_WRITE``: ``"auto"`` (default) or ``"always-copy"``.

    Examples
    --------
    >>> from s4tf import cow
    >>> cow.mode() in cow.engine.MODES
    True
    """
    value = os.environ.get("S4TF_COPY_ON_WRITE", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(
            f"S4TF_COPY_ON_WRITE={value!r} is not understood; use 'auto' (update in place "
            "when nothing else refers to the model) or 'always-copy'."
        )
    return value


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class UpdateRequest:
    """What an entry point asks :func:`update` for: one value, and how to make its new leaves.

    Attributes
    ----------
    value : object
        The entry point's argument (the model).
    count : int
        ``sys.getrefcount(value)``, measured on the entry point's first line.
    baseline : RootBaseline or None
        The entry point's calibrated counts (:func:`s4tf.liveness.calibrate_root`);
        ``None`` always copies.
    consume : bool
        ``False`` always copies (the caller's ``consume=`` argument).
    new_leaf : callable
        ``new_leaf(i, leaf, in_place)``: the new leaf ``i``, written into the
        leaf's storage only when ``in_place`` is true.
    what : str
        The entry point, for messages (``"SGD.update"``, ``"moved"``).
    caller : frame
        The frame that called the entry point.
    entry : callsite.Entry
        How a call site passes the entry point its value.
    commit : callable, optional
        Makes the entry point's own state changes take effect (the optimizer's
        step and slots), once every leaf is done.

    Examples
    --------
    >>> import sys, s4tf
    >>> from s4tf import cow
    >>> from s4tf.cow import callsite
    >>> request = cow.UpdateRequest(
    ...     value=[s4tf.ones([2])], count=sys.getrefcount(None), baseline=None, consume=True,
    ...     new_leaf=lambda i, leaf, in_place: leaf * 2, what="example",
    ...     caller=sys._getframe(), entry=callsite.MOVED)
    >>> cow.update(request)[0].tolist()
    [2.0, 2.0]
    """

    value: object
    count: int
    baseline: RootBaseline | None
    consume: bool
    new_leaf: typing.Callable
    what: str
    caller: types.FrameType
    entry: callsite.Entry
    commit: typing.Callable | None = None


def root_is_unique(value, count: int, baseline: RootBaseline | None, consume: bool,
                   caller, entry: callsite.Entry) -> bool:
    """Whether entry point ``entry`` may consume ``value``, given the count it measured.

    ``caller`` is the frame that called the entry point: the count must show
    that its one reference is the only one, and the call site must pass it in
    a way that leaves no other holder (:func:`s4tf.cow.callsite.may_consume`).

    Examples
    --------
    >>> import sys
    >>> from s4tf.cow import callsite, root_is_unique
    >>> root_is_unique([1.0], count=3, baseline=None, consume=True, caller=sys._getframe(),
    ...                entry=callsite.UPDATE)
    False
    """
    return (
        consume
        and baseline is not None
        and _consumable(value)
        and mode() == "auto"
        and counts_trusted()
        and baseline.allows(value, count, caller)
        and callsite.may_consume(caller, entry)
    )


def copy_reason(value, baseline: RootBaseline | None, consume: bool, caller=None,
                entry: callsite.Entry | None = None) -> str | None:
    """Why an update copies regardless of who holds ``value``; ``None`` if holders decide.

    With ``caller`` and ``entry``, a call site that must not consume is a reason too.
    """
    if not consume:
        return "consume=False was passed"
    if mode() != "auto":
        return "S4TF_COPY_ON_WRITE=always-copy is set"
    if not counts_trusted():
        return "this interpreter's reference counts cannot prove uniqueness (copying is safe)"
    if baseline is None:
        return "reference-count calibration failed on this interpreter (copying is safe)"
    if not _consumable(value):
        return (f"a {type(value).__name__} cannot be consumed; only s4tf.Differentiable models "
                "are updated in place")
    if caller is not None and entry is not None:
        found = callsite.verdict(caller.f_code, caller.f_lasti, entry)
        if not found.consume:
            return f"the model was passed {found.passed}"
    return None


def _consumable(value) -> bool:
    """Whether ``value`` is a model (a registered node: an s4tf.Differentiable) whose class
    can be swapped for a consumed type."""
    node = node_type(value.__class__)
    return node is not None and not node.cell and can_consume(value)


def update(request: UpdateRequest):
    """``request.value`` with every leaf replaced by ``request.new_leaf(i, leaf, in_place)``.

    ``new_leaf`` gets each leaf in ``tree_flatten(value, differentiable=True)``
    order and may write into the leaf's storage only when ``in_place`` is
    true; by then the old root has been consumed if it was unique. Anything
    the entry point must validate, it validates before calling this.

    ``request.commit`` (optional) is called once every leaf is done, unless
    the update is abandoned with the value untouched. A Ctrl-C during the
    update is held back until the update is over; then a copying update is
    abandoned (the value and the entry point's state stay as they were), while
    an in-place update is finished, committed, and the value itself becomes
    the updated value (the caller's name, which the interrupted assignment
    never rebound, holds it), before the ``KeyboardInterrupt`` is raised.

    Examples
    --------
    See :class:`UpdateRequest`.
    """
    value, count, baseline, consume = request.value, request.count, request.baseline, request.consume
    new_leaf, what, caller, entry, commit = (request.new_leaf, request.what, request.caller,
                                             request.entry, request.commit)
    root_unique = root_is_unique(value, count, baseline, consume, caller, entry)
    found = analyze(value, root_unique)
    debug = debug_enabled()
    # Finding the user's line walks the stack: only for a consumed value or a report.
    location = user_location() if root_unique or debug else None
    cls = type(value)
    fields = None
    with InterruptsDeferred() as interrupt:
        if root_unique:
            fields = consume_value(value, location, what)
        leaves = [new_leaf(i, leaf, in_place) for i, (leaf, in_place)
                  in enumerate(zip(found.leaves, found.in_place, strict=True))]
        if fields is not None:
            new = rebuild_consumed(cls, fields, iter(leaves), found)
        else:
            new = rebuild(value, iter(leaves), found)
        if root_unique:
            # Written in place: the update stands, interrupted or not.
            if commit is not None:
                commit()
            if interrupt.pending:
                try:
                    interrupt.deliver()
                except BaseException:
                    restore(value, new)  # the caller's name holds the finished update
                    raise
        else:
            # A copy: an interrupt that raises abandons it before anything is committed.
            interrupt.deliver()
            if commit is not None:
                commit()
    if debug and not all(found.in_place):
        reason = None if root_unique else copy_reason(value, baseline, consume, caller, entry)
        blocker = found.blocker
        if not root_unique and reason is None:
            blocker = value  # someone else holds the value itself
        # A consumed value must not be touched again: it would raise.
        report_copy(what, _nbytes(found.leaves), blocker, location,
                    ignore=(found, found.leaves, fields, request), own=found.visited, reason=reason)
    return new


def _nbytes(leaves) -> int:
    return sum(int(np.prod(x.shape)) * x.dtype.numpy.itemsize if isinstance(x, Tensor) else 8
               for x in leaves)
