"""Batching: the interpreter behind :func:`s4tf.vmap`.

A :class:`BatchTrace` is one level of vectorisation, as a reverse or forward
trace is one level of differentiation (:mod:`s4tf.ops.tracer`). A
:class:`BatchTracer` holds a value of the whole batch (``_primal``, a Tensor or
a lower level's tracer) and the axis of it that is the batch
(``_batch_dim``); its ``shape`` is one example's, without that axis, and so is
the shape every tracer above it reports. A primitive applied to batch tracers
calls its batching rule (``primitive(..., batch=rule)``) on the unwrapped
values and wraps the result: the function runs once for the whole batch,
never once per example.

Levels compose: under ``vmap(gradient(f))`` the reverse trace records ops on
batch tracers and its backward pass is batched; under ``gradient(vmap(f))``
the batching rules run on reverse tracers and are recorded.
"""

from __future__ import annotations

from ..ops.shapes import shape_of
from ..ops.tracer import Trace, Tracer
from ..user_frames import user_location

__all__ = ["BatchTrace", "BatchTracer"]

_new = object.__new__


def _refusal(operation: str):
    """A method that raises TypeError: ``operation`` needs one number, a batch has many."""

    def refuse(self, *args, **kwargs):
        raise TypeError(
            f"{operation} of a value batched by s4tf.vmap, at {user_location()}: it holds one "
            "value per example, and the function runs once for the whole batch. Keep it a "
            "tensor (s4tf ops work per example), or read it after vmap returns."
        )

    refuse.__doc__ = f"Raises TypeError: {operation} needs one value; a batch has one per example."
    return refuse


class BatchTracer(Tracer):
    """A value of a whole batch at one vmap level: ``_primal`` with the batch on axis ``_batch_dim``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.autodiff.batching import BatchTrace, BatchTracer
    >>> x = BatchTracer(BatchTrace(4), s4tf.zeros([3, 4]), 1)
    >>> x.shape, (x * 2.0)._primal.shape
    ((3,), (3, 4))
    """

    __slots__ = ("_batch_dim",)
    hides_axis = True

    # Reading numbers needs one example's; the batch's would leak the batch axis.
    numpy = _refusal("Tensor.numpy()")
    item = _refusal("Tensor.item()")
    tolist = _refusal("Tensor.tolist()")
    __array__ = _refusal("Converting to a NumPy array")
    __float__ = _refusal("float()")
    __int__ = _refusal("int()")
    __index__ = _refusal("Using as an index")

    # __new__, not __init__: see Tracer (s4tf.ops.tracer).
    def __new__(cls, trace, primal, batch_dim):
        self = _new(cls)
        self._trace = trace
        self._primal = primal
        self._batch_dim = batch_dim
        return self

    def with_primal(self, primal):
        """The batched value of this level whose whole-batch value is ``primal``."""
        return self if primal is self._primal else BatchTracer(self._trace, primal, self._batch_dim)

    @property
    def shape(self):
        shape = shape_of(self._primal)
        d = self._batch_dim
        return shape[:d] + shape[d + 1:]


class BatchTrace(Trace):
    """One level of vectorisation over a batch of ``size`` examples.

    ``process`` unwraps this level's tracers and calls the primitive's batching
    rule; a primitive without one raises ``NotImplementedError`` naming it.
    """

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def process(self, primitive, args, params):
        values, dims = [], []
        for arg in args:
            if type(arg) is BatchTracer and arg._trace is self:
                values.append(arg._primal)
                dims.append(arg._batch_dim)
            else:
                values.append(arg)
                dims.append(None)
        rule = primitive.batch
        if rule is None:
            raise NotImplementedError(
                f"s4tf.vmap: the primitive {primitive.name!r} has no batching rule, so it cannot "
                f"run on a batched value. Give it one (primitive({primitive.name!r}, ..., "
                "batch=rule); see s4tf/ops/batching_helpers.py), or call it outside vmap."
            )
        out, out_dim = rule(tuple(values), tuple(dims), **params)
        if type(out) is tuple:
            return tuple(self.wrap(o, d) for o, d in zip(out, out_dim, strict=True))
        return self.wrap(out, out_dim)

    def wrap(self, value, batch_dim):
        """``value`` as a batched value of this level (itself when ``batch_dim`` is None)."""
        if batch_dim is None:
            return value
        return BatchTracer(self, value, batch_dim)

    def __repr__(self):
        return f"<BatchTrace level={self.level} size={self.size}>"

