"""Torchvision as a reference for the zoo: import it when installed, copy its weights.

Not a test module. ``torchvision_models()`` returns ``torchvision.models`` or
None (the import goes through ``zoo_checks.load_torchvision_package``).

``with_torch_weights(model, reference)`` copies a torchvision model's
convolutions, BatchNorms and linear layers into an s4tf model whose layers of
those kinds come in the same order (the zoo's field order follows
torchvision's module order), converting OIHW to HWIO. It is a test's check of
the architecture, not a loader (no key names are compared).
"""

from __future__ import annotations

import importlib.util

import numpy as np
from zoo_checks import load_torchvision_package

import s4tf
from s4tf import layers

_KINDS = (layers.Conv2D, layers.DepthwiseConv2D, layers.BatchNorm, layers.Dense)


def torchvision_models():
    """``torchvision.models``, or None when torch or torchvision is not installed."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchvision") is None:
        return None
    try:
        return load_torchvision_package()[1].models
    except Exception:  # a torchvision that cannot load on this torch is absent for us
        return None


def trainable_count(reference) -> int:
    return sum(p.numel() for p in reference.parameters() if p.requires_grad)


def _s4tf_layers(value, out):
    if isinstance(value, _KINDS):
        out.append(value)
    elif isinstance(value, s4tf.Differentiable):
        for name in type(value)._s4tf_all_fields:
            _s4tf_layers(value.__dict__.get(name), out)
    elif isinstance(value, list | tuple):
        for item in value:
            _s4tf_layers(item, out)
    return out


def _arrays(mine, their):
    """``their`` weights in ``mine``'s layout, in the order of ``mine``'s trainable leaves."""
    weight = their.weight.detach().numpy()
    bias = [] if their.bias is None else [their.bias.detach().numpy()]
    if isinstance(mine, layers.BatchNorm):
        mine.running_mean.value = s4tf.Tensor(their.running_mean.numpy())
        mine.running_variance.value = s4tf.Tensor(their.running_var.numpy())
        return bias + [weight]                      # offset, scale
    if isinstance(mine, layers.Dense):
        return [weight.T] + bias
    if isinstance(mine, layers.DepthwiseConv2D):
        return [weight.transpose(2, 3, 0, 1)] + bias  # (C, 1, h, w) -> (h, w, C, 1)
    return [weight.transpose(2, 3, 1, 0)] + bias      # OIHW -> HWIO


def with_torch_weights(model, reference):
    """``model`` with ``reference``'s weights (and ``model``'s BatchNorm statistics set)."""
    import torch

    theirs = [m for m in reference.modules()
              if isinstance(m, torch.nn.Conv2d | torch.nn.BatchNorm2d | torch.nn.Linear)]
    ours = _s4tf_layers(model, [])
    assert len(ours) == len(theirs), (len(ours), len(theirs))
    arrays = [a for mine, their in zip(ours, theirs, strict=True) for a in _arrays(mine, their)]
    leaves, treedef = s4tf.tree_flatten(model, differentiable=True)
    assert [tuple(leaf.shape) for leaf in leaves] == [a.shape for a in arrays]
    return s4tf.tree_unflatten(treedef, [s4tf.Tensor(np.ascontiguousarray(a, dtype=np.float32))
                                         for a in arrays])


def reference_logits(reference, images: np.ndarray) -> np.ndarray:
    """``reference``'s inference logits for NHWC ``images``."""
    import torch

    reference.eval()
    with torch.no_grad():
        return reference(torch.from_numpy(images.transpose(0, 3, 1, 2).copy())).numpy()
