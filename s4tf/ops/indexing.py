"""Indexing, slicing and gathers, with in-place ("inout") pullbacks.

The cotangent of ``x[key]`` is not a dense tensor of zeros with ``g`` at
``key``: the rule returns an :class:`IndexAdd`, and the backward pass adds ``g``
into the one cotangent buffer it owns for ``x``. Differentiating k reads of an
n-element value so costs O(n + k), not O(n * k) (the MLSys paper, section 4.3).

Index tensors (gathers, ``one_hot``, and so ``Embedding`` and the int labels of
``softmax_cross_entropy``) are range-checked, never wrapped or clamped: eager
backends raise :class:`IndexRangeError` naming the bad values and the valid
range. The lazy backend cannot read the indices without running the graph, so
there an out-of-range index gives a row of NaN (for floating results; JAX's
fill value otherwise), never a plausible number; with ``S4TF_CHECKS=1`` it
reads them on the host and raises as the eager backends do.
"""

from __future__ import annotations

import numbers
import os

import numpy as np

from ..creation import zeros_like
from ..tensor import Tensor, from_numpy
from .batching_helpers import batch_size, broadcast_batch, move_axis, move_axis_to_front
from .elementwise import add, cast, equal, greater_equal, less, logical_and, where
from .primitive import primitive
from .shapes import _reshape, expand_dims, shape_of
from .tracer import Tracer, innermost

__all__ = [
    "IndexAdd", "IndexRangeError", "check_indices", "checks_enabled", "gather", "getitem",
    "index_add", "one_hot", "scatter_add",
]


class IndexRangeError(IndexError, ValueError):
    """An index tensor holds values outside the valid range (both an IndexError and a ValueError).

    Examples
    --------
    >>> import s4tf
    >>> try:
    ...     s4tf.gather(s4tf.Tensor([1.0, 2.0]), s4tf.Tensor([2]))
    ... except IndexError as error:
    ...     print(error)
    gather: indices must lie in [0, 2) (axis 0 has size 2), got values from 2 to 2.
    """


def checks_enabled() -> bool:
    """Whether ``S4TF_CHECKS=1`` asks the lazy backend to check indices on the host.

    Examples
    --------
    >>> from s4tf.ops.indexing import checks_enabled
    >>> checks_enabled() in (True, False)
    True
    """
    return os.environ.get("S4TF_CHECKS", "").strip() not in ("", "0")


def check_indices(indices, low: int, high: int, owner: str, what: str = "indices",
                  hint: str = "", context: str = "") -> None:
    """Raise :class:`IndexRangeError` unless every value of ``indices`` is in ``[low, high)``.

    Eager backends always check (one host read of the index tensor). The lazy
    backend checks only with ``S4TF_CHECKS=1``, since reading the indices runs
    the pending graph; without it the kernels turn out-of-range rows into NaN.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.indexing import check_indices
    >>> check_indices(s4tf.Tensor([0, 2]), 0, 3, "Embedding")
    """
    if isinstance(indices, Tensor):
        indices = innermost(indices)
        backend = indices._backend
        if (backend.lazy and not checks_enabled()) or not backend.readable(indices._data):
            return  # unchecked: out-of-range rows read NaN (the JAX kernels)
        host = indices.numpy()
    else:
        host = np.asarray(indices)
    if host.size == 0:
        return
    lo, hi = int(host.min()), int(host.max())
    if lo < low or hi >= high:
        raise IndexRangeError(
            f"{owner}: {what} must lie in [{low}, {high}){context}, got values from {lo} to {hi}."
            + (f" {hint}" if hint else "")
        )


