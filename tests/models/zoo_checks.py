"""Checks the image-classifier tests share: a training step on naive and xla, BatchNorm phases, torchvision."""

from __future__ import annotations

import io

import numpy as np
import pytest
from generative_steps import assert_step_agrees

import s4tf


def assert_training_step_agrees_on_naive_and_xla(model, input_shape, classes: int):
    """One training-phase SGD step of a classifier from the same weights on naive and xla agrees.

    Cross-entropy on seeded random images and labels, through
    ``generative_steps.assert_step_agrees`` (weights and running statistics compared).
    """
    rng = np.random.default_rng(0)
    images = rng.standard_normal(input_shape).astype(np.float32)
    labels = rng.integers(0, classes, size=input_shape[0]).astype(np.int32)
    assert_step_agrees(
        model, lambda m, x, y: s4tf.softmax_cross_entropy(logits=m(x), labels=y),
        images, labels, training=True)


def assert_running_statistics_move_only_in_training(model, input_shape):
    """An inference call leaves every BatchNorm's statistics alone; a training call moves them."""
    cells = [leaf for leaf in running_cells(model)]
    assert cells, "the model has no BatchNorm"
    before = [cell.value.numpy().copy() for cell in cells]
    x = s4tf.random.normal(input_shape, seed=1)
    model(x)
    for cell, old in zip(cells, before, strict=True):
        np.testing.assert_array_equal(cell.value.numpy(), old)
    with s4tf.training():
        model(x)
    assert all(not np.array_equal(cell.value.numpy(), old)
               for cell, old in zip(cells, before, strict=True))


def running_cells(value, found=None):
    """Every BatchNorm's running-mean and running-variance cells in ``value``, in field order."""
    found = [] if found is None else found
    if isinstance(value, s4tf.layers.BatchNorm):
        found += [value.running_mean, value.running_variance]
    elif isinstance(value, s4tf.Differentiable):
        for name in type(value)._s4tf_all_fields:
            running_cells(value.__dict__.get(name), found)
    elif isinstance(value, list | tuple):
        for item in value:
            running_cells(item, found)
    return found


def summary_rows(model, input_shape, **options) -> list[str]:
    """The layer rows ``s4tf.summary`` prints (between the two rules)."""
    out = io.StringIO()
    s4tf.summary(model, input_shape, file=out, **options)
    lines = out.getvalue().splitlines()
    rules = [i for i, line in enumerate(lines) if set(line) == {"="}]
    return lines[rules[0] + 1:rules[1]]


def load_torchvision_package():
    """``(torch, torchvision)``; raises when either cannot be imported here.

    The registry's torchvision wheel is a CUDA build whose custom ops fail to
    register against a CPU torch; with ``torch.library.register_fake`` a no-op
    during the import, ``torchvision.models`` builds models fine.
    """
    import torch

    register_fake = torch.library.register_fake
    torch.library.register_fake = lambda *args, **kwargs: (lambda fn: fn)
    try:
        import torchvision
    finally:
        torch.library.register_fake = register_fake
    return torch, torchvision


def import_torchvision():
    """``(torch, torchvision)``, or skip the test saying why."""
    try:
        return load_torchvision_package()
    except Exception as error:  # ImportError, or a RuntimeError from its compiled ops
        pytest.skip(f"torch/torchvision is not importable ({error}); the comparison with "
                    "torchvision needs them (pip install -e '.[reference]')")


def torch_parameter_count(module) -> int:
    return sum(p.numel() for p in module.parameters())
