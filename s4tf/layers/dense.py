"""The densely connected layer."""

from __future__ import annotations

import typing

from .. import dtypes as _dtypes
from .._sizes import sizes
from ..activations import identity
from ..differentiable import no_derivative
from ..initializers import glorot_uniform, zeros
from ..ops import matmul, reshape
from ..ops.linalg import dense_
from ..ops.shapes import shape_of
from ..tensor import Tensor
from .layer import Layer, check_input_shape

__all__ = ["Dense"]


def _same_dtype(a, b) -> bool:
    return a is b or a == b  # DTypes are shared objects: identity first, no __eq__ call


class Dense(Layer):
    """``activation(input @ weight + bias)``, S4TF's ``Dense``.

    Parameters
    ----------
    input_size, output_size : int
    activation : callable, default identity
    use_bias : bool, default True
        Without a bias, ``bias`` is None.
    weight_initializer : callable, default glorot_uniform
        ``(shape, dtype) -> Tensor``; biases start at zero.
    dtype : DType, default float32

    Notes
    -----
    Fields: ``weight`` ``(input_size, output_size)`` and ``bias``
    ``(output_size,)``. Inputs of any rank >= 1 are accepted; the last axis is
    the feature axis.

    Examples
    --------
    >>> import s4tf
    >>> dense = s4tf.layers.Dense(3, 2, activation=s4tf.relu)
    >>> dense.weight.shape, dense.bias.tolist()
    ((3, 2), [0.0, 0.0])
    >>> dense(s4tf.ones([4, 3])).shape
    (4, 2)
    """

    weight: Tensor
    bias: Tensor | None
    activation: typing.Callable = no_derivative()

    def __init__(self, input_size: int, output_size: int, activation=identity,
                 use_bias: bool = True, weight_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        input_size, output_size = sizes("Dense", input_size=input_size, output_size=output_size)
        self.weight = weight_initializer((input_size, output_size), dtype=dtype)
        self.bias = zeros((output_size,), dtype=dtype) if use_bias else None
        self.activation = activation

    def __call__(self, input):
        weight, bias = self.weight, self.bias
        input_size, output_size = shape_of(weight)
        shape = shape_of(input)
        if not shape or shape[-1] != input_size:
            check_input_shape(self, input, (..., input_size),
                              f"The last axis must be the {input_size} input features.")
        # Fold every leading axis into one batch axis: one BLAS matmul.
        rows = input if len(shape) == 2 else reshape(input, (-1, input_size))
        if bias is None:
            out = matmul(rows, weight)
        elif shape_of(bias) == (output_size,) and _same_dtype(bias.dtype, weight.dtype):
            out = dense_(rows, weight, bias)  # one op: the product and the bias
        else:
            # A bias of another dtype: the product in the weight's, then the promoted sum.
            out = matmul(rows, weight) + bias
        if len(shape) != 2:
            out = reshape(out, shape[:-1] + (output_size,))
        return self.activation(out)