class IndexAdd:
    """A cotangent or tangent that is ``value`` added at ``index`` of a zero tensor.

    What the rules of ``getitem``, ``gather``, ``index_add``, ``scatter_add`` and
    ``concat`` return. ``axis`` is None for a static key (ints, slices) and the
    gathered axis for a tensor of indices. The engines add ``value`` into one
    buffer they own ("inout"), so k reads of an n-element value cost O(n + k)
    instead of O(n * k) (the MLSys paper, section 4.3).

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops.indexing import IndexAdd
    >>> IndexAdd((slice(1, 2),), s4tf.Tensor([5.0])).dense(s4tf.zeros([3])).tolist()
    [0.0, 5.0, 0.0]
    """

    __slots__ = ("index", "value", "axis")

    def __init__(self, index, value, axis=None):
        self.index = index
        self.value = value
        self.axis = axis

    def added_to(self, total):
        """The functional form: ``total`` with ``value`` added at ``index`` (differentiable)."""
        if self.axis is None:
            return index_add(total, self.value, key=self.index)
        return scatter_add(total, self.index, self.value, axis=self.axis)

    def dense(self, like):
        """``like``'s zeros with ``value`` added at ``index``."""
        return self.added_to(zeros_like(like))

    def add_into(self, buffer) -> bool:
        """Add ``value`` into ``buffer`` in place, if both allow it; whether it did.

        Only for a buffer the caller owns (made by it, seen by nobody else), and
        only when ``buffer`` and ``value`` are concrete tensors of one dtype on an
        eager backend. Otherwise (a lazy backend, or values being differentiated
        again) the caller uses :meth:`added_to`.
        """
        value = self.value
        if not (type(buffer) is Tensor and type(value) is Tensor):
            return False
        backend = buffer._backend
        if (value._backend is not backend or not backend.supports_inplace
                or not isinstance(buffer._data, backend.array_type)
                or buffer._data.dtype != value._data.dtype):
            return False
        index = self.index
        if isinstance(index, Tensor):
            if isinstance(index, Tracer):  # indices batched by s4tf.vmap: one per example
                return False
            index = index._data
        backend.index_add_inplace(buffer._data, index, value._data, self.axis)
        return True


# Batching rules (s4tf.vmap). A static key gets a full slice for the batch, in
# front. A gather or scatter whose indices are batched reads (or writes) the
# examples' tables merged into one along ``axis``: example ``b``'s index ``i``
# becomes ``b * n + i``, one gather for the whole batch; an index outside
# ``[0, n)`` becomes ``B * n``, past the end, so that the lazy backend's NaN rows
# and dropped updates stay what they are instead of reaching another example.
def _selected_rank(shape, key) -> int:
    """The rank of ``x[key]`` for an ``x`` of ``shape`` (read without data)."""
    return np.broadcast_to(np.empty((), np.int8), shape)[key].ndim


def _getitem_batch(args, dims, *, key):
    return getitem_(move_axis_to_front(args[0], dims[0]), key=(slice(None), *key)), 0


def _index_add_batch(args, dims, *, key):
    (x, u), (dx, du) = args, dims
    size = batch_size(args, dims)
    x = broadcast_batch((x,), (dx,), size)[0]
    if du is not None:
        # Updates broadcast against x[key] from the right: 1s between the batch and them.
        u = move_axis_to_front(u, du)
        shape, rank = shape_of(u), _selected_rank(shape_of(x)[1:], key)
        if len(shape) - 1 < rank:
            u = _reshape(u, shape=(size, *(1,) * (rank + 1 - len(shape)), *shape[1:]))
    return index_add(x, u, key=(slice(None), *key)), 0


def _merged_table(x, d, axis, size):
    """``x`` (its batch moved or broadcast beside ``axis``) with the batch merged into ``axis``."""
    x = broadcast_batch((x,), (d,), size)[0]
    x = move_axis(x, 0, axis)
    shape = shape_of(x)
    return _reshape(x, shape=(*shape[:axis], size * shape[axis + 1], *shape[axis + 2:]))


def _offset_indices(i, d, n, size):
    """Batched indices into the merged table: ``b * n + i``, outside ``[0, n)`` past its end."""
    i = move_axis_to_front(i, d)
    rank = len(shape_of(i))
    base = from_numpy(np.arange(size).reshape((size,) + (1,) * (rank - 1)) * n,
                      innermost(i).dtype, like=innermost(i))
    inside = logical_and(greater_equal(i, 0), less(i, n))
    return where(inside, add(i, base), size * n)


def _gather_batch(args, dims, *, axis):
    (x, i), (dx, di) = args, dims
    if di is None:
        return gather_(move_axis_to_front(x, dx), i, axis=axis + 1), 0
    if dx is None:
        # The batched indices' own axes take the gathered axis's place.
        return gather_(x, move_axis_to_front(i, di), axis=axis), axis
    size = batch_size(args, dims)
    table = _merged_table(x, dx, axis, size)
    n = shape_of(table)[axis] // size
    return gather_(table, _offset_indices(i, di, n, size), axis=axis), axis


def _scatter_add_batch(args, dims, *, axis):
    (x, i, u), (dx, di, du) = args, dims
    size = batch_size(args, dims)
    if di is None:
        x, u = broadcast_batch((x, u), (dx, du), size)
        return scatter_add(x, i, u, axis=axis + 1), 0
    table = _merged_table(x, dx, axis, size)
    n = shape_of(table)[axis] // size
    # The updates' batch goes where the batched indices' leading axis lands.
    u = move_axis(broadcast_batch((u,), (du,), size)[0], 0, axis)
    out = scatter_add(table, _offset_indices(i, di, n, size), u, axis=axis)
    shape = shape_of(out)
    return _reshape(out, shape=(*shape[:axis], size, n, *shape[axis + 1:])), axis


