"""Moving whole values (models, optimizer state) between backends: a map over the tree."""

from __future__ import annotations

from .tensor import Tensor
from .tree import tree_map

__all__ = ["to_backend"]


def to_backend(value, name: str):
    """``value`` with every tensor in it on backend ``name``, State cells included.

    Examples
    --------
    >>> import s4tf
    >>> moved = s4tf.to_backend({"w": s4tf.ones([2]), "n": 3}, "naive")
    >>> moved["w"].backend, moved["n"]
    ('naive', 3)
    """
    if isinstance(value, Tensor):
        return value.to(name)
    return tree_map(lambda leaf: leaf.to(name) if isinstance(leaf, Tensor) else leaf, value)
