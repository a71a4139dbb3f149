"""What an exported function takes: one named, shaped, typed input per leaf of its arguments.

An artifact takes the tensor leaves of ``fn``'s arguments in
:func:`s4tf.tree_leaves` order (Python floats among them, such as a
BatchNorm's momentum, are constants of the artifact, as
:func:`s4tf.interop.as_jax_function` makes them). Each gets a name (the argument's parameter name, then the leaf's
dotted path: ``model.conv1.filter``, ``x``), a shape and a dtype. With batch
polymorphism the leading axis of the *batch* leaves is the symbol ``batch``:
a rank >= 1 tensor that is not inside a model (a registered node, such as a
Layer, or a ``State`` cell) and whose leading size is the first such
tensor's. A model's parameters and an optimizer's slots (the same
Differentiable structure) keep their sizes, so the artifact accepts any
number of examples and nothing else changes shape.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

from ..tensor import Tensor
from ..tree import is_leaf, join_path, tree_children

__all__ = ["BATCH", "LeafSpec", "leaf_specs", "tensor_paths"]

BATCH = "batch"


class LeafSpec(NamedTuple):
    """One input or output of an artifact: its name, shape and dtype name.

    A symbolic axis is the string ``"batch"`` in ``shape``.

    Examples
    --------
    >>> from s4tf.exporting import LeafSpec
    >>> LeafSpec("x", ("batch", 3), "float32").shape
    ('batch', 3)
    """

    name: str
    shape: tuple
    dtype: str


def _parameter_names(fn, count: int) -> list[str]:
    """The names of ``fn``'s first ``count`` positional parameters (``arg<i>`` past them)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or a C callable
        parameters = []
    positional = [p.name for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [positional[i] if i < len(positional) else f"arg{i}" for i in range(count)]


def _leaves_with_roles(value, path: str, in_model: bool, out: list) -> None:
    """Append ``(path, leaf, in_model)`` for each leaf, in :func:`s4tf.tree_leaves` order."""
    if is_leaf(value):
        out.append((path, value, in_model))
        return
    kind, children = tree_children(value)
    inside = in_model or kind in ("node", "cell")
    for key, child, _ in children:
        _leaves_with_roles(child, join_path(path, key), inside, out)


def tensor_paths(value) -> list[str]:
    """The dotted paths of the tensor leaves of ``value``, in :func:`s4tf.tree_leaves` order.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.exporting.signature import tensor_paths
    >>> tensor_paths({"w": s4tf.ones([2]), "momentum": 0.9, "b": [s4tf.ones([1])]})
    ['w', 'b.0']
    """
    entries: list = []
    _leaves_with_roles(value, "", False, entries)
    return [path for path, leaf, _ in entries if isinstance(leaf, Tensor)]


def leaf_specs(fn, args: tuple, batch_polymorphic: bool) -> list[LeafSpec]:
    """A :class:`LeafSpec` per tensor leaf of ``args`` (``fn``'s example arguments), in order.

    Examples
    --------
    >>> import s4tf
    >>> from s4tf.exporting.signature import leaf_specs
    >>> model = s4tf.layers.Dense(3, 2)
    >>> for spec in leaf_specs(lambda model, x: model(x), (model, s4tf.ones([5, 3])), True):
    ...     print(spec)
    LeafSpec(name='model.weight', shape=(3, 2), dtype='float32')
    LeafSpec(name='model.bias', shape=(2,), dtype='float32')
    LeafSpec(name='x', shape=('batch', 3), dtype='float32')
    """
    found: list = []
    for name, arg in zip(_parameter_names(fn, len(args)), args, strict=True):
        entries: list = []
        _leaves_with_roles(arg, "", False, entries)
        found += [(join_path(name, path) if path else name, leaf, in_model)
                  for path, leaf, in_model in entries if isinstance(leaf, Tensor)]
    batch_size = next((leaf.shape[0] for _, leaf, in_model in found
                       if leaf.ndim >= 1 and not in_model), None)
    specs = []
    for name, leaf, in_model in found:
        shape = tuple(leaf.shape)
        if (batch_polymorphic and not in_model and shape and shape[0] == batch_size):
            shape = (BATCH, *shape[1:])
        specs.append(LeafSpec(name, shape, leaf.dtype.name))
    return specs
