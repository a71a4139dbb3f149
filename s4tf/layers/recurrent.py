"""Recurrent cells: one time step of SimpleRNN, LSTM and GRU.

A cell is called as ``cell(input, state) -> (output, new_state)`` on one time
step of shape ``(batch, input_size)``; ``cell.zero_state(batch_size)`` is the
usual initial state. The sequence layers in :mod:`s4tf.layers.sequence` run a
cell over a list of steps. Layouts and field names are S4TF's.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as _dtypes
from .._sizes import sizes
from ..differentiable import Differentiable
from ..initializers import glorot_uniform, zeros
from ..ops import concat, matmul, sigmoid, split, tanh
from ..ops.shapes import shape_of
from ..tensor import Tensor, from_numpy
from .layer import Layer, check_input_shape

__all__ = ["GRUCell", "LSTMCell", "SimpleRNNCell"]


def _zero_state_like(weight, batch_size: int, hidden_size: int):
    # On the weight's backend and dtype, so a model moved to another backend
    # starts its sequences there too.
    return from_numpy(np.zeros((batch_size, hidden_size)), weight.dtype, like=weight)


def _check_step(cell, input, state_hidden):
    check_input_shape(cell, input, (None, cell.input_size),
                      "A time step is (batch, input_size); pass the sequence as a list of steps.")
    batch = shape_of(input)[0]
    check_input_shape(cell, state_hidden, (batch, cell.hidden_size),
                      "The state must be (batch, hidden_size); start from cell.zero_state(batch).")


class SimpleRNNCell(Layer):
    """Elman cell: ``h' = tanh([input, h] @ weight + bias)``; the output is ``h'``.

    Parameters
    ----------
    input_size, hidden_size : int
    use_bias : bool, default True
    weight_initializer : callable, default glorot_uniform
    dtype : DType, default float32

    Notes
    -----
    Fields: ``weight`` ``(input_size + hidden_size, hidden_size)`` whose first
    ``input_size`` rows multiply the input, and ``bias`` ``(hidden_size,)``.

    Examples
    --------
    >>> import s4tf
    >>> cell = s4tf.layers.SimpleRNNCell(input_size=3, hidden_size=4)
    >>> output, state = cell(s4tf.ones([2, 3]), cell.zero_state(2))
    >>> output.shape
    (2, 4)
    """

    weight: Tensor
    bias: Tensor | None

    def __init__(self, input_size: int, hidden_size: int, use_bias: bool = True,
                 weight_initializer=glorot_uniform, dtype=_dtypes.float32):
        input_size, hidden_size = sizes(type(self).__name__, input_size=input_size,
                                        hidden_size=hidden_size)
        self.weight = weight_initializer((input_size + hidden_size, hidden_size), dtype=dtype)
        self.bias = zeros((hidden_size,), dtype=dtype) if use_bias else None

    @property
    def hidden_size(self) -> int:
        return shape_of(self.weight)[1]

    @property
    def input_size(self) -> int:
        return shape_of(self.weight)[0] - self.hidden_size

    def zero_state(self, batch_size: int):
        """The all-zero hidden state ``(batch_size, hidden_size)``."""
        return _zero_state_like(self.weight, batch_size, self.hidden_size)

    def __call__(self, input, state):
        _check_step(self, input, state)
        pre = matmul(concat([input, state], axis=1), self.weight)
        hidden = tanh(pre + self.bias if self.bias is not None else pre)
        return hidden, hidden


class LSTMCell(Layer):
    """Long short-term memory cell (Hochreiter and Schmidhuber 1997), S4TF's layout.

    ``[input, hidden] @ fused_weight + fused_bias`` is split into four column
    blocks ``[input, update, forget, output]``; then
    ``cell' = cell * sigmoid(f) + sigmoid(i) * tanh(u)`` and
    ``hidden' = tanh(cell') * sigmoid(o)``. The state and each step's output are
    an ``LSTMCell.State(cell=, hidden=)``.

    Parameters
    ----------
    input_size, hidden_size : int
    weight_initializer : callable, default glorot_uniform
    dtype : DType, default float32

    Notes
    -----
    Fields: ``fused_weight`` ``(input_size + hidden_size, 4 * hidden_size)`` and
    ``fused_bias`` ``(4 * hidden_size,)`` (zeros).

    Examples
    --------
    >>> import s4tf
    >>> cell = s4tf.layers.LSTMCell(input_size=3, hidden_size=4)
    >>> output, state = cell(s4tf.ones([2, 3]), cell.zero_state(2))
    >>> output.hidden.shape, output.cell.shape
    ((2, 4), (2, 4))
    """

    class State(Differentiable):
        """The LSTM state: memory ``cell`` and ``hidden`` output, each ``(batch, hidden_size)``."""

        cell: Tensor
        hidden: Tensor

    fused_weight: Tensor
    fused_bias: Tensor

    def __init__(self, input_size: int, hidden_size: int, weight_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        input_size, hidden_size = sizes(type(self).__name__, input_size=input_size,
                                        hidden_size=hidden_size)
        self.fused_weight = weight_initializer((input_size + hidden_size, 4 * hidden_size), dtype=dtype)
        self.fused_bias = zeros((4 * hidden_size,), dtype=dtype)

    @property
    def hidden_size(self) -> int:
        return shape_of(self.fused_weight)[1] // 4

    @property
    def input_size(self) -> int:
        return shape_of(self.fused_weight)[0] - self.hidden_size

    def zero_state(self, batch_size: int) -> LSTMCell.State:
        """A state whose cell and hidden parts are zeros ``(batch_size, hidden_size)``."""
        zero = _zero_state_like(self.fused_weight, batch_size, self.hidden_size)
        return LSTMCell.State(cell=zero, hidden=zero)

    def __call__(self, input, state):
        if not isinstance(state, LSTMCell.State):
            raise TypeError(
                f"LSTMCell: the state must be an LSTMCell.State(cell=, hidden=), got "
                f"{type(state).__name__}; start from cell.zero_state(batch_size)."
            )
        _check_step(self, input, state.hidden)
        fused = matmul(concat([input, state.hidden], axis=1), self.fused_weight) + self.fused_bias
        input_gate, update_gate, forget_gate, output_gate = split(fused, 4, axis=1)
        cell = state.cell * sigmoid(forget_gate) + sigmoid(input_gate) * tanh(update_gate)
        new_state = LSTMCell.State(cell=cell, hidden=tanh(cell) * sigmoid(output_gate))
        return new_state, new_state


class GRUCell(Layer):
    """Gated recurrent unit (Cho et al. 2014) with Keras' ``reset_after=True`` semantics.

    ``z = sigmoid(x Wz + bz + h Uz + buz)``, ``r = sigmoid(x Wr + br + h Ur + bur)``,
    ``c = tanh(x Wo + bo + r * (h Uo + buo))`` and ``h' = z * h + (1 - z) * c``;
    the output is ``h'``.

    Parameters
    ----------
    input_size, hidden_size : int
    weight_initializer : callable, default glorot_uniform
    dtype : DType, default float32

    Notes
    -----
    Fields: ``update_kernel``, ``reset_kernel``, ``output_kernel``
    ``(input_size, hidden_size)``; ``update_recurrent_kernel``,
    ``reset_recurrent_kernel``, ``output_recurrent_kernel``
    ``(hidden_size, hidden_size)``; and the six matching ``*_bias`` fields
    ``(hidden_size,)`` (zeros).

    Examples
    --------
    >>> import s4tf
    >>> cell = s4tf.layers.GRUCell(input_size=3, hidden_size=4)
    >>> output, state = cell(s4tf.ones([2, 3]), cell.zero_state(2))
    >>> output.shape
    (2, 4)
    """

    update_kernel: Tensor
    reset_kernel: Tensor
    output_kernel: Tensor
    update_recurrent_kernel: Tensor
    reset_recurrent_kernel: Tensor
    output_recurrent_kernel: Tensor
    update_bias: Tensor
    reset_bias: Tensor
    output_bias: Tensor
    update_recurrent_bias: Tensor
    reset_recurrent_bias: Tensor
    output_recurrent_bias: Tensor

    def __init__(self, input_size: int, hidden_size: int, weight_initializer=glorot_uniform,
                 dtype=_dtypes.float32):
        input_size, hidden_size = sizes(type(self).__name__, input_size=input_size,
                                        hidden_size=hidden_size)
        for gate in ("update", "reset", "output"):
            setattr(self, f"{gate}_kernel", weight_initializer((input_size, hidden_size), dtype=dtype))
            setattr(self, f"{gate}_recurrent_kernel",
                    weight_initializer((hidden_size, hidden_size), dtype=dtype))
            setattr(self, f"{gate}_bias", zeros((hidden_size,), dtype=dtype))
            setattr(self, f"{gate}_recurrent_bias", zeros((hidden_size,), dtype=dtype))

    @property
    def hidden_size(self) -> int:
        return shape_of(self.update_kernel)[1]

    @property
    def input_size(self) -> int:
        return shape_of(self.update_kernel)[0]

    def zero_state(self, batch_size: int):
        """The all-zero hidden state ``(batch_size, hidden_size)``."""
        return _zero_state_like(self.update_kernel, batch_size, self.hidden_size)

    def __call__(self, input, state):
        _check_step(self, input, state)
        update = sigmoid(matmul(input, self.update_kernel) + self.update_bias
                         + matmul(state, self.update_recurrent_kernel) + self.update_recurrent_bias)
        reset = sigmoid(matmul(input, self.reset_kernel) + self.reset_bias
                        + matmul(state, self.reset_recurrent_kernel) + self.reset_recurrent_bias)
        # reset_after: the reset gate scales the recurrent term after its matmul.
        candidate = tanh(matmul(input, self.output_kernel) + self.output_bias
                         + reset * (matmul(state, self.output_recurrent_kernel)
                                    + self.output_recurrent_bias))
        hidden = update * state + (1.0 - update) * candidate
        return hidden, hidden
