"""The step a function compiles, made visible: its pending graph lowered to StableHLO.

:func:`lowered` runs the function on the lazy backend after a barrier (so only
its own work is pending), collects the pending graph as a barrier would
(:func:`.graph.collect`: the same order, shared subgraphs, outputs and
donations), and lowers the compiler's replay of it with ``jax.jit(...).lower``:
the program XLA is given for that step, before XLA's own passes. Then it runs
the graph as the barrier would have, so the function's results and effects
(an optimizer's update) are those of an ordinary call. ``s4tf.xla.lower``
returns its text; the benchmarks read its compiled memory.
"""

from __future__ import annotations

import jax

from ..base import backend
from . import graph
from .compiler import _replay

__all__ = ["lowered"]


def lowered(fn, *args, **kwargs):
    """``jax.stages.Lowered`` of the step ``fn(*args, **kwargs)`` records on the lazy backend.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.backends.xla.lowering import lowered
    >>> x = s4tf.to_backend(s4tf.ones([2, 3]), "xla")
    >>> step = lowered(lambda x: s4tf.exp(x).sum(), x)
    >>> step.compile().memory_analysis() is not None
    True
    """
    graph.barrier()  # pending work from before belongs to no step of fn's
    with backend("xla"):
        result = fn(*args, **kwargs)
    trace = graph.collect()  # ``result`` is alive here: its arrays are the step's outputs
    if trace is None:
        raise ValueError(
            f"s4tf.xla.lower: {getattr(fn, '__name__', 'the function')} recorded no operation on "
            "the xla backend, so there is no step to show. Its tensors live on another backend "
            "or it computes nothing: move its arguments with s4tf.to_backend(value, 'xla')."
        )
    try:
        replay = _replay(trace.program, trace.n_slots, trace.parameter_slots, trace.out_slots)
        return jax.jit(replay, donate_argnums=trace.donate).lower(*trace.arguments)
    finally:
        # What a barrier would do next: the results are materialised as in a plain call.
        graph.execute(trace)
        del result
