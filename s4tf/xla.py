"""The lazy XLA backend's public names: ``metrics()``, ``reset_metrics()`` and ``compile()``.

Importing this module does not import JAX; the counters simply stay at zero
until the ``"xla"`` backend is used.
"""

from __future__ import annotations

from .capture.mismatch import CaptureMismatchWarning

__all__ = ["CaptureMismatchWarning", "RecompilationWarning", "compile", "metrics", "reset_metrics"]

# Every counter with its value before anything ran (the backend's COUNTERS start here).
ZERO_METRICS = {
    "compiles": 0, "cache_hits": 0, "traced_ops": 0, "executions": 0, "compile_time": 0.0,
    "execute_time": 0.0, "graph_time": 0.0, "donated_buffers": 0, "devices": 1,
    "collectives": (), "replays": 0,
}


class RecompilationWarning(UserWarning):
    """One place in the program keeps compiling new XLA traces (shapes, dtypes or ops change).

    Examples
    --------
    >>> import warnings, s4tf
    >>> warnings.simplefilter("error", s4tf.xla.RecompilationWarning)  # make it fatal
    """


def compile(fn=None, *, verify_every: int = 100):  # noqa: A001 (the name jax.jit's users expect)
    """A training step that replays its compiled XLA program without re-running its Python.

    The first call runs ``fn`` as usual on the lazy backend and keeps its
    compiled trace. Later calls whose arguments have the same structure,
    shapes and dtypes replay that program directly: the Python body does not
    run, no op is traced. Python floats passed as arguments (a decayed
    learning rate) are inputs of the program, so changing them neither
    re-traces nor gives stale numbers; ints, strings and other static values
    are part of the signature (a new value captures again).

    ``fn`` takes and returns tensors, Python numbers and Differentiable values
    (models, tangent vectors) and may call :func:`s4tf.value_with_gradient`
    and ``opt.update``: the optimizer's slots and step count are carried
    through the program (after ``N`` calls, ``opt.step`` grew by ``N`` per
    update in ``fn``), as are ``State`` cells (BatchNorm statistics) of the
    arguments and draws from :mod:`s4tf.random` (drawn again on each replay).
    Results equal running ``fn`` uncaptured.

    Every ``verify_every``-th call runs the body again and compares the new
    trace with the captured one; if Python took another path (a branch on a
    global, an attribute), :class:`CaptureMismatchWarning` names what changed
    and the new trace is used. As with ``jax.jit``, Python side effects in
    ``fn`` (printing, appending to a list) happen only on calls that run the
    body, and tensors ``fn`` reads from globals or closures are inputs as
    they were when captured (replacing them captures again).

    Parameters
    ----------
    fn : callable
        The step. Every tensor it takes must be on the xla backend. Without
        ``fn``, returns a decorator.
    verify_every : int
        Run the body and compare traces every this many calls (>= 1).

    Returns
    -------
    CapturedStep
        Callable like ``fn``; ``calls`` and ``body_runs`` count its calls.

    Examples
    --------
    >>> import s4tf
    >>> with s4tf.backend("xla"):
    ...     model = s4tf.layers.Dense(3, 2)
    ...     x, y = s4tf.ones([4, 3]), s4tf.zeros([4, 2])
    >>> opt = s4tf.optimizers.SGD(model, learning_rate=0.1, momentum=0.9)
    >>> @s4tf.xla.compile
    ... def train_step(model, x, y, learning_rate):
    ...     loss, grads = s4tf.value_with_gradient(
    ...         model, of=lambda m: ((m(x) - y) ** 2).mean())
    ...     opt.learning_rate = learning_rate
    ...     return opt.update(model, grads), loss
    >>> for i in range(5):
    ...     model, loss = train_step(model, x, y, 0.1 / (1 + i))
    >>> opt.step, train_step.body_runs       # one run of the body, four replays
    (5, 1)
    """
    if fn is None:
        return lambda f: compile(f, verify_every=verify_every)
    from .backends.base import get_backend_object
    from .capture.step import CapturedStep

    get_backend_object("xla")  # the ImportError that names the extra to install, if JAX is missing
    return CapturedStep(fn, verify_every)


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
        :mod:`s4tf.distributed` strategy), ``collectives`` (the collective
        operations XLA inserted into that graph, e.g. ``("all-reduce",)`` for
        the gradient sum of data-parallel training; empty on one device) and
        ``replays`` (calls of captured steps, :func:`compile`, that ran their
        compiled program without tracing).

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
