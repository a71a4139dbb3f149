"""A compiled trace kept for replay: the backend half of captured steps (``s4tf.xla.compile``).

A barrier turns the pending graph into a *plan* (the arguments of
:func:`.compiler.run`: the trace key, the program, which values are device and
host parameters, which nodes are outputs). :func:`recorded_barrier` runs a
barrier and keeps its plan as a :class:`CapturedProgram`; the program's
:meth:`~CapturedProgram.run` later feeds the same compiled executable new
parameters and returns new lazy arrays for its outputs, without recording a
single node. Where the parameters come from and where the outputs go is the
business of :mod:`s4tf.capture`, which knows Tensors, models and optimizers.
"""

from __future__ import annotations

import numpy as np

from . import compiler, graph
from .lazy import LazyArray
from .metrics import COUNTERS

__all__ = ["CapturedProgram", "recorded_barrier"]


class CapturedProgram:
    """One barrier's compiled trace, replayable on new parameters.

    Attributes
    ----------
    device : list of LazyArray
        The device parameters of the recorded barrier, in parameter order
        (identities for the recorder; cleared by :meth:`forget_arrays`).
    host : list of list of LazyArray
        The host parameters, one list per host dtype group, in packing order.
    outputs : list of tuple
        ``(LazyArray, output index)`` for every node the barrier computed.
    donate : tuple of int
        The device parameters the recorded barrier donated.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.backends.xla.capture import recorded_barrier
    >>> x = s4tf.Tensor([1.0, 2.0]).to("xla")
    >>> y = x * 3
    >>> program = recorded_barrier()
    >>> [new] = program.run([x._data], [[3.0]], donate=())
    >>> s4tf.Tensor._wrap(new, x._backend).tolist()
    [3.0, 6.0]
    """

    def __init__(self, run_args, device, host_groups, out_nodes, slot, keep=None) -> None:
        key, program, n_slots, device_slots, host_layout, host_dtypes, out_slots = run_args
        self._run_args = (program, n_slots, device_slots, host_layout, host_dtypes, out_slots)
        self.entries, self.out_slots, self.donate = key
        self.host_dtypes = list(host_dtypes)
        self.device = list(device)
        self.host = [list(group) for group in host_groups.values()]
        position = {s: k for k, s in enumerate(out_slots)}
        self.outputs = [(node, position[slot[id(node)]]) for node in out_nodes]
        specs: list = [None] * len(out_slots)
        for node, k in self.outputs:
            specs[k] = (node.shape, node.dtype)
        self._specs = specs
        # Copies of donated buffers the caller still needs (taken before XLA reuses them).
        self.kept = {id(device[k]): device[k].buffer.copy() for k in self.donate
                     if keep is not None and keep(device[k])}

    @property
    def key(self) -> tuple:
        """The trace key of the recorded barrier (its structure: ops, shapes, dtypes, layouts)."""
        return self.entries, self.out_slots, self.donate

    def forget_arrays(self) -> None:
        """Drop the recorded barrier's arrays once the recorder has read their identities."""
        self.device, self.host, self.outputs, self.kept = [], [], [], {}

    def run(self, arrays, host_values, donate) -> list[LazyArray]:
        """Run the compiled trace on new parameters: one lazy array per output.

        ``arrays`` are materialised device arrays in parameter order,
        ``host_values`` one list of numbers per host dtype group; ``donate``
        says which arrays XLA may reuse (the caller proves nobody else can read
        them: they lose their buffer). A donation pattern other than the
        recorded one compiles once more (cached).
        """
        buffers = [a.buffer for a in arrays]
        packs = [np.array(values, dtype=dtype) for values, dtype in
                 zip(host_values, self.host_dtypes, strict=True)]
        outs = compiler.run((self.entries, self.out_slots, donate), *self._run_args, buffers,
                            packs, donate)
        COUNTERS["replays"] += 1
        COUNTERS["donated_buffers"] += len(donate)
        for k in donate:
            arrays[k].buffer = None
        seen = {id(b): a for a, b in zip(arrays, buffers, strict=True)}
        results = []
        for buffer, (shape, dtype) in zip(outs, self._specs, strict=True):
            result = LazyArray(shape, dtype, buffer=buffer)
            twin = seen.get(id(buffer))
            if twin is not None:
                # XLA returned an input, or one buffer twice: never donate either later.
                twin.shared = result.shared = True
            seen[id(buffer)] = result
            results.append(result)
        return results


def recorded_barrier(keep=None) -> CapturedProgram | None:
    """Run a barrier and return its plan as a program (None when nothing was pending).

    ``keep(array)`` says whether a device parameter the barrier donates must
    stay readable: the program keeps a copy of its buffer in ``kept``.
    """
    plans = []
    previous = graph.listener
    graph.listener = lambda *plan: plans.append(CapturedProgram(*plan, keep=keep))
    try:
        graph.barrier()
    finally:
        graph.listener = previous
    return plans[0] if plans else None
