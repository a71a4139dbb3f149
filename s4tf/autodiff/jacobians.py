"""Jacobians and Hessians: one batched pullback or differential, never a pass per element.

Reverse mode runs the function once, then its pullback vmapped over the rows
of the identity (one one-hot cotangent per output element): every row of the
Jacobian comes out of one backward pass whose ops work on a batch. Forward
mode vmaps the differential over one-hot tangents of the points instead
(every column at once). The Hessian is forward over reverse: the forward
Jacobian of the gradient.

Results follow the structures, as ``jax.jacrev`` does: for each differentiable
leaf of ``f``'s result, the points' tangent structure whose leaves have shape
``result_leaf.shape + point_leaf.shape`` (a tuple of them for several points);
a Tensor-valued ``f`` of one Tensor point gives one Tensor of shape
``f(x).shape + x.shape``.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import float64
from ..ops import split, transpose
from ..ops.shapes import reshape, shape_of
from ..ops.tracer import innermost, is_float_like
from ..tensor import Tensor, from_numpy
from ..tree import tree_flatten
from .operators import _operator, _pack, gradient, value_with_differential, value_with_pullback
from .vmap import vmap

__all__ = ["hessian", "jacobian"]


class _Leaves:
    """The differentiable leaves of some values, laid end to end along one flat axis."""

    __slots__ = ("leaves", "shapes", "sizes", "total")

    def __init__(self, leaves):
        self.leaves = leaves
        self.shapes = [shape_of(leaf) for leaf in leaves]
        self.sizes = [int(np.prod(shape)) for shape in self.shapes]
        self.total = sum(self.sizes)

    def unit_vectors(self):
        """Per leaf, its share of ``eye(total)``, shaped ``(total, *leaf.shape)``.

        Row ``r`` is the r-th unit vector of the flat axis cut to this leaf: zero
        unless ``r`` falls in the leaf's segment. Host constants in the leaf's
        dtype (float64 for a float), on the leaf's backend.
        """
        tensors = [innermost(leaf) for leaf in self.leaves]
        # A float leaf has no backend of its own: its rows go where the tensors are.
        like = next((t for t in tensors if isinstance(t, Tensor)), None)
        rows, start = [], 0
        for concrete, shape, size in zip(tensors, self.shapes, self.sizes, strict=True):
            dtype = concrete.dtype if isinstance(concrete, Tensor) else float64
            block = np.zeros((self.total, size), dtype.numpy)
            block[np.arange(start, start + size), np.arange(size)] = 1
            rows.append(from_numpy(block.reshape((self.total, *shape)), dtype,
                                   like=concrete if isinstance(concrete, Tensor) else like))
            start += size
        return rows

    def cut(self, batched):
        """``batched`` (flat axis first) cut along that axis, one part per leaf."""
        return [batched] if len(self.sizes) == 1 else split(batched, self.sizes, axis=0)


def _differentiable_leaves(value, what):
    leaves, treedef = tree_flatten(value, differentiable=True)
    if not leaves:
        raise TypeError(
            f"jacobian: {what} holds no floats or floating tensors ({type(value).__name__} "
            f"{value!r:.60}). A Jacobian needs floating values on both sides: pass floats (3.0, "
            "not 3), floating tensors or Differentiable values."
        )
    return _Leaves(leaves), treedef


def _block(value, shape, point_leaf):
    """One Jacobian block, reshaped to ``shape``; a float for the 0-d block of a float point."""
    block = reshape(value, shape)
    if shape == () and is_float_like(point_leaf):
        return float(block.item()) if type(block) is Tensor else block
    return block


def _assemble(blocks, out_def, point_defs):
    """The result from ``blocks[k][p]``, the leaf blocks of result leaf ``k`` and point ``p``."""
    return out_def.tangent_unflatten([
        _pack([treedef.tangent_unflatten(leaves)
               for treedef, leaves in zip(point_defs, row, strict=True)])
        for row in blocks
    ])


def _reverse(points, of):
    value, pb = value_with_pullback(*points, of=of)
    outs, out_def = _differentiable_leaves(value, "the function's result")
    ins = [_differentiable_leaves(point, f"argument {i}") for i, point in enumerate(points)]
    # One pass: the pullback of every unit cotangent at once (rows of the Jacobian).
    tangents = vmap(pb)(out_def.tangent_unflatten(outs.unit_vectors()))
    tangents = (tangents,) if len(points) == 1 else tangents
    # parts[p][j][k]: point p's leaf j, the rows of result leaf k.
    parts = [[outs.cut(rows) for rows in treedef.tangent_leaves(tangent)]
             for (_, treedef), tangent in zip(ins, tangents, strict=True)]
    blocks = [
        [[_block(parts[p][j][k], (*out_shape, *shape), leaf)
          for j, (leaf, shape) in enumerate(zip(point.leaves, point.shapes, strict=True))]
         for p, (point, _) in enumerate(ins)]
        for k, out_shape in enumerate(outs.shapes)
    ]
    return _assemble(blocks, out_def, [treedef for _, treedef in ins])


def _forward(points, of):
    value, df = value_with_differential(*points, of=of)
    outs, out_def = _differentiable_leaves(value, "the function's result")
    ins = [_differentiable_leaves(point, f"argument {i}") for i, point in enumerate(points)]
    # One flat axis over every leaf of every point: the differential of its unit
    # vectors, all at once, gives every column of the Jacobian.
    flat = _Leaves([leaf for point, _ in ins for leaf in point.leaves])
    units = iter(flat.unit_vectors())
    tangents = [treedef.tangent_unflatten([next(units) for _ in point.leaves])
                for point, treedef in ins]
    columns = out_def.tangent_leaves(vmap(df)(*tangents))
    blocks = []
    for column, out_shape in zip(columns, outs.shapes, strict=True):
        parts = iter(flat.cut(column))
        # (leaf size, *out_shape) -> (*out_shape, leaf size): the columns go last.
        last = (*range(1, len(out_shape) + 1), 0)
        blocks.append([
            [_block(transpose(next(parts), last), (*out_shape, *shape), leaf)
             for leaf, shape in zip(point.leaves, point.shapes, strict=True)]
            for point, _ in ins
        ])
    return _assemble(blocks, out_def, [treedef for _, treedef in ins])


@_operator
def jacobian(*points, of, mode="reverse"):
    """The Jacobian of ``of`` at ``points``: every derivative of every result element.

    Built on :func:`s4tf.vmap`: reverse mode (the default) runs ``of`` once and
    its pullback once over a batch of one-hot cotangents, one per result
    element; forward mode pushes a batch of one-hot tangents, one per point
    element, through the differential. Pick the mode with fewer elements on
    its side: ``"reverse"`` when the result is smaller than the points.

    Parameters
    ----------
    *points : Differentiable
        Where to differentiate: floats, floating tensors, Differentiable values
        (models, dataclasses, lists, dicts of them).
    of : callable
        The function; it takes one argument per point and returns a floating
        Tensor, a float, or a Differentiable value.
    mode : {"reverse", "forward"}
        Batched pullbacks (rows) or batched differentials (columns); the
        result is the same.

    Returns
    -------
    For a Tensor-valued ``of`` of one Tensor point, a Tensor of shape
    ``of(x).shape + x.shape``. For a Differentiable point, its TangentVector
    whose leaves have ``of(x).shape + leaf.shape``; with several points, a
    tuple of those. A result with several leaves (a tuple, a TangentVector)
    gives its own tangent structure of those.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.Tensor([1.0, 2.0, 3.0])
    >>> s4tf.jacobian(x, of=lambda x: x * x).tolist()
    [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]
    >>> w = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> s4tf.jacobian(w, of=lambda w: w @ s4tf.Tensor([1.0, 1.0]), mode="forward").shape
    (2, 2, 2)
    >>> s4tf.jacobian(2.0, of=lambda t: t ** 3)
    12.0
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"jacobian: mode must be 'reverse' or 'forward'; received mode={mode!r}.")
    return _reverse(points, of) if mode == "reverse" else _forward(points, of)


@_operator
def hessian(*points, of):
    """The Hessian of scalar-valued ``of`` at ``points``: the Jacobian of its gradient.

    Forward over reverse, as ``jax.hessian``: the gradient is differentiated by
    forward-mode Jacobian (one batched differential over the points' one-hot
    tangents), so second derivatives come from one pass.

    Returns
    -------
    For one Tensor point, a Tensor of shape ``x.shape + x.shape``. For a
    Differentiable point, its TangentVector (the gradient's structure) whose
    leaves are TangentVectors (the point's structure) of blocks
    ``leaf_i.shape + leaf_j.shape``: ``h.w.b`` is the block of second
    derivatives in ``w`` then ``b``. With several points, a tuple of tuples:
    ``h[0][1]`` is the block of the first point and the second.

    Examples
    --------
    >>> import s4tf
    >>> x = s4tf.Tensor([1.0, 2.0])
    >>> s4tf.hessian(x, of=lambda x: (x * x * x).sum()).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    >>> s4tf.hessian(3.0, of=lambda t: t ** 3)
    18.0
    """
    return jacobian(*points, of=gradient(of=of), mode="forward")
