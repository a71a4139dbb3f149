"""An update's gradients, checked against the model and the optimizer before anything is written.

:func:`leaf_gradients` aligns a gradient (the model's ``TangentVector``) with
the model's leaves and checks each against the shape and dtype the optimizer
was made for; only then does it move any to its parameter's backend, so a bad
gradient costs no transfer and leaves the model untouched.
"""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tree import tree_flatten
from .tensor_buffers import full_on

__all__ = ["leaf_gradients"]


def leaf_gradients(name: str, model, grads, paths, shapes, dtypes) -> list:
    """Every leaf's gradient, checked before anything is written.

    ``name`` is the optimizer's (for messages); ``paths``, ``shapes`` and
    ``dtypes`` describe the leaves it was made for. A tensor leaf's gradient
    comes back as a Tensor on the leaf's backend with its dtype (moved there if
    it came from another backend; a zero one for ``None``); a float leaf's as a
    0-d float64 host array.

    Examples
    --------
    >>> import numpy as np, s4tf
    >>> from s4tf.optimizers.gradients import leaf_gradients
    >>> model = [s4tf.ones([2]), 1.0]
    >>> grads = leaf_gradients("SGD", model, [None, 2.0], ["0", "1"], [(2,), ()],
    ...                        [np.dtype("float32"), np.dtype("float64")])
    >>> grads[0].tolist(), float(grads[1])
    ([0.0, 0.0], 2.0)
    """
    leaves, treedef = tree_flatten(model, differentiable=True)
    if len(leaves) != len(shapes):
        raise ValueError(
            f"{name} was made for a model with {len(shapes)} parameters, but update() got a "
            f"{type(model).__name__} with {len(leaves)}. Make a new optimizer for a model of a "
            "different structure (also after s4tf.freeze or s4tf.unfreeze: an optimizer is "
            "made for the parameters it trains)."
        )
    tangents = treedef.tangent_leaves(grads, f"{name}.update: the gradients of this "
                                      f"{type(model).__name__}")
    # Most gradients are Tensors already fit for their rule: one test each, no call.
    slow = [i for i, (leaf, grad, shape, dtype) in enumerate(zip(leaves, tangents, shapes, dtypes,
                                                                  strict=True))
            if not (type(leaf) is Tensor and type(grad) is Tensor
                    and grad._backend is leaf._backend and leaf._data.shape == shape
                    and grad._data.shape == shape and grad._data.dtype == dtype)]
    for i in slow:
        leaf, path, shape = leaves[i], paths[i], shapes[i]
        leaf_shape = () if isinstance(leaf, float) else leaf.shape
        if leaf_shape != shape:
            raise ValueError(
                f"{name}.update: parameter {path!r} has shape {leaf_shape}, but the optimizer "
                f"was made for shape {shape}. Make a new optimizer for the changed model."
            )
        tangents[i] = _checked(name, path, tangents[i], shape, dtypes[i])
    # Conversions only after every gradient passed: a bad one must not cost a transfer.
    for i in slow:
        tangents[i] = _on_backend_of(leaves[i], tangents[i], dtypes[i])
    return tangents


def _checked(name, path, grad, shape, dtype):
    """``grad`` checked against its parameter's shape and dtype (None and numbers pass)."""
    if grad is None:
        return None
    if isinstance(grad, float | int) and not isinstance(grad, bool):
        if shape == ():
            return float(grad)
        raise TypeError(
            f"{name}.update: the gradient of {path!r} is the number {grad!r}, but the parameter is "
            f"a tensor of shape {shape}; pass a Tensor of that shape (or None for zero)."
        )
    if not isinstance(grad, Tensor):
        raise TypeError(
            f"{name}.update: the gradient of {path!r} is a {type(grad).__name__}; expected a "
            f"Tensor of shape {shape} (or None for zero)."
        )
    if grad.shape != shape:
        raise ValueError(
            f"{name}.update: the gradient of {path!r} has shape {grad.shape}, but the parameter "
            f"has shape {shape}. Pass the gradient computed for this model."
        )
    if grad.dtype.numpy != dtype and shape != ():
        raise TypeError(
            f"{name}.update: the gradient of {path!r} has dtype {grad.dtype}, but the parameter "
            f"is {np.dtype(dtype).name}; cast it with grad.astype(...) first."
        )
    return grad


def _on_backend_of(leaf, grad, dtype):
    """A checked gradient where its parameter's rule runs, in the parameter's dtype."""
    if isinstance(leaf, float):
        if isinstance(grad, Tensor):
            return np.asarray(grad.numpy(), np.float64)
        return np.asarray(0.0 if grad is None else grad, np.float64)
    backend = leaf._backend
    if grad is None:
        return full_on(backend, leaf.shape, dtype, 0)
    if not isinstance(grad, Tensor):
        return full_on(backend, leaf.shape, dtype, grad)
    if grad._backend is not backend:
        grad = grad.to(backend.name)
    if grad._data.dtype != dtype:
        grad = grad.astype(dtype)  # only 0-d gradients get here (checked above)
    return grad
