"""The embedding layer: rows of a table looked up by integer indices."""

from __future__ import annotations

from .. import dtypes as _dtypes
from .. import random as _random
from .._sizes import sizes
from ..ops.indexing import check_indices, gather_
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

    Indices outside ``[0, vocabulary_size)`` (negative ones included: they
    never count from the end) raise a ``ValueError`` (also an ``IndexError``)
    on eager backends (naive, cupy). On the lazy ``"xla"`` backend they are not
    checked, because reading them would force a graph execution on every call;
    there such an index yields a row of NaN, never a plausible row, and its
    gradient is dropped. ``S4TF_CHECKS=1`` makes the lazy backend check them on
    the host and raise, as the eager backends do.

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
        vocabulary_size, embedding_size = sizes(
            "Embedding", vocabulary_size=vocabulary_size, embedding_size=embedding_size)
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
        check_indices(input, 0, shape_of(self.embeddings)[0], "Embedding",
                      hint="Enlarge vocabulary_size or map unknown tokens to a reserved index.")
        # The gather primitive itself: the indices were checked just above.
        return gather_(self.embeddings, input, axis=0)
