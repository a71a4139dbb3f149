"""The embedding layer: rows of a table looked up by integer indices."""

from __future__ import annotations

from .. import dtypes as _dtypes
from .. import random as _random
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

    Field: ``embeddings`` of shape ``(vocabulary_size, embedding_size)``. The
    output has shape ``indices.shape + (embedding_size,)``; the gather's
    derivative adds into one buffer (S4TF's in-place pullback).

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
        vocabulary_size = shape_of(self.embeddings)[0]
        if input.size:
            low, high = int(input.min()), int(input.max())
            if low < 0 or high >= vocabulary_size:
                raise ValueError(
                    f"Embedding: indices must lie in [0, {vocabulary_size}), got values from "
                    f"{low} to {high}. Enlarge vocabulary_size or map unknown tokens to a "
                    "reserved index."
                )
        return gather(self.embeddings, input, axis=0)
