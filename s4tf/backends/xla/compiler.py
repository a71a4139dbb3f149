"""From a pending graph to a compiled XLA executable: replay, ``jax.jit``, cache.

The replay function calls, for each node, the kernel of the same name on
:data:`JAX_KERNELS` (the shared array kernels over ``jax.numpy``); tracing it
under ``jax.jit`` gives XLA the whole step at once. Executables are cached by
the graph's structural key, so a training loop compiles during warm-up and then
only looks its step up; JAX's persistent cache (:mod:`.jax_settings`) keeps
the compiled programs between processes, so a second run of a script loads them
instead of compiling. Calls return as soon as the work is dispatched (JAX's
asynchronous dispatch); observing a value waits for it.
"""

from __future__ import annotations

import atexit
import time

import jax

from .counters import COUNTERS, note_compile, note_hit
from .jax_settings import persistent_cache_hits
from .kernels import JAX_KERNELS
from .layouts import collectives_in, device_count

__all__ = ["cache_size", "clear_cache", "run", "wait_for_running_steps"]

# _Key -> (executable, device count, collectives).
_cache: dict = {}


class _Key(tuple):
    """A trace key (the same tuple) that hashes as the hash its trace computed once.

    A key holds an entry per value of the step (LeNet's: 136), so hashing it
    costs tens of microseconds, and the trace has hashed it already (its name
    in the debug output). A lookup still compares the whole key with a cached
    one whose hash matches (tuple equality), so a step never runs an
    executable compiled for another.
    """

    def __new__(cls, key, key_hash):
        self = super().__new__(cls, key)
        self._hash = key_hash
        return self

    def __hash__(self):
        return self._hash


def _replay(program, n_slots, parameter_slots, out_slots):
    steps = [(s, getattr(JAX_KERNELS, op), params or {}, args) for s, op, params, args in program]

    def replay(*arrays):
        values = [None] * n_slots
        for s, array in zip(parameter_slots, arrays, strict=True):
            values[s] = array
        for s, kernel, params, args in steps:
            values[s] = kernel(*[None if a is None else values[a] for a in args], **params)
        return tuple(values[s] for s in out_slots)

    return replay


def run(trace):
    """Run a collected :class:`~.graph.Trace` on its arguments; compile on a miss.

    Returns the output buffers, in ``trace.out_slots`` order.
    """
    arguments = trace.arguments
    key = _Key(trace.key, trace.hash)
    cached = _cache.get(key)
    if cached is None:
        start = time.perf_counter()
        replay = _replay(trace.program, trace.n_slots, trace.parameter_slots, trace.out_slots)
        # A jitted function, not an AOT-compiled one: its calls take JAX's C++
        # dispatch path, several times cheaper per argument. The first call traces
        # and compiles (counted as compile time; its dispatch is async).
        executable = jax.jit(replay, donate_argnums=trace.donate)
        loaded = persistent_cache_hits()
        devices = device_count(trace.arguments)
        # A step over several devices: read the partitioned program once (JAX
        # reuses that compilation for the call below) to report its collectives.
        collectives = collectives_in(executable, arguments) if devices > 1 else ()
        _cache[key] = (executable, devices, collectives)
        COUNTERS["devices"], COUNTERS["collectives"] = devices, collectives
        outs = executable(*arguments)
        COUNTERS["persistent_cache_hits"] += persistent_cache_hits() - loaded
        note_compile(trace.key, trace.hash, time.perf_counter() - start, len(trace.program))
        COUNTERS["executions"] += 1
        return outs
    executable, COUNTERS["devices"], COUNTERS["collectives"] = cached
    note_hit(trace.hash)
    start = time.perf_counter()
    outs = executable(*arguments)
    COUNTERS["execute_time"] += time.perf_counter() - start
    COUNTERS["executions"] += 1
    return outs


def wait_for_running_steps() -> None:
    """Block until every launched step has finished (registered to run at exit).

    A barrier returns once its step is launched. Tearing the interpreter down
    while XLA still runs that step frees buffers under it, which can crash the
    process at exit (a segmentation fault after the script's last line).
    """
    for array in jax.live_arrays():
        if not array.is_deleted():
            array.block_until_ready()


atexit.register(wait_for_running_steps)


def cache_size() -> int:
    """How many compiled traces are cached."""
    return len(_cache)


def clear_cache() -> None:
    """Drop every compiled executable (the next barrier of each trace recompiles)."""
    _cache.clear()
