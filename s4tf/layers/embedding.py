"""The embedding layer: rows of a table looked up by integer indices."""

from __future__ import annotations

from .. import dtypes as _dtypes
from .. import random as _random
from ..backends.base import Backend
from ..ops import gather
from ..ops.shapes import shape_of
from ..tensor import Tensor
from .layer import Layer

__all__ = ["Embedding"]


class Embedding(Layer):
    """``embeddings[indices]``: maps int indices of any shape to vectors.

    Parameters
    ----------
    vocabulary_size, embedding_size : int
    embeddings_initializer : callable, optional
        ``(shape, dtype) -> Tensor``; by default uniform on ``[0, 1)``, as S4TF's
        ``Tensor(randomUniform:)``.
    dtype : DType, default float32

    Notes
    -----
    Field: ``embeddings`` of shape ``(vocabulary_size, embedding_size)``. The
    output has shape ``indices.shape + (embedding_size,)``; the gather's
    derivative adds into one buffer (S4TF's in-place pullback).

    Indices outside ``[0, vocabulary_size)`` raise a ``ValueError`` on eager
    backends (naive, cupy). On the lazy ``"xla"`` backend they are not
    checked, because reading them would force a graph execution on every
    call; there JAX's gather rules apply: an index in ``[-vocabulary_size, 0)``
    counts from the end (as in NumPy), any other out-of-range index yields a
    row of NaN (JAX's ``"fill"`` mode), and its gradient is dropped.

    Examples
    --------
    >>> import s4tf
    >>> embed = s4tf.layers.Embedding(vocabulary_size=10, embedding_size=4)
    >>> embed(s4tf.Tensor([[1, 2, 3]])).shape
    (1, 3, 4)
    """

    embeddings: Tensor

    def __init__(self, vocabulary_size: int, embedding_size: int,
                 embeddings_initializer=None, dtype=_dtypes.float32):
        if embeddings_initializer is None:
            embeddings_initializer = _random.uniform
        self.embeddings = embeddings_initializer((vocabulary_size, embedding_size), dtype=dtype)

    def __call__(self, input):
        if not isinstance(input, Tensor):
            input = Tensor(input)
        if not input.dtype.is_integer:
            raise ValueError(
                f"Embedding: expected int indices, got a {input.dtype} tensor of shape "
                f"{input.shape}. Convert with indices.astype(s4tf.int32)."
            )
        if input.size and not _is_lazy(input):
            _check_range(input, shape_of(self.embeddings)[0])
        return gather(self.embeddings, input, axis=0)


def _is_lazy(tensor: Tensor) -> bool:
    # Only a lazy backend has pending work for a barrier to run (the base
    # Backend.barrier is the eager no-op); reading its values would execute the graph.
    return type(tensor._backend).barrier is not Backend.barrier


def _check_range(indices: Tensor, vocabulary_size: int) -> None:
    # One host copy instead of two reductions: min and max each cost a kernel call.
    host = indices.numpy()
    low, high = int(host.min()), int(host.max())
    if low < 0 or high >= vocabulary_size:
        raise ValueError(
            f"Embedding: indices must lie in [0, {vocabulary_size}), got values from "
            f"{low} to {high}. Enlarge vocabulary_size or map unknown tokens to a "
            "reserved index."
        )
