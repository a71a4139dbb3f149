"""Scaled dot-product attention (Vaswani et al. 2017), shared by the attention layers.

A composite of primitives (matmul_nt, matmul, where, softmax): its derivatives
come from their rules. The scores are ``matmul_nt(query, key)``, the key's
transpose inside the product: XLA gets one ``dot_general`` contracting both
last axes (no transpose of the keys forward or of their cotangent backward),
NumPy a transposed view BLAS reads as it is.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as _dtypes
from ..tensor import from_numpy
from .elementwise import logical_and, where
from .linalg import matmul, matmul_nt
from .shapes import shape_of
from .softmax import softmax

__all__ = ["scaled_dot_product_attention"]

# A large finite negative, not -inf: a row with every key masked stays finite
# (uniform weights) instead of NaN, and for any other row the exponential
# underflows to exactly zero, so masked keys contribute nothing at all.
_MASKED = -1e9


def scaled_dot_product_attention(query, key, value, mask=None, causal: bool = False,
                                 dropout=None):
    """``softmax(query key^T / sqrt(d), masked) value`` over the last two axes.

    Parameters
    ----------
    query : Tensor
        ``(..., query_length, d)``; leading axes (batch, heads) are batch axes.
    key : Tensor
        ``(..., key_length, d)``.
    value : Tensor
        ``(..., key_length, value_size)``.
    mask : Tensor of bool, optional
        Broadcastable to ``(..., query_length, key_length)``; True where
        attention is allowed.
    causal : bool, default False
        Query ``i`` attends only to keys ``j <= i``.
    dropout : callable, optional
        Applied to the attention probabilities (e.g. a ``layers.Dropout``).

    Returns
    -------
    Tensor
        ``(..., query_length, value_size)``.

    Examples
    --------
    >>> import s4tf
    >>> q = s4tf.ones([1, 3, 4])
    >>> v = s4tf.Tensor([[[1.0], [2.0], [3.0]]])
    >>> s4tf.nn.scaled_dot_product_attention(q, q, v, causal=True)[0, :, 0].tolist()
    [1.0, 1.5, 2.0]
    """
    q_shape, k_shape, v_shape = shape_of(query), shape_of(key), shape_of(value)
    if len(q_shape) < 2 or q_shape[:-2] != k_shape[:-2] or q_shape[-1] != k_shape[-1]:
        raise ValueError(
            f"scaled_dot_product_attention: query {q_shape} and key {k_shape} must be "
            "(..., length, d) with the same leading axes and the same d."
        )
    if v_shape[:-1] != k_shape[:-1]:
        raise ValueError(
            f"scaled_dot_product_attention: value {v_shape} must be (..., key_length, size) "
            f"with the key's leading axes and length {k_shape[:-1]}."
        )
    scores = matmul_nt(query, key) * (1.0 / math.sqrt(q_shape[-1]))
    allowed = mask
    if causal:
        lower = np.tril(np.ones((q_shape[-2], k_shape[-2]), dtype=bool))
        # On the scores' backend, whatever the current default backend is.
        causal_mask = from_numpy(lower, _dtypes.bool_, like=scores)
        allowed = causal_mask if allowed is None else logical_and(allowed, causal_mask)
    if allowed is not None:
        scores = where(allowed, scores, _MASKED)
    probabilities = softmax(scores, axis=-1)
    if dropout is not None:
        probabilities = dropout(probabilities)
    return matmul(probabilities, value)
