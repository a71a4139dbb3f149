"""Sequence layers: a recurrent cell run over a list of time steps.

``RNN(cell)(inputs)`` takes a list of per-step tensors ``(batch, features)``
(S4TF's ``[Tensor]`` sequences) and returns the list of per-step outputs;
Python's loop is differentiated like any other code. ``LSTM`` and ``GRU`` are
``RNN`` over their cells; ``Bidirectional`` runs a second cell backwards in time
and merges the two outputs of each step.
"""

from __future__ import annotations

import typing

from ..differentiable import no_derivative
from ..ops import concat, stack
from ..ops.shapes import shape_of
from ..tensor import Tensor
from ..tree import tree_map
from .layer import Layer
from .recurrent import GRUCell, LSTMCell

__all__ = ["GRU", "LSTM", "RNN", "Bidirectional"]


def _steps(layer, inputs) -> list:
    if isinstance(inputs, Tensor) or not isinstance(inputs, list | tuple):
        shape = f" of shape {shape_of(inputs)}" if isinstance(inputs, Tensor) else ""
        raise TypeError(
            f"{type(layer).__name__}: expected a list of per-step tensors (batch, features), got "
            f"a {type(inputs).__name__}{shape}. Split a (time, batch, features) tensor with "
            "list(x) or a batch-major one with list(x.transpose(1, 0, 2))."
        )
    if not inputs:
        raise ValueError(f"{type(layer).__name__}: the sequence is empty; pass at least one step.")
    return list(inputs)


class RNN(Layer):
    """A recurrent layer: ``cell`` applied to each time step, threading its state.

    Parameters
    ----------
    cell : Layer
        A recurrent cell (``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` or any
        layer with ``cell(input, state) -> (output, state)`` and
        ``zero_state(batch_size)``), kept in the field ``cell``.

    Notes
    -----
    Calling ``rnn(inputs, initial_state=None)`` returns the list of outputs;
    ``rnn.last_output(inputs, initial_state=None)`` only the last one.

    Examples
    --------
    >>> import s4tf
    >>> rnn = s4tf.layers.RNN(s4tf.layers.SimpleRNNCell(input_size=3, hidden_size=5))
    >>> outputs = rnn([s4tf.ones([2, 3])] * 4)
    >>> len(outputs), outputs[-1].shape
    (4, (2, 5))
    """

    cell: Layer

    def __init__(self, cell):
        self.cell = cell

    def __call__(self, inputs, initial_state=None):
        steps = _steps(self, inputs)
        state = self.cell.zero_state(shape_of(steps[0])[0]) if initial_state is None else initial_state
        outputs = []
        for step in steps:
            output, state = self.cell(step, state)
            outputs.append(output)
        return outputs

    def last_output(self, inputs, initial_state=None):
        """The output of the last time step.

        Examples
        --------
        >>> import s4tf
        >>> gru = s4tf.layers.GRU(input_size=3, hidden_size=2)
        >>> gru.last_output([s4tf.ones([1, 3])] * 3).shape
        (1, 2)
        """
        return self(inputs, initial_state=initial_state)[-1]


class LSTM(RNN):
    """An :class:`RNN` over an :class:`LSTMCell`; each step outputs an ``LSTMCell.State``.

    Build it from a cell, ``LSTM(LSTMCell(input_size=3, hidden_size=4))``, or
    directly, ``LSTM(input_size=3, hidden_size=4)``.

    Examples
    --------
    >>> import s4tf
    >>> lstm = s4tf.layers.LSTM(input_size=3, hidden_size=4)
    >>> lstm.last_output([s4tf.ones([2, 3])] * 5).hidden.shape
    (2, 4)
    """

    def __init__(self, cell=None, *, input_size: int | None = None, hidden_size: int | None = None):
        super().__init__(_cell_or_new(cell, LSTMCell, input_size, hidden_size, "LSTM"))


class GRU(RNN):
    """An :class:`RNN` over a :class:`GRUCell`.

    Examples
    --------
    >>> import s4tf
    >>> gru = s4tf.layers.GRU(s4tf.layers.GRUCell(input_size=3, hidden_size=4))
    >>> gru([s4tf.ones([2, 3])] * 2)[0].shape
    (2, 4)
    """

    def __init__(self, cell=None, *, input_size: int | None = None, hidden_size: int | None = None):
        super().__init__(_cell_or_new(cell, GRUCell, input_size, hidden_size, "GRU"))


