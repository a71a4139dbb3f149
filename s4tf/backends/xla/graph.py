"""The pending graph: recording nodes, and at a barrier ordering, hashing and liveness.

Every pending :class:`LazyArray` is registered, by weak reference, in creation
order, which is already a topological order (inputs are older than their
users). A barrier collects the live ones into a :class:`Trace`, which numbers every value in that order (post-order, parameters at
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

A barrier is :func:`collect` (the trace, its key and hash; nothing runs), then
:func:`execute` (the compiler's cached executable runs it; outputs are
materialised and donated buffers dropped). A captured step's recording
(:func:`.capture.recorded_barrier`) calls the two itself and keeps the trace
in between, to replay its program later.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import sys
import threading
import time
import weakref

import numpy as np

from ... import hooks, liveness
from . import compiler
from .counters import COUNTERS
from .layouts import check_meshes, placement
from .lazy import LazyArray
from .scalar_buffers import device_buffers

__all__ = ["Trace", "barrier", "collect", "execute", "pending_count", "record"]

MAX_PENDING = int(os.environ.get("S4TF_XLA_MAX_PENDING", "100000"))
# Weak references to the pending nodes, oldest first (a topological order). A
# plain list of plain references: a WeakValueDictionary's keyed references with
# callbacks cost three times as much per node, and dead entries are skipped at
# the barrier, which empties the list.
_pending: list = []
_ref = weakref.ref
_lock = threading.RLock()
# Each barrier's number, stamped on the arrays it numbers (LazyArray.mark), so
# their slots and use counts live on the arrays, not in dictionaries keyed by id.
_barriers = itertools.count(1)


def record(op, inputs, params, pkey, shape, dtype) -> LazyArray:
    """A new pending node; runs a barrier after it if the trace has grown too large."""
    node = LazyArray(shape, dtype, None, False, op, inputs, params, pkey)
    _pending.append(_ref(node))
    COUNTERS["traced_ops"] += 1
    if len(_pending) > MAX_PENDING:
        # A loop that never observes a value would otherwise grow one graph forever.
        barrier()
    return node


def pending_count() -> int:
    """How many pending nodes are alive (tests, diagnostics)."""
    return sum(1 for ref in _pending if (node := ref()) is not None and node.op is not None)


def _refcounts(arrays) -> list[int]:
    """Reference counts of numbered ``arrays`` minus the references the pending graph explains."""
    return [sys.getrefcount(a) - a.uses for a in arrays]


def _held_once(extra: int) -> int:
    """What ``_refcounts`` reports for a probe array held only by its list (and ``extra`` more)."""
    probe = [LazyArray((), np.dtype(np.float32))]
    probe[0].uses = 0
    aliases = probe * extra
    count = _refcounts(probe)[0]
    del aliases
    return count


# None where one more holder does not show as exactly one more (another interpreter):
# then everything counts as live and nothing is donated.
_BASELINE = liveness.one_holder_count(_held_once)


@contextlib.contextmanager
def _no_cycle_collection():
    """Hold the cycle collector off while a barrier builds and drops its temporaries.

    A barrier allocates a few tuples per node, all gone when it returns; left
    on, the collector would run several times inside it and promote those
    temporaries to the oldest generation, which brings the next full
    collection (the whole heap, JAX's modules included) closer.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Trace:
    """One collected pending graph: its structural key and what one run of it needs.

    Attributes
    ----------
    key : tuple
        ``(entries, output slots, donated positions)``: every op with its static
        parameters and argument slots, every parameter's shape, dtype and
        layout; never data. Equal keys compile to the same program.
    hash : int
        ``hash(key)``, computed once.
    program : list
        ``(slot, op, params, argument slots)`` per computed value, for the replay.
    n_slots, parameter_slots, out_slots, donate
        How the replay numbers values, which slot each argument fills, which
        slots it returns and which (device) arguments it donates.
    arguments : tuple
        The run's arguments: the device buffers, then one buffer per small
        host value (Python scalars entering ops; :mod:`.scalar_buffers`).
    """

    __slots__ = ("key", "hash", "program", "n_slots", "parameter_slots", "out_slots", "donate",
                 "arguments", "_device", "_host", "_out_nodes", "_out_positions")


def collect() -> Trace | None:
    """The live pending graph as a :class:`Trace` (None when nothing is pending); runs nothing.

    The pending registry is emptied: the caller must :func:`execute` the trace
    (or its arrays stay pending forever).
    """
    global _pending
    with _lock, _no_cycle_collection():
        start = time.perf_counter()
        refs, _pending = _pending, []
        nodes = [node for ref in refs if (node := ref()) is not None and node.op is not None]
        del refs
        if not nodes:
            return None
        trace = Trace()
        entries, program, device, host = _build(nodes)
        live = _refcounts(nodes)
        baseline = _BASELINE
        out_nodes = [n for n, c in zip(nodes, live, strict=True) if baseline is None or c > baseline]
        out_slots = list(dict.fromkeys([n.slot for n in out_nodes]))
        donate = _donations(device, _refcounts(device), out_nodes)
        del live, nodes
        trace.key = key = (tuple(entries), tuple(out_slots), donate)
        trace.hash = hash(key)
        trace.program, trace.n_slots = program, len(entries)
        trace.parameter_slots = [x.slot for x in device] + [x.slot for x in host]
        trace.out_slots, trace.donate = out_slots, donate
        buffers = [x.buffer for x in device]
        check_meshes(buffers)
        trace.arguments = (*buffers, *device_buffers([x.buffer for x in host]))
        trace._device, trace._host = device, host
        trace._out_nodes = out_nodes
        position = {s: k for k, s in enumerate(out_slots)}
        trace._out_positions = [position[n.slot] for n in out_nodes]
        COUNTERS["graph_time"] += time.perf_counter() - start
        return trace


def _build(nodes):
    """Number values post-order, share identical subgraphs, build the key entries.

    Every array met is stamped with this barrier's number and gets its slot
    and its count of uses by the graph (``mark``, ``slot``, ``uses``).
    """
    mark = next(_barriers)
    cse: dict = {}
    entries, program, device, host = [], [], [], []
    cse_of = cse.get
    for node in nodes:
        args = []
        for x in node.inputs:
            if x is None:
                args.append(None)
            elif x.mark == mark:
                x.uses += 1
                args.append(x.slot)
            else:
                if x.op is not None:
                    raise RuntimeError(
                        f"s4tf xla internal error: pending input {x!r} of {node!r} is not "
                        "registered; please report this with the code that triggered it."
                    )
                x.mark, x.uses, x.slot = mark, 1, len(entries)
                if x.host:
                    host.append(x)
                    entries.append(("P", x.shape, x.dtype, "host"))
                else:
                    device.append(x)
                    # The layout is part of the trace: XLA partitions the step by it.
                    entries.append(("P", x.shape, x.dtype, "device", placement(x.buffer)))
                args.append(x.slot)
        args = tuple(args)
        signature = (node.op, node.pkey, args)
        s = cse_of(signature)
        if s is None:
            s = cse[signature] = len(entries)
            entries.append(signature)
            program.append((s, node.op, node.params, args))
        node.mark, node.uses, node.slot = mark, 0, s
    return entries, program, device, host


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


def execute(trace: Trace) -> None:
    """Run ``trace`` (compiling it on a cache miss) and materialise its outputs in place."""
    with _lock:
        outs = compiler.run(trace)
    with _lock, _no_cycle_collection():
        device = trace._device
        by_buffer: dict[int, LazyArray] = {id(x.buffer): x for x in device}
        for node, k in zip(trace._out_nodes, trace._out_positions, strict=True):
            buffer = outs[k]
            twin = by_buffer.get(id(buffer))
            if twin is not None:
                # XLA returned an input or one output twice: two arrays share a buffer.
                twin.shared = node.shared = True
            by_buffer[id(buffer)] = node
            node.materialize(buffer)
        for k in trace.donate:
            device[k].buffer = None
        COUNTERS["donated_buffers"] += len(trace.donate)
        # The trace no longer holds the arrays: a captured step may keep it.
        trace._device = trace._host = trace._out_nodes = trace.arguments = None


def barrier() -> None:
    """Compile (or fetch from the cache) and run the graph of all live pending arrays."""
    if hooks.on_barrier is not None:
        # A captured step's body refuses it (s4tf/capture): a replay could not read a value.
        hooks.on_barrier()
    with _lock:
        trace = collect()
        if trace is not None:
            execute(trace)
