"""``State``: the one mutable part of a model (BatchNorm's running statistics)."""

from __future__ import annotations

from ..tree import register_cell

__all__ = ["State"]


class State:
    """A mutable cell for state a forward pass changes (BatchNorm's running statistics).

    It is not differentiated and, unlike every other part of a model, may change
    in place; when a model holding it is updated or moved while another live model
    shares the cell, the new model gets its own copy.

    Examples
    --------
    >>> import s4tf
    >>> cell = s4tf.State(s4tf.zeros([3]))
    >>> cell.value = cell.value + 1
    >>> cell.value.tolist()
    [1.0, 1.0, 1.0]
    """

    __slots__ = ("value", "__weakref__")

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"State({self.value!r})"


register_cell(State)
