"""What batching rules share: moving the batch axis, and rules written once for many primitives.

A batching rule (``primitive(..., batch=rule)``, :mod:`s4tf.ops.primitive`)
receives the arguments with the batch tracers of one :func:`s4tf.vmap` level
unwrapped and ``dims``, the axis of each that holds the batch (``None``: the
argument is the same for every example), and returns ``(out, out_dim)``. Rules
move axes only when they must, as JAX's do: an elementwise op whose batched
operands agree on the batch axis runs as it is.

Rules are written with primitives, so a rule applied to values being
differentiated is differentiated in turn, and under a second ``vmap`` it is
batched again.

The rules and helpers here (one place for each idea):

* :func:`move_axis_to_front`, :func:`move_axis`, :func:`batch_size`;
* :func:`broadcast_batch`: every argument with the batch in front, the
  unbatched ones broadcast to it (concat needs them all alike);
* :func:`align_batched`: batched arguments with the batch in front and 1s
  inserted so that NumPy broadcasting meets the unbatched ones where the
  unbatched op would;
* :data:`elementwise` (and :func:`elementwise_apply`): the rule of every
  elementwise primitive;
* :data:`reduction`: the rule of reductions over ``axis`` (``keepdims``);
* :func:`fold_leading_axis`: a rule for ops with a leading batch (N) axis of
  their own (convolutions, pools): the vmap batch is folded into it.
"""

from __future__ import annotations

from ..tensor import Tensor
from .broadcasting import broadcast_to_, reduction_batch
from .primitive import GenericRule
from .shapes import _reshape, _transpose, move_axis_to_front, shape_of

__all__ = ["align_batched", "batch_size", "broadcast_batch", "elementwise", "elementwise_apply",
           "fold_leading_axis", "move_axis", "move_axis_to_front", "not_mapped", "reduction"]

#: The axis of an argument that is the same for every example (JAX's ``not_mapped``).
not_mapped = None

#: The rule of reductions over ``axis`` with ``keepdims`` (reduce_sum, reduce_max, ...):
#: the batch axis is skipped, never moved. Defined beside ``reduce_sum``.
reduction = reduction_batch


def batch_size(args, dims) -> int:
    """The size of the batch: the length of the first batched argument's batch axis.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import batch_size
    >>> batch_size((2.0, s4tf.zeros([3, 5])), (None, 1))
    5
    """
    for arg, d in zip(args, dims, strict=True):
        if d is not None:
            return shape_of(arg)[d]
    raise ValueError("batch_size: no argument is batched (every dim is None).")


def move_axis(x, source: int, destination: int):
    """``x`` with axis ``source`` moved to ``destination`` (the others keep their order).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import move_axis
    >>> move_axis(s4tf.zeros([2, 3, 4]), 0, 2).shape
    (3, 4, 2)
    """
    if source == destination:
        return x
    rank = len(shape_of(x))
    order = [i for i in range(rank) if i != source]
    order.insert(destination, source)
    return _transpose(x, perm=tuple(order))


def broadcast_batch(args, dims, size: int) -> list:
    """Every tensor argument with a batch axis of ``size`` in front (Python numbers as they are).

    Batched arguments have their batch axis moved to the front; unbatched
    tensors are broadcast to ``(size, *shape)``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import broadcast_batch
    >>> [x.shape for x in broadcast_batch([s4tf.zeros([3, 4]), s4tf.ones([3])], [1, None], 4)]
    [(4, 3), (4, 3)]
    """
    out = []
    for arg, d in zip(args, dims, strict=True):
        if d is not None:
            out.append(move_axis_to_front(arg, d))
        elif not isinstance(arg, Tensor):
            out.append(arg)
        else:
            out.append(broadcast_to_(arg, shape=(size, *shape_of(arg))))
    return out


def align_batched(args, dims, rank: int) -> list:
    """Batched arguments as ``(batch, 1, ..., 1, *example)`` of rank ``rank + 1``; others as they are.

    ``rank`` is the rank of the unbatched op's broadcast result: NumPy then
    broadcasts the unbatched arguments against the example axes, exactly as
    without the batch.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import align_batched
    >>> [x.shape for x in align_batched([s4tf.zeros([3, 5]), s4tf.ones([2, 3])], [1, None], 2)]
    [(5, 1, 3), (2, 3)]
    """
    out = []
    for arg, d in zip(args, dims, strict=True):
        if d is not None:
            arg = move_axis_to_front(arg, d)
            shape = shape_of(arg)
            if len(shape) - 1 < rank:
                arg = _reshape(arg, shape=(shape[0], *(1,) * (rank + 1 - len(shape)), *shape[1:]))
        out.append(arg)
    return out


def elementwise_apply(primitive, args, dims, **params):
    """``primitive`` applied to batched operands that broadcast elementwise: ``(out, out_dim)``.

    When every batched operand has the batch on one axis and the full rank, and
    the unbatched ones broadcast clear of it, the op runs as it is; otherwise
    the batch goes in front (:func:`align_batched`).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import elementwise_apply
    >>> out, d = elementwise_apply(s4tf.ops.add, (s4tf.zeros([3, 2]), s4tf.ones([3])), (1, None))
    >>> out.shape, d
    ((2, 3), 0)
    """
    ranks = [len(shape_of(a)) - (d is not None) for a, d in zip(args, dims, strict=True)]
    rank = max(ranks)
    first = next(d for d in dims if d is not None)
    if all(r == rank and d == first if d is not None else first <= rank - r
           for d, r in zip(dims, ranks, strict=True)):
        return primitive(*args, **params), first
    return primitive(*align_batched(args, dims, rank), **params), 0


#: The batching rule of every elementwise primitive (``batch=elementwise``).
elementwise = GenericRule(elementwise_apply)


def _fold(positions, primitive, args, dims, **params):
    size = batch_size(args, dims)
    folded = list(args)
    for i in positions:
        x = args[i]
        x = move_axis_to_front(x, dims[i]) if dims[i] is not None else broadcast_to_(
            x, shape=(size, *shape_of(x)))
        shape = shape_of(x)
        folded[i] = _reshape(x, shape=(size * shape[1], *shape[2:]))
    for i, d in enumerate(dims):
        if d is not None and i not in positions:
            raise NotImplementedError(
                f"{primitive.name}: its batching rule folds the batch into the leading axis of "
                f"arguments {tuple(positions)}, but argument {i} is batched too; give "
                f"{primitive.name} a batching rule of its own for that case."
            )
    out = primitive(*folded, **params)
    shape = shape_of(out)
    return _reshape(out, shape=(size, shape[0] // size, *shape[1:])), 0


def fold_leading_axis(positions=(0,)) -> GenericRule:
    """A rule for ops whose arguments at ``positions`` lead with a batch (N) axis of their own.

    The vmap batch is folded into that axis (``(B, N, ...) -> (B*N, ...)``;
    unbatched arguments at ``positions`` are broadcast first), the op runs
    once, and its result's leading axis is unfolded to ``(B, N', ...)``. An
    argument batched outside ``positions`` raises, naming the op.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.batching_helpers import fold_leading_axis
    >>> rule = fold_leading_axis((0,)).bound(s4tf.ops.neg)
    >>> out, d = rule((s4tf.ones([2, 3, 4]),), (1,))
    >>> out.shape, d
    ((3, 2, 4), 0)
    """
    positions = tuple(positions)
    return GenericRule(lambda primitive, args, dims, **params: _fold(
        positions, primitive, args, dims, **params))
