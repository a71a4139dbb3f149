"""The pending graph: recording nodes, and at a barrier ordering, hashing and liveness.

Every pending :class:`LazyArray` is registered, by weak reference, in creation
order, which is already a topological order (inputs are older than their
users). A barrier numbers every value in that order (post-order, parameters at
their first use), builds the structural key (ops, static params, shapes,
dtypes, parameter positions; never data), and decides two things by liveness:

* which pending nodes are *outputs*: those something outside the pending graph
  still references (a Tensor, an AD tape, a user's list); the rest are
  intermediates that die once their users are computed;
* which parameter buffers may be *donated*: those nothing but the pending graph
  references, so no live tensor can observe them after the barrier.

Liveness is read from CPython reference counts (minus the references the
pending graph itself explains, minus a baseline calibrated at import), never
from the cycle collector; anything that cannot be explained counts as live,
which only costs an extra output or a missed donation.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import weakref

import numpy as np

from .layouts import check_meshes, placement
from .lazy import LazyArray
from .metrics import COUNTERS

__all__ = ["barrier", "pending_count", "record"]

MAX_PENDING = int(os.environ.get("S4TF_XLA_MAX_PENDING", "100000"))
_pending: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_lock = threading.RLock()
_since_barrier = 0
# Called with each barrier's plan just before it runs, while s4tf.xla.compile
# records a step (s4tf/capture): listener(run_args, device, host_groups, out_nodes, slot).
listener = None


def record(op, inputs, params, pkey, shape, dtype) -> LazyArray:
    """A new pending node; runs a barrier first if the trace has grown too large."""
    global _since_barrier
    node = LazyArray(shape, dtype, op=op, inputs=inputs, params=params, pkey=pkey)
    _pending[node.seq] = node
    COUNTERS["traced_ops"] += 1
    _since_barrier += 1
    if _since_barrier > MAX_PENDING:
        # A loop that never observes a value would otherwise grow one graph forever.
        barrier()
    return node


def pending_count() -> int:
    """How many pending nodes are alive (tests, diagnostics)."""
    return len(_pending)


def _refcounts(arrays, internal) -> list[int]:
    """Reference counts of ``arrays`` minus the references the pending graph explains."""
    return [sys.getrefcount(a) - internal.get(id(a), 0) for a in arrays]


def _calibrate() -> int | None:
    """The count ``_refcounts`` reports for an array held only by its list."""
    probe = [LazyArray((), np.dtype(np.float32))]
    base = _refcounts(probe, {})[0]
    alias = probe[0]
    aliased = _refcounts(probe, {})[0]
    del alias
    # If one alias does not show as exactly one more, refcounts cannot be trusted
    # here (another interpreter): treat everything as live and donate nothing.
    return base if aliased == base + 1 else None


_BASELINE = _calibrate()


def _build(nodes):
    """Number values post-order, share identical subgraphs, build the key entries."""
    slot, internal, cse = {}, {}, {}
    entries, program, device, host_layout, host_groups = [], [], [], [], {}
    for node in nodes:
        args = []
        for x in node.inputs:
            if x is None:
                args.append(None)
                continue
            i = id(x)
            internal[i] = internal.get(i, 0) + 1
            s = slot.get(i)
            if s is None:
                if x.op is not None:
                    raise RuntimeError(
                        f"s4tf xla internal error: pending input {x!r} of {node!r} is not "
                        "registered; please report this with the code that triggered it."
                    )
                s = slot[i] = len(entries)
                if x.host:
                    group = host_groups.setdefault(x.dtype, [])
                    host_layout.append((s, x.dtype, len(group), x.shape))
                    group.append(x)
                    entries.append(("P", x.shape, x.dtype, "host"))
                else:
                    device.append(x)
                    # The layout is part of the trace: XLA partitions the step by it.
                    entries.append(("P", x.shape, x.dtype, "device", placement(x.buffer)))
            args.append(s)
        signature = (node.op, node.pkey, tuple(args))
        s = cse.get(signature)
        if s is None:
            s = cse[signature] = len(entries)
            entries.append(signature)
            program.append((s, node.op, node.params, signature[2]))
        slot[id(node)] = s
    return slot, internal, entries, program, device, host_layout, host_groups


def _donations(device, alive, out_nodes) -> tuple[int, ...]:
    """Positions of device parameters to donate: dead outside the graph, reusable by an output."""
    if _BASELINE is None:
        return ()
    wanted: dict = {}
    for node in out_nodes:
        sig = (node.shape, node.dtype)
        wanted[sig] = wanted.get(sig, 0) + 1
    donate = []
    for k, (x, count) in enumerate(zip(device, alive, strict=True)):
        sig = (x.shape, x.dtype)
        # Donating a buffer no output can reuse only earns a JAX warning.
        if count == _BASELINE and not x.shared and wanted.get(sig, 0) > 0:
            wanted[sig] -= 1
            donate.append(k)
    return tuple(donate)


def barrier() -> None:
    """Compile (or fetch from the cache) and run the graph of all live pending arrays."""
    global _since_barrier
    from . import compiler

    with _lock:
        start = time.perf_counter()
        nodes = list(_pending.values())
        _since_barrier = 0
        if not nodes:
            return
        slot, internal, entries, program, device, host_layout, host_groups = _build(nodes)
        live = _refcounts(nodes, internal)
        out_nodes = [n for n, c in zip(nodes, live, strict=True) if _BASELINE is None or c > _BASELINE]
        del live
        out_slots = list(dict.fromkeys(slot[id(n)] for n in out_nodes))
        donate = _donations(device, _refcounts(device, internal), out_nodes)
        key = (tuple(entries), tuple(out_slots), donate)
        # One-element host values of any shape ((), (1,), (1, 1)) pack flat; replay reshapes.
        packs = [np.array([np.asarray(x.buffer).reshape(()) for x in group], dtype=dtype)
                 for dtype, group in host_groups.items()]
        buffers = [x.buffer for x in device]
        check_meshes(buffers)
        COUNTERS["graph_time"] += time.perf_counter() - start
        run_args = (key, program, len(entries), [slot[id(x)] for x in device], host_layout,
                    list(host_groups), out_slots)
        if listener is not None:
            listener(run_args, device, host_groups, out_nodes, slot)
        outs = compiler.run(*run_args, buffers, packs, donate)
        position = {s: k for k, s in enumerate(out_slots)}
        by_buffer: dict[int, LazyArray] = {id(b): x for x, b in zip(device, buffers, strict=True)}
        for node in out_nodes:
            buffer = outs[position[slot[id(node)]]]
            twin = by_buffer.get(id(buffer))
            if twin is not None:
                # XLA returned an input or one output twice: two arrays share a buffer.
                twin.shared = node.shared = True
            by_buffer[id(buffer)] = node
            node.materialize(buffer)
            _pending.pop(node.seq, None)
        for k in donate:
            device[k].buffer = None
        COUNTERS["donated_buffers"] += len(donate)