getitem_ = primitive(
    "getitem",
    batch=_getitem_batch,
    vjp=(lambda g, x, out, key: IndexAdd(key, g),),
    jvp=(lambda t, x, out, key: getitem_(t, key=key),),
)
index_add = primitive(
    "index_add",
    batch=_index_add_batch,
    vjp=(lambda g, x, u, out, key: g,
         lambda g, x, u, out, key: getitem_(g, key=key)),
    jvp=(lambda t, x, u, out, key: t,
         lambda t, x, u, out, key: IndexAdd(key, t)),
    signature="x, updates, *, key",
    doc="""``x`` with ``updates`` added at the static index ``key``, as a new tensor.

    The functional form of ``x[key] += updates`` (what the derivative of
    ``x[key]`` is made of); ``x`` is not changed.

    Parameters
    ----------
    x : Tensor
    updates : Tensor
        Shaped as ``x[key]`` (or broadcastable to it).
    key : tuple
        Ints, slices, None and ``...``, as in ``x[key]``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops import index_add
    >>> index_add(s4tf.zeros([3]), s4tf.Tensor([5.0]), key=(slice(1, 2),)).tolist()
    [0.0, 5.0, 0.0]
    """,
)
gather_ = primitive(
    "gather",
    batch=_gather_batch,
    vjp=(lambda g, x, i, out, axis: IndexAdd(i, g, axis), None),
    jvp=(lambda t, x, i, out, axis: gather_(t, i, axis=axis), None),
)
scatter_add = primitive(
    "scatter_add",
    batch=_scatter_add_batch,
    vjp=(lambda g, x, i, u, out, axis: g, None,
         lambda g, x, i, u, out, axis: gather_(g, i, axis=axis)),
    jvp=(lambda t, x, i, u, out, axis: t, None,
         lambda t, x, i, u, out, axis: IndexAdd(i, t, axis)),
    signature="x, indices, updates, *, axis",
    doc="""``x`` with each slice of ``updates`` added at its index along ``axis``, as a new tensor.

    Repeated indices add up (the transpose of :func:`gather`, and what its
    derivative is made of); ``x`` is not changed.

    Parameters
    ----------
    x : Tensor
    indices : Tensor
        Integer indices into ``x``'s axis ``axis``.
    updates : Tensor
        Shaped as ``gather(x, indices, axis)``.
    axis : int

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.ops import scatter_add
    >>> scatter_add(s4tf.zeros([3]), s4tf.Tensor([0, 0, 2]), s4tf.Tensor([1.0, 2.0, 3.0]),
    ...             axis=0).tolist()
    [3.0, 0.0, 3.0]
    """,
)


def _is_advanced(part) -> bool:
    return isinstance(part, Tensor | np.ndarray | list)


def _static_part(part, axis_size):
    if isinstance(part, slice):
        return slice(*(None if v is None else int(v) for v in (part.start, part.stop, part.step)))
    if part is None or part is Ellipsis:
        return part
    if isinstance(part, bool | np.bool_):
        raise TypeError("Indexing with a bool is not supported; use s4tf.where(mask, a, b).")
    if isinstance(part, numbers.Integral):
        index = int(part)
        if axis_size is not None and not -axis_size <= index < axis_size:
            raise IndexError(f"index {index} is out of range for an axis of size {axis_size}.")
        return index
    raise TypeError(
        f"Tensors are indexed by ints, slices, None, ... or an int tensor of indices; "
        f"got {type(part).__name__}."
    )


def getitem(x, key):
    """``x[key]``: basic indexing (ints, slices, None, ...) or a gather by int indices.

    Examples
    --------
    >>> import s4tf
    >>> t = s4tf.arange(6).reshape(2, 3)
    >>> t[1, 1:].tolist(), t[s4tf.Tensor([1, 0])].shape
    ([4, 5], (2, 3))
    """
    parts = key if isinstance(key, tuple) else (key,)
    advanced = [i for i, p in enumerate(parts) if _is_advanced(p)]
    if advanced:
        if len(advanced) > 1 or any(
            not (isinstance(p, slice) and p == slice(None)) for i, p in enumerate(parts) if i != advanced[0]
        ):
            raise TypeError(
                "s4tf supports one tensor of indices per indexing, with full slices (:) on "
                "the axes before it, e.g. t[idx] or t[:, idx]; use s4tf.gather for more."
            )
        return gather(x, parts[advanced[0]], axis=advanced[0])
    shape = shape_of(x)
    static, axis = [], 0
    for part in parts:
        size = shape[axis] if axis < len(shape) else None
        static.append(_static_part(part, size))
        if part is not None and part is not Ellipsis:
            axis += 1
    return getitem_(x, key=tuple(static))


