"""Gradient clipping by the global norm of all gradient leaves."""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from ..tree import tree_flatten, tree_unflatten

__all__ = ["clip_by_global_norm", "global_norm"]


def global_norm(grads) -> float:
    """``sqrt(sum of squares)`` over every Tensor and float in ``grads``.

    Examples
    --------
    >>> import s4tf
    >>> s4tf.optimizers.global_norm([s4tf.Tensor([3.0]), 4.0])
    5.0
    """
    total = 0.0
    for leaf in tree_flatten(grads)[0]:
        values = leaf.numpy() if isinstance(leaf, Tensor) else leaf
        total += float(np.sum(np.square(np.asarray(values, np.float64))))
    return math.sqrt(total)


def clip_by_global_norm(grads, max_norm: float):
    """``grads`` scaled by ``max_norm / global_norm(grads)`` when the norm exceeds ``max_norm``.

    The direction is kept; leaves keep their dtypes; a gradient within the
    limit comes back unchanged (the same object).

    Examples
    --------
    >>> import s4tf
    >>> clipped = s4tf.optimizers.clip_by_global_norm([s4tf.Tensor([3.0]), 4.0], max_norm=1.0)
    >>> clipped[0].tolist(), round(clipped[1], 6)
    ([0.6000000238418579], 0.8)
    """
    if not max_norm > 0:
        raise ValueError(f"clip_by_global_norm: max_norm must be > 0, got {max_norm!r}.")
    norm = global_norm(grads)
    if norm <= max_norm:
        return grads
    scale = max_norm / norm
    leaves, treedef = tree_flatten(grads)
    return tree_unflatten(treedef, [leaf * scale for leaf in leaves])
