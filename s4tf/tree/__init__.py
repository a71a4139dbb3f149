"""Pytrees: the one place that knows how a value decomposes into its leaves, and back.

Containers are lists, tuples (named ones too), dicts, and the classes
registered in :mod:`.registry`: *nodes* (:class:`s4tf.Differentiable`
dataclasses register their fields when the class is created, as JAX's
``register_pytree_node``) and *cells* (:class:`s4tf.State`, a mutable box
differentiation never enters). Leaves are Tensors and Python floats;
everything else (ints, strings, callables, None) is static structure. With
``differentiable=True`` only the values differentiation sees are leaves:
floating tensors and floats outside ``no_derivative`` fields and cells.

Every walk over a value goes through here: :func:`tree_flatten` and
:class:`TreeDef` (:mod:`.flatten`, the hot path of differentiation),
:func:`tree_children` (one level, with path keys), :func:`tree_map` and
:func:`tree_map_broadcast` (several trees at once), :func:`tree_leaf_paths`
(dotted names of leaves, :mod:`.children`); :func:`get` and :func:`at` read
and replace the part at a dotted path (:mod:`.paths`). Nothing here imports a class
above :class:`~s4tf.tensor.Tensor`: the walks dispatch on the registry.
"""

from __future__ import annotations

from .children import join_path, tree_children, tree_leaf_paths, tree_map_broadcast
from .flatten import TreeDef, is_leaf, is_zero, tree_flatten, tree_leaves, tree_map, tree_unflatten
from .paths import at, get
from .registry import NodeType, node_type, register_cell, register_node

__all__ = [
    "NodeType", "TreeDef", "at", "get", "is_leaf", "is_zero", "join_path", "node_type", "register_cell",
    "register_node", "tree_children", "tree_flatten", "tree_leaf_paths", "tree_leaves",
    "tree_map", "tree_map_broadcast", "tree_unflatten",
]
