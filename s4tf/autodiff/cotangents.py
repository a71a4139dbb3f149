"""Sparse cotangents: what an indexing rule hands the backward pass."""

from __future__ import annotations

__all__ = ["IndexAdd"]


class IndexAdd:
    """A cotangent that is ``value`` added at ``index`` of a zero tensor.

    ``axis`` is None for a static key (ints, slices) and the gathered axis for a
    tensor of indices. The backward pass adds ``value`` into the one buffer it
    owns for the indexed tensor ("inout"), so k reads of an n-element value cost
    O(n + k) instead of O(n * k) (the MLSys paper, section 4.3).
    """

    __slots__ = ("index", "value", "axis")

    def __init__(self, index, value, axis=None):
        self.index = index
        self.value = value
        self.axis = axis

    def dense(self, like):
        """The functional form: ``like``'s zeros with ``value`` added at ``index``."""
        from ..creation import zeros_like
        from ..ops.indexing import index_add, scatter_add

        zeros = zeros_like(like)
        if self.axis is None:
            return index_add(zeros, self.value, key=self.index)
        return scatter_add(zeros, self.index, self.value, axis=self.axis)
