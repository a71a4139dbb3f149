"""Multi-head attention (Vaswani et al. 2017), with Keras-like projections."""

from __future__ import annotations

from .. import dtypes as _dtypes
from .._sizes import sizes
from ..initializers import glorot_uniform, zeros
from ..ops import matmul, reshape, transpose
from ..ops.attention import scaled_dot_product_attention
from ..ops.shapes import shape_of
from ..tensor import Tensor
from .layer import Layer, check_input_shape

__all__ = ["MultiHeadAttention"]


def _project(x, weight, bias):
    batch, length, size = shape_of(x)
    out = matmul(reshape(x, (batch * length, size)), weight)
    if bias is not None:
        out = out + bias
    return reshape(out, (batch, length, shape_of(weight)[1]))


def _split_heads(x, head_count):
    batch, length, width = shape_of(x)
    return transpose(reshape(x, (batch, length, head_count, width // head_count)), (0, 2, 1, 3))


class MultiHeadAttention(Layer):
    """Scaled dot-product attention over ``head_count`` heads.

    ``MultiHeadAttention(query_size, head_count, head_size=None, key_size=None,
    value_size=None, output_size=None, use_bias=True, dtype=float32)`` projects
    queries ``(batch, query_length, query_size)``, keys ``(batch, key_length,
    key_size)`` and values ``(batch, key_length, value_size)`` to ``head_count``
    heads of ``head_size`` features (default ``query_size // head_count``),
    attends with ``softmax(q k^T / sqrt(head_size))`` and projects the
    concatenated heads to ``output_size`` (default ``query_size``).

    Call it as ``mha(query, key=None, value=None, mask=None, causal=False)``:
    ``key`` defaults to ``query`` (self-attention) and ``value`` to ``key``;
    ``mask`` is a bool tensor broadcastable to ``(batch, head_count,
    query_length, key_length)`` (e.g. ``(batch, 1, 1, key_length)`` for
    padding), True where attention is allowed; ``causal=True`` lets position
    ``i`` attend only to keys ``<= i``.

    Fields: ``query_weight``, ``key_weight``, ``value_weight`` ``(size,
    head_count * head_size)``, ``output_weight`` ``(head_count * head_size,
    output_size)`` and the matching ``*_bias`` fields (zeros; None without bias).

    Examples
    --------
    >>> import s4tf
    >>> mha = s4tf.layers.MultiHeadAttention(query_size=8, head_count=2)
    >>> mha(s4tf.ones([3, 5, 8])).shape
    (3, 5, 8)
    """

    query_weight: Tensor
    key_weight: Tensor
    value_weight: Tensor
    output_weight: Tensor
    query_bias: Tensor | None
    key_bias: Tensor | None
    value_bias: Tensor | None
    output_bias: Tensor | None
    head_count: int

    def __init__(self, query_size: int, head_count: int, head_size: int | None = None,
                 key_size: int | None = None, value_size: int | None = None,
                 output_size: int | None = None, use_bias: bool = True,
                 weight_initializer=glorot_uniform, dtype=_dtypes.float32):
        query_size, head_count = sizes("MultiHeadAttention", query_size=query_size,
                                       head_count=head_count)
        optional = {"head_size": head_size, "key_size": key_size, "value_size": value_size,
                    "output_size": output_size}
        sizes("MultiHeadAttention", **{k: v for k, v in optional.items() if v is not None})
        if head_size is None:
            if query_size % head_count:
                raise ValueError(
                    f"MultiHeadAttention: query_size={query_size} is not divisible by "
                    f"head_count={head_count}; pass head_size= explicitly."
                )
            head_size = query_size // head_count
        key_size = query_size if key_size is None else key_size
        value_size = key_size if value_size is None else value_size
        output_size = query_size if output_size is None else output_size
        width = head_count * head_size
        self.query_weight = weight_initializer((query_size, width), dtype=dtype)
        self.key_weight = weight_initializer((key_size, width), dtype=dtype)
        self.value_weight = weight_initializer((value_size, width), dtype=dtype)
        self.output_weight = weight_initializer((width, output_size), dtype=dtype)
        for name, size in (("query", width), ("key", width), ("value", width), ("output", output_size)):
            setattr(self, f"{name}_bias", zeros((size,), dtype=dtype) if use_bias else None)
        self.head_count = head_count

    def __call__(self, query, key=None, value=None, mask=None, causal: bool = False):
        key = query if key is None else key
        value = key if value is None else value
        check_input_shape(self, query, (None, None, shape_of(self.query_weight)[0]),
                          "The query must be (batch, query_length, query_size).")
        batch = shape_of(query)[0]
        check_input_shape(self, key, (batch, None, shape_of(self.key_weight)[0]),
                          "The key must be (batch, key_length, key_size).")
        check_input_shape(self, value, (batch, shape_of(key)[1], shape_of(self.value_weight)[0]),
                          "The value must be (batch, key_length, value_size).")
        heads = self.head_count
        q = _split_heads(_project(query, self.query_weight, self.query_bias), heads)
        k = _split_heads(_project(key, self.key_weight, self.key_bias), heads)
        v = _split_heads(_project(value, self.value_weight, self.value_bias), heads)
        attended = scaled_dot_product_attention(q, k, v, mask=mask, causal=causal)
        head_size = shape_of(q)[-1]
        query_length = shape_of(query)[1]
        merged = reshape(transpose(attended, (0, 2, 1, 3)), (batch, query_length, heads * head_size))
        return _project(merged, self.output_weight, self.output_bias)
