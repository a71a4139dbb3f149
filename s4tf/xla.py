"""Observability of the lazy XLA backend: ``s4tf.xla.metrics()`` and ``reset_metrics()``.

Importing this module does not import JAX; the counters simply stay at zero
until the ``"xla"`` backend is used.
"""

from __future__ import annotations

__all__ = ["RecompilationWarning", "metrics", "reset_metrics"]

# Every counter with its value before anything ran (the backend's COUNTERS start here).
ZERO_METRICS = {
    "compiles": 0, "cache_hits": 0, "traced_ops": 0, "executions": 0, "compile_time": 0.0,
    "execute_time": 0.0, "graph_time": 0.0, "donated_buffers": 0, "devices": 1,
    "collectives": (),
}


class RecompilationWarning(UserWarning):
    """One place in the program keeps compiling new XLA traces (shapes, dtypes or ops change).

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.xla.RecompilationWarning)  # make it fatal
    """


def _loaded_metrics():
    import sys

    return sys.modules.get("s4tf.backends.xla.metrics")


def metrics() -> dict:
    """Counters of the lazy backend since the last :func:`reset_metrics`.

    Returns
    -------
    dict
        ``compiles`` (graphs compiled by XLA), ``cache_hits`` (graphs found
        compiled), ``traced_ops`` (IR nodes recorded), ``executions`` (compiled
        graphs run), ``compile_time`` / ``execute_time`` / ``graph_time``
        (seconds spent compiling, dispatching, and collecting + hashing graphs)
        ``donated_buffers`` (input buffers handed to XLA for reuse), ``devices``
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
    module = _loaded_metrics()
    return module.metrics() if module is not None else dict(ZERO_METRICS)


def reset_metrics() -> None:
    """Zero the lazy backend's counters (and its recompilation-warning history).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.xla.reset_metrics()
    >>> s4tf.xla.metrics()["compiles"]
    0
    """
    module = _loaded_metrics()
    if module is not None:
        module.reset_metrics()
