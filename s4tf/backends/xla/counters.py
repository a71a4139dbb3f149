"""Counters of the lazy backend, the recompilation warning and ``S4TF_DEBUG`` output.

The counters make the invisible visible (as tinygrad's ``DEBUG=n``): how many
ops were traced, how many graphs were compiled or found in the cache, how many
were executed and how long each stage took. This module imports no JAX: the
public ``s4tf.xla`` namespace reads it, and its counters stay at zero until the
``"xla"`` backend is used.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import Counter

from ...user_frames import user_location, user_stacklevel

__all__ = ["COUNTERS", "ZERO_METRICS", "RecompilationWarning", "metrics", "note_compile",
           "reset_metrics"]

# Every counter with its value before anything ran.
ZERO_METRICS = {
    "compiles": 0, "cache_hits": 0, "traced_ops": 0, "executions": 0, "compile_time": 0.0,
    "execute_time": 0.0, "graph_time": 0.0, "donated_buffers": 0, "devices": 1,
    "collectives": (), "persistent_cache_hits": 0, "replays": 0,
}
COUNTERS: dict = dict(ZERO_METRICS)

# A place that compiles this many distinct traces is warming up (the first step
# often differs from the next, a last smaller batch adds one more); past it, warn.
WARN_AFTER = int(os.environ.get("S4TF_XLA_RECOMPILE_WARN_AFTER", "4"))
# Per line of user code: how many traces it compiled and the summary of the
# last one (the warning names what changed since it); not every summary, which
# would grow with each compile of a program that keeps recompiling.
_sites: dict[str, tuple[int, dict]] = {}


class RecompilationWarning(UserWarning):
    """One place in the program keeps compiling new XLA traces (shapes, dtypes or ops change).

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.xla.RecompilationWarning)  # make it fatal
    """


def metrics() -> dict:
    """Counters of the lazy backend since the last :func:`reset_metrics`.

    Returns
    -------
    dict
        ``compiles`` (graphs compiled by XLA), ``cache_hits`` (graphs found
        compiled), ``traced_ops`` (IR nodes recorded), ``executions`` (compiled
        graphs run), ``compile_time`` / ``execute_time`` / ``graph_time``
        (seconds spent compiling, dispatching, and collecting + hashing graphs;
        a compile that JAX's persistent cache served only loads the program)
        ``persistent_cache_hits`` (of those compiles, how many XLA skipped
        because an earlier process had compiled the same program: see
        ``S4TF_CACHE_DIR``), ``donated_buffers`` (input buffers handed to XLA for reuse), ``devices``
        (how many devices the last graph ran on: more than one under a
        :mod:`s4tf.distributed` strategy) and ``collectives`` (the collective
        operations XLA inserted into that graph, e.g. ``("all-reduce",)`` for
        the gradient sum of data-parallel training; empty on one device).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.xla.reset_metrics()
    >>> with s4tf.backend("xla"):
    ...     y = s4tf.ones([3]) * 2
    >>> s4tf.xla.metrics()["executions"]      # nothing ran yet: y is pending
    0
    >>> y.tolist(), s4tf.xla.metrics()["executions"]
    ([2.0, 2.0, 2.0], 1)
    """
    return dict(COUNTERS)


def reset_metrics() -> None:
    """Zero the lazy backend's counters (and its recompilation-warning history).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.xla.reset_metrics()
    >>> s4tf.xla.metrics()["compiles"]
    0
    """
    COUNTERS.update(ZERO_METRICS)
    _sites.clear()


def debug_enabled() -> bool:
    return os.environ.get("S4TF_DEBUG", "") not in ("", "0")


def summarize(key) -> dict:
    """What a trace key is made of: input signatures, op counts, dtypes."""
    inputs, ops, dtypes = [], Counter(), set()
    for entry in key[0]:
        if entry[0] == "P":
            inputs.append((entry[1], entry[2]))
            dtypes.add(entry[2])
        else:
            ops[entry[0]] += 1
    return {"inputs": inputs, "ops": ops, "dtypes": dtypes}


def describe_change(old: dict, new: dict) -> str:
    """What differs between two :func:`summarize` results, in words (for warnings).

    Examples
    --------
    >>> from s4tf.backends.xla.counters import describe_change, summarize
    >>> old = summarize(((("P", (2,), "float32"), ("add", (), (0, 0))),))
    >>> new = summarize(((("P", (3,), "float32"), ("add", (), (0, 0))),))
    >>> describe_change(old, new)
    'input shapes changed ((2,) -> (3,))'
    """
    changes = []
    shape_pairs = [
        f"{a[0]} -> {b[0]}" for a, b in zip(old["inputs"], new["inputs"], strict=False) if a[0] != b[0]
    ]
    if shape_pairs:
        changes.append("input shapes changed (" + ", ".join(shape_pairs[:4]) + ")")
    if len(old["inputs"]) != len(new["inputs"]):
        changes.append(f"number of inputs changed ({len(old['inputs'])} -> {len(new['inputs'])})")
    if old["dtypes"] != new["dtypes"]:
        changes.append(f"dtypes changed ({sorted(old['dtypes'])} -> {sorted(new['dtypes'])})")
    added = new["ops"] - old["ops"]
    removed = old["ops"] - new["ops"]
    if added or removed:
        parts = [f"+{n} {op}" for op, n in added.items()] + [f"-{n} {op}" for op, n in removed.items()]
        changes.append("ops changed (" + ", ".join(parts[:8]) + ")")
    return "; ".join(changes) or "static parameters of some op changed (e.g. an axis or a slice)"


def trace_name(trace_hash: int) -> str:
    """A short name for a trace in ``S4TF_DEBUG`` output (stable within a process)."""
    return f"{trace_hash & 0xFFFFFFFFFFFF:012x}"


def note_compile(key, trace_hash: int, seconds: float, n_ops: int) -> None:
    """Count a compile, print it under ``S4TF_DEBUG=1`` and warn on repeated recompiles.

    Compiles are counted per line of user code (the first frame outside s4tf),
    and the warning points there too.
    """
    site = user_location()
    COUNTERS["compiles"] += 1
    COUNTERS["compile_time"] += seconds
    if debug_enabled():
        print(f"s4tf.xla: compile trace {trace_name(trace_hash)} ({n_ops} ops) at {site} in {seconds * 1e3:.1f} ms",
              file=sys.stderr)
    count, previous = _sites.get(site, (0, None))
    summary = summarize(key)
    count += 1
    _sites[site] = (count, summary)
    # Warn once past the warm-up, then each time the count doubles (not every step).
    if count > WARN_AFTER and (count == WARN_AFTER + 1 or count & (count - 1) == 0):
        change = describe_change(previous, summary) if previous else "nothing: it is the first"
        warnings.warn(
            f"s4tf xla: {site} has compiled {count} different traces; the latest differs from "
            f"the one before in: {change}. Each new trace costs an XLA compile. Keep shapes "
            "and dtypes fixed between steps (pad or drop the last batch, pass changing numbers "
            "as tensors or Python floats, not as shapes or static arguments). Set S4TF_DEBUG=1 "
            "to print every compile with its trace hash.",
            RecompilationWarning,
            stacklevel=user_stacklevel(),  # the user's line, not s4tf's
        )


def note_hit(trace_hash: int) -> None:
    COUNTERS["cache_hits"] += 1
    if debug_enabled():
        print(f"s4tf.xla: cache hit trace {trace_name(trace_hash)}", file=sys.stderr)
