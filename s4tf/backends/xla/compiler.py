"""From a pending graph to a compiled XLA executable: replay, ``jax.jit``, cache.

The replay function calls, for each node, the kernel of the same name on
:data:`JAX_KERNELS` (the shared array kernels over ``jax.numpy``); tracing it
under ``jax.jit`` gives XLA the whole step at once. Executables are cached by
the graph's structural key, so a training loop compiles during warm-up and then
only looks its step up. Calls return as soon as the work is dispatched (JAX's
asynchronous dispatch); observing a value waits for it.
"""

from __future__ import annotations

import time

import jax

from .counters import COUNTERS, note_compile, note_hit
from .kernels import JAX_KERNELS
from .layouts import collectives_in, device_count

__all__ = ["cache_size", "clear_cache", "run"]

_cache: dict = {}


def _replay(program, n_slots, device_slots, host_layout, host_dtypes, out_slots):
    steps = [(s, getattr(JAX_KERNELS, op), params or {}, args) for s, op, params, args in program]
    n_device = len(device_slots)
    group_of = {dtype: g for g, dtype in enumerate(host_dtypes)}
    host = [(s, group_of[dtype], j, shape) for s, dtype, j, shape in host_layout]

    def replay(*arrays):
        values = [None] * n_slots
        for s, array in zip(device_slots, arrays, strict=False):
            values[s] = array
        packs = arrays[n_device:]
        for s, group, j, shape in host:
            values[s] = packs[group][j].reshape(shape)
        for s, kernel, params, args in steps:
            values[s] = kernel(*[None if a is None else values[a] for a in args], **params)
        return tuple(values[s] for s in out_slots)

    return replay


def trace_hash(key) -> str:
    """A short name for a trace in ``S4TF_DEBUG`` output (stable within a process)."""
    return f"{hash(key) & 0xFFFFFFFFFFFF:012x}"


def run(key, program, n_slots, device_slots, host_layout, host_dtypes, out_slots, buffers,
        packs, donate):
    """Run the graph described by ``key`` on ``buffers`` and ``packs``; compile on a miss."""
    cached = _cache.get(key)
    if cached is None:
        start = time.perf_counter()
        replay = _replay(program, n_slots, device_slots, host_layout, host_dtypes, out_slots)
        # A jitted function, not an AOT-compiled one: its calls take JAX's C++
        # dispatch path, several times cheaper per argument. The first call
        # traces and compiles (counted as compile time; its dispatch is async).
        executable = jax.jit(replay, donate_argnums=donate)
        devices = device_count(buffers)
        # A step over several devices: read the partitioned program once (JAX
        # reuses that compilation for the call below) to report its collectives.
        collectives = collectives_in(executable, (*buffers, *packs)) if devices > 1 else ()
        _cache[key] = cached = (executable, devices, collectives)
        COUNTERS["devices"], COUNTERS["collectives"] = devices, collectives
        outs = executable(*buffers, *packs)
        note_compile(key, trace_hash(key), time.perf_counter() - start, len(program))
        COUNTERS["executions"] += 1
        return outs
    executable, COUNTERS["devices"], COUNTERS["collectives"] = cached
    note_hit(trace_hash(key))
    start = time.perf_counter()
    outs = executable(*buffers, *packs)
    COUNTERS["execute_time"] += time.perf_counter() - start
    COUNTERS["executions"] += 1
    return outs


def cache_size() -> int:
    """How many compiled traces are cached."""
    return len(_cache)


def clear_cache() -> None:
    """Drop every compiled executable (the next barrier of each trace recompiles)."""
    _cache.clear()
