"""A compiled trace kept for replay: the backend half of captured steps (``s4tf.xla.compile``).

:func:`recorded_barrier` runs a barrier as :func:`.graph.barrier` does
(:func:`.graph.collect`, then :func:`.graph.execute`) and, in between, keeps
the :class:`~.graph.Trace` as a :class:`CapturedProgram`: its key and
program, and the arrays its parameters and outputs were. The program's
:meth:`~CapturedProgram.run` later feeds the same compiled executable new
parameters and returns new lazy arrays for its outputs, without recording a
single node. Where the parameters come from and where the outputs go is the
business of :mod:`s4tf.capture`, which knows Tensors, models and optimizers.
"""

from __future__ import annotations

import math

import numpy as np

from . import compiler, graph
from .counters import COUNTERS
from .lazy import LazyArray
from .scalar_buffers import device_buffers

__all__ = ["CapturedProgram", "recorded_barrier"]


class CapturedProgram:
    """One barrier's compiled trace, replayable on new parameters.

    Attributes
    ----------
    device : list of LazyArray
        The device parameters of the recorded barrier, in parameter order
        (identities for the recorder; cleared by :meth:`forget_arrays`).
    host : list of LazyArray
        The host parameters (small host values: Python numbers entering ops),
        in parameter order after the device ones.
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
    >>> [new] = program.run([x._data], [3.0], donate=())
    >>> s4tf.Tensor._wrap(new, x._backend).tolist()
    [3.0, 6.0]
    """

    def __init__(self, trace: graph.Trace, keep=None) -> None:
        self.entries, self.out_slots, self.donate = trace.key
        self._program = (trace.program, trace.n_slots, trace.parameter_slots)
        self.device = list(trace._device)
        self.host = list(trace._host)
        # A host value may have any one-element shape ((), (1,), (1, 1)): a replay keeps it.
        self._host_specs = [(x.shape, x.dtype) for x in self.host]
        self._last_host: list = [None] * len(self.host)  # (value, its buffer) per parameter
        self.outputs = list(zip(trace._out_nodes, trace._out_positions, strict=True))
        specs: list = [None] * len(self.out_slots)
        for node, k in self.outputs:
            specs[k] = (node.shape, node.dtype)
        self._specs = specs
        self._hashes = {self.donate: trace.hash}  # per donation pattern: a key hashes in O(ops)
        # Copies of donated buffers the caller still needs (taken before XLA reuses them).
        self.kept = {id(self.device[k]): self.device[k].buffer.copy() for k in self.donate
                     if keep is not None and keep(self.device[k])}

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
        ``host_values`` one number per host parameter; ``donate`` says which
        arrays XLA may reuse (the caller proves nobody else can read them: they
        lose their buffer). A donation pattern other than the recorded one
        compiles once more (cached).
        """
        buffers = [a.buffer for a in arrays]
        trace = graph.Trace()
        trace.key = key = (self.entries, self.out_slots, donate)
        trace.hash = self._hashes.get(donate)
        if trace.hash is None:
            trace.hash = self._hashes[donate] = hash(key)
        trace.program, trace.n_slots, trace.parameter_slots = self._program
        trace.out_slots, trace.donate = self.out_slots, donate
        trace.arguments = (*buffers, *self._host_buffers(host_values))
        outs = compiler.run(trace)
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

    def _host_buffers(self, values) -> list:
        """One device buffer per host value; a value with the last run's bits reuses its buffer.

        A capture feeds its fixed numbers as the same immutable objects on
        every replay, and its recomputed ones (a learning rate) mostly as
        equal Python floats: their buffers are kept with the program instead
        of converting and looking each one up again (LeNet: 28 host
        parameters). A NumPy array may change in place, so it is always
        converted again.
        """
        last = self._last_host
        found: list = [None] * len(values)
        fresh, arrays = [], []
        for k, value in enumerate(values):
            kept = last[k]
            if kept is not None and _same_bits(kept[0], value):
                found[k] = kept[1]
            else:
                shape, dtype = self._host_specs[k]
                fresh.append(k)
                arrays.append(np.asarray(value, dtype).reshape(shape))
        for k, buffer in zip(fresh, device_buffers(arrays), strict=True):
            found[k] = buffer
            value = values[k]
            last[k] = None if isinstance(value, np.ndarray) else (value, buffer)
        return found


def _same_bits(old, new) -> bool:
    """Whether host value ``new`` is ``old`` or a Python float with the same bits.

    ``0.0 == -0.0`` but their bits differ (the sign), and a NaN is never
    taken as equal (converted again): equal floats otherwise convert alike.

    Examples
    --------
    >>> _same_bits(0.05, 0.05), _same_bits(0.0, -0.0), _same_bits(1, 1.0)
    (True, False, False)
    """
    if old is new:
        return True
    return (type(old) is float and type(new) is float and old == new
            and (old != 0.0 or math.copysign(1.0, old) == math.copysign(1.0, new)))


def recorded_barrier(keep=None) -> CapturedProgram | None:
    """Run a barrier and return its trace as a program (None when nothing was pending).

    ``keep(array)`` says whether a device parameter the barrier donates must
    stay readable: the program keeps a copy of its buffer in ``kept``.
    """
    with graph._lock:  # one barrier: no other thread's between the two halves
        trace = graph.collect()
        if trace is None:
            return None
        try:
            program = CapturedProgram(trace, keep=keep)
        finally:
            graph.execute(trace)  # collected arrays left unexecuted would stay pending forever
    return program