def gather(x, indices, axis=0):
    """Slices of ``x`` along ``axis`` at the int ``indices`` (any shape).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.gather(s4tf.Tensor([10.0, 20.0, 30.0]), s4tf.Tensor([2, 0, 2])).tolist()
    [30.0, 10.0, 30.0]
    """
    if not isinstance(indices, Tensor):
        indices = np.asarray(indices)
        if indices.dtype.kind == "b":
            raise TypeError("gather: boolean masks are not supported; use s4tf.where(mask, a, b).")
        indices = indices.astype(np.int32) if indices.dtype.kind in "iu" else indices
        if indices.dtype.kind not in "iu":
            raise TypeError(f"gather: indices must be integers, got {indices.dtype}.")
    elif not indices.dtype.is_integer:
        raise TypeError(f"gather: indices must be an int tensor, got {indices.dtype}.")
    shape = shape_of(x)
    axis = int(axis) % max(len(shape), 1)
    size = shape[axis] if shape else 0
    check_indices(indices, 0, size, "gather", context=f" (axis {axis} has size {size})")
    return gather_(x, indices, axis=axis)


def one_hot(indices, depth: int, dtype=None):
    """One-hot rows for int ``indices``; an index of -1 gives an all-zero row (as in S4TF).

    Any other index outside ``[0, depth)`` is an error: eager backends raise
    :class:`IndexRangeError` (an ``IndexError`` and a ``ValueError``) naming it;
    on the lazy xla backend, which cannot read indices without running the
    graph, its row is NaN (floating dtypes), or raises like the eager backends
    with ``S4TF_CHECKS=1``. Non-integer indices raise a ``TypeError`` (cast them
    with ``.astype(s4tf.int32)``).

    Examples
    --------
    >>> import s4tf
    >>> s4tf.one_hot(s4tf.Tensor([2, -1]), 3).tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    """
    return encode_one_hot(indices, depth, dtype, low=-1, owner="one_hot",
                          hint="(-1 gives an all-zero row.)")


def _not_integer(owner, what, got, fix) -> TypeError:
    return TypeError(
        f"{owner}: {what} must be integers, got {got} (a non-integer index matches no "
        f"class, so its row would be all zeros). Cast them first: {fix}."
    )


def encode_one_hot(indices, depth, dtype=None, *, low: int, owner: str, what: str = "indices",
                   hint: str = ""):
    """One-hot rows of ``indices`` valid in ``[low, depth)`` (``low`` is 0 or -1, the zero row).

    The mechanism behind :func:`one_hot` and the int labels of
    ``softmax_cross_entropy`` (``low=0``: a label -1 is an error there, not a
    sample that silently counts zero).
    """
    from .. import dtypes
    from .._sizes import size

    depth = size(depth, "depth", owner, 0)
    if not isinstance(indices, Tensor):
        array = np.asarray(indices)
        # A float index matches no class (or truncates): refused, not turned into zero rows.
        if array.size and array.dtype.kind not in "iu":
            raise _not_integer(owner, what, f"a list of {array.dtype}",
                               "s4tf.Tensor(indices).astype(s4tf.int32)")
        indices = Tensor(array.astype(np.int32))
    elif not indices.dtype.is_integer:
        raise _not_integer(owner, what, f"a {indices.dtype.name} tensor", "indices.astype(s4tf.int32)")
    check_indices(indices, low, depth, owner, what, hint)
    dtype = dtypes.as_dtype(dtype or dtypes.float32)
    # The classes live where the indices do.
    classes = from_numpy(np.arange(depth), indices.dtype, like=innermost(indices))
    hits = cast(equal(expand_dims(indices, -1), classes), dtype=dtype)
    source = innermost(indices)
    if (source._backend.lazy or not source._backend.readable(source._data)) and dtype.is_floating:
        # Unchecked on the lazy backend (or a JAX trace): an out-of-range row becomes NaN.
        valid = logical_and(greater_equal(indices, low), less(indices, depth))
        hits = where(expand_dims(valid, -1), hits, float("nan"))
    return hits
