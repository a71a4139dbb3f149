"""Captured steps: ``s4tf.xla.compile(fn)`` replays a step's compiled program without its Python.

:mod:`.calls` reads a call's inputs and their signature, :mod:`.scalars`
follows the Python numbers a step computes, :mod:`.recording` runs the body
under the lazy backend's listeners and learns where every input of the
compiled program comes from and where every output goes, :mod:`.replay` feeds
the program new inputs, and :mod:`.step` decides, call by call, whether to
replay, to verify or to capture again.

:func:`compile` and :class:`CaptureMismatchWarning` are public as
``s4tf.xla.compile`` and ``s4tf.xla.CaptureMismatchWarning``: they know
models and optimizers, so they sit above the backend package, and
``s4tf/__init__.py`` attaches them to its namespace. Importing this package
imports no JAX. :mod:`.mutation` finds arguments a body changed in place and
raises :class:`CaptureError` (``s4tf.xla.CaptureError``).
"""

from __future__ import annotations

from .mismatch import CaptureMismatchWarning
from .mutation import CaptureError

__all__ = ["CaptureError", "CaptureMismatchWarning", "compile"]


def compile(fn=None, *, verify_every: int = 100, verify_first: int = 2):  # noqa: A001 (the name jax.jit's users expect)
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

    The first ``verify_first`` calls after a capture (calls 2 and 3) and
    every ``verify_every``-th call run the body again and compare the new
    trace with the captured one; if Python took another path (a branch on a
    global, an attribute), :class:`CaptureMismatchWarning` names what changed
    and the new trace is used; a number the capture could not follow (a
    Python random draw, ``len(str(lr))``) that changed makes the step run its
    body on every call. A body that changes an argument in place (an item, an
    attribute) is refused with :class:`CaptureError`, on any call that runs
    it: a replay would not make the change. As with ``jax.jit``, Python side effects in
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
    verify_first : int
        Run the body and compare traces on this many calls after each
        capture (>= 0), so what the capture cannot follow shows early.

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
    >>> opt.step, train_step.body_runs       # the capture, two checks, two replays
    (5, 3)
    """
    if fn is None:
        return lambda f: compile(f, verify_every=verify_every, verify_first=verify_first)
    from ..backends.base import get_backend_object
    from .step import CapturedStep  # JAX's modules come with it: imported on first use

    get_backend_object("xla")  # the ImportError that names the extra to install, if JAX is missing
    return CapturedStep(fn, verify_every, verify_first)
