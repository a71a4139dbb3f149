"""Dotted names of a model's differentiable leaves, in ``tree_flatten`` order."""

from __future__ import annotations

import numpy as np

from ..differentiable import Differentiable
from ..tensor import Tensor

__all__ = ["leaf_paths"]


def leaf_paths(value, prefix: str = "") -> list[str]:
    """``["conv1.filter", "layers.0.bias", ...]`` for the leaves of ``value``.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.optimizers._paths import leaf_paths
    >>> leaf_paths({"a": [s4tf.ones([2]), 1.0]})
    ['a.0', 'a.1']
    """
    out: list[str] = []
    _walk(value, prefix, out)
    return out


def _join(prefix: str, name) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _walk(value, prefix, out):
    # Mirrors tree._flatten(differentiable=True).
    if isinstance(value, Tensor):
        if value.dtype.is_floating:
            out.append(prefix or "value")
        return
    if isinstance(value, float) and not isinstance(value, np.bool_):
        out.append(prefix or "value")
        return
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _walk(item, _join(prefix, i), out)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(item, _join(prefix, key), out)
        return
    if isinstance(value, Differentiable):
        cls = type(value)
        for name in cls._s4tf_all_fields:
            if name not in cls._s4tf_no_derivative:
                _walk(getattr(value, name), _join(prefix, name), out)