def _cell_or_new(cell, cell_type, input_size, hidden_size, name):
    if cell is not None:
        return cell
    if input_size is None or hidden_size is None:
        raise TypeError(
            f"{name}: pass a cell ({name}({cell_type.__name__}(input_size=..., hidden_size=...))) "
            f"or both input_size= and hidden_size=."
        )
    return cell_type(input_size=input_size, hidden_size=hidden_size)


def _merge_concatenate(a, b):
    return concat([a, b], axis=-1)


_MERGES: dict[str, typing.Callable] = {
    "concatenate": _merge_concatenate,
    "sum": lambda a, b: a + b,
    "average": lambda a, b: (a + b) * 0.5,
    "multiply": lambda a, b: a * b,
    "stack": lambda a, b: stack([a, b], axis=0),
}


class Bidirectional(Layer):
    """Runs one cell forward and another backward in time and merges each step's outputs.

    Parameters
    ----------
    cell : Layer
        The forward cell.
    backward_cell : Layer, optional
        The backward cell; by default a fresh cell of the same type and sizes
        (its own weights, as S4TF builds both from one ``@autoclosure``).
    merge : {"concatenate", "sum", "average", "multiply", "stack"} or callable
        How two outputs become one (default ``"concatenate"`` along the last
        axis); applied to every tensor of structured outputs (an LSTM's
        ``State`` merges its ``cell`` and ``hidden`` parts).

    Notes
    -----
    Fields ``forward`` and ``backward`` are :class:`RNN` layers (each keeps its
    cell in ``cell``). ``initial_state=`` takes a pair ``(forward_state,
    backward_state)``. The outputs are aligned in time: output ``t`` merges the
    forward output at ``t`` with the backward output at ``t``.

    Examples
    --------
    >>> import s4tf
    >>> bi = s4tf.layers.Bidirectional(s4tf.layers.GRUCell(input_size=3, hidden_size=4))
    >>> [y.shape for y in bi([s4tf.ones([2, 3])] * 3)]
    [(2, 8), (2, 8), (2, 8)]
    """

    forward: RNN
    backward: RNN
    merge: typing.Callable = no_derivative()

    def __init__(self, cell, backward_cell=None, merge="concatenate"):
        if backward_cell is None:
            backward_cell = type(cell)(input_size=cell.input_size, hidden_size=cell.hidden_size)
        if isinstance(merge, str):
            if merge not in _MERGES:
                raise ValueError(
                    f"Bidirectional: unknown merge {merge!r}; expected one of "
                    f"{', '.join(sorted(_MERGES))} or a function (forward, backward) -> output."
                )
            merge = _MERGES[merge]
        self.forward = RNN(cell)
        self.backward = RNN(backward_cell)
        self.merge = merge

    def _merged(self, a, b):
        if isinstance(a, Tensor):
            return self.merge(a, b)
        return tree_map(self.merge, a, b)

    def __call__(self, inputs, initial_state=None):
        steps = _steps(self, inputs)
        forward_state, backward_state = (None, None) if initial_state is None else initial_state
        forward = self.forward(steps, initial_state=forward_state)
        backward = self.backward(steps[::-1], initial_state=backward_state)[::-1]
        return [self._merged(f, b) for f, b in zip(forward, backward, strict=True)]

    def last_output(self, inputs, initial_state=None):
        """The merge of the forward pass's last output and the backward pass's last output.

        The backward pass ends at the first time step, so its last output is the
        one that has seen the whole sequence, as in S4TF.

        Examples
        --------
        >>> import s4tf
        >>> bi = s4tf.layers.Bidirectional(s4tf.layers.SimpleRNNCell(input_size=2, hidden_size=3))
        >>> bi.last_output([s4tf.ones([1, 2])] * 4).shape
        (1, 6)
        """
        steps = _steps(self, inputs)
        forward_state, backward_state = (None, None) if initial_state is None else initial_state
        forward = self.forward.last_output(steps, initial_state=forward_state)
        backward = self.backward.last_output(steps[::-1], initial_state=backward_state)
        return self._merged(forward, backward)
