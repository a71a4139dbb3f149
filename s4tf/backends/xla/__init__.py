"""The lazy tensor backend on JAX/XLA, and its public face ``s4tf.xla``.

This package is what ``s4tf.xla`` names: the lazy backend's counters
(:func:`metrics`, :func:`reset_metrics`) and its warning. Importing it imports
no JAX; the backend itself (:mod:`.backend`) is imported by
``s4tf.set_backend("xla")`` on first use, and JAX is configured
(:mod:`.jax_settings`) when the backend first needs it.

How the backend works, bottom up (each module imports only those above it in
this list):

* :mod:`.counters`: counters, the recompilation warning, ``S4TF_DEBUG`` output;
* :mod:`.lazy`: :class:`~.lazy.LazyArray`, a pending IR node or a buffer;
* :mod:`.jax_settings`, :mod:`.nn_kernels`, :mod:`.kernels`: JAX configured
  once, and the JAX kernel table that replays recorded nodes;
* :mod:`.shapes`: memoised ``jax.eval_shape`` for the shapes of new nodes;
* :mod:`.layouts`: what a trace and the compiler read of device layouts;
* :mod:`.compiler`: a pending graph's replay under ``jax.jit``, cached by key;
* :mod:`.graph`: recording, and at a barrier ordering, keys and liveness;
* :mod:`.recording`: the kernel table whose every method records a node;
* :mod:`.sharding`: placing buffers on device meshes;
* :mod:`.backend`: the :class:`~.backend.XLABackend` object;
* :mod:`.lowering`: a step's pending graph lowered to StableHLO (:func:`lower`);
* :mod:`.capture`: a barrier's trace kept for replay (the backend half of
  ``s4tf.xla.compile``, which lives in :mod:`s4tf.capture` with
  :class:`~s4tf.capture.CaptureMismatchWarning`: they know models and
  optimizers, so ``s4tf/__init__.py`` attaches them to this namespace).
"""

from __future__ import annotations

from .counters import ZERO_METRICS, RecompilationWarning, metrics, reset_metrics

__all__ = ["ZERO_METRICS", "RecompilationWarning", "lower", "metrics", "reset_metrics"]


def lower(fn, *args, **kwargs) -> str:
    """The StableHLO text of the step ``fn(*args, **kwargs)`` compiles on the xla backend.

    The lazy backend records ``fn``'s operations into one pending graph, and a
    barrier hands that graph to XLA as one program: this is that program (the
    paper's Figure 4), as ``jax.jit(f).lower(...).as_text()`` shows a JAX
    function's. Unlike JAX's, the step is found by running it: ``fn`` runs once
    on the xla backend (pending work from before is run first, so the text
    holds ``fn``'s step alone) with the effects of an ordinary call (an
    optimizer update inside consumes the model it updates); its results are
    computed and then dropped. Only what the step's results keep is in the
    program: work whose value nobody holds is left out, as at a barrier.
    Arguments must be on the xla backend (``s4tf.to_backend(value, "xla")``).

    Parameters
    ----------
    fn : callable
        The step: any function of s4tf values, a training step included
        (``value_with_gradient`` and ``opt.update`` inside).
    *args, **kwargs
        Its arguments.

    Returns
    -------
    str
        The StableHLO module, as MLIR text.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.to_backend(s4tf.ones([4, 3]), "xla")
    >>> text = s4tf.xla.lower(lambda x: s4tf.tanh(x).sum(), x)
    >>> "stablehlo.tanh" in text and "stablehlo.reduce" in text
    True
    """
    # The lowering needs JAX; importing s4tf.xla must not import it.
    from .lowering import lowered

    return lowered(fn, *args, **kwargs).as_text()
