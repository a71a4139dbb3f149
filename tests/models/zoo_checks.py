"""Checks every zoo family runs: one training step on naive and xla, BatchNorm phases, torchvision."""

from __future__ import annotations

import io

import numpy as np
import pytest

import s4tf
from s4tf import optimizers


def _tensor_leaves(value) -> list[np.ndarray]:
    return [leaf.numpy() for leaf in s4tf.tree_leaves(value) if isinstance(leaf, s4tf.Tensor)]


def _train_step(model, x, labels, backend: str):
    """Loss, and every tensor (weights and running statistics) after one SGD step on ``backend``."""
    with s4tf.backend(backend):
        x, labels = s4tf.Tensor(x), s4tf.Tensor(labels)
        with s4tf.training():
            loss, grad = s4tf.value_with_gradient(
                model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=labels))
        model = optimizers.SGD(model, learning_rate=0.1).update(model, grad)
        s4tf.barrier()
        return loss.item(), _tensor_leaves(model)


def assert_training_step_agrees_on_naive_and_xla(model, input_shape, classes: int,
                                                 rtol: float = 2e-4, atol: float = 2e-5):
    """One training-phase SGD step from the same weights on naive and xla gives the same model."""
    pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(input_shape).astype(np.float32)
    labels = rng.integers(0, classes, size=input_shape[0]).astype(np.int32)
    lazy = s4tf.to_backend(model, "xla")  # before the naive step moves the running statistics
    want_loss, want = _train_step(model, x, labels, "naive")
    got_loss, got = _train_step(lazy, x, labels, "xla")
    assert np.isfinite(want_loss) and abs(got_loss - want_loss) <= 1e-4 * max(1.0, abs(want_loss))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"tensor leaf {i}")


def assert_running_statistics_move_only_in_training(model, input_shape):
    """An inference call leaves every BatchNorm's statistics alone; a training call moves them."""
    cells = [leaf for leaf in _running_cells(model)]
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


def _running_cells(value, found=None):
    found = [] if found is None else found
    if isinstance(value, s4tf.layers.BatchNorm):
        found += [value.running_mean, value.running_variance]
    elif isinstance(value, s4tf.Differentiable):
        for name in type(value)._s4tf_all_fields:
            _running_cells(value.__dict__.get(name), found)
    elif isinstance(value, list | tuple):
        for item in value:
            _running_cells(item, found)
    return found


def summary_rows(model, input_shape, **options) -> list[str]:
    """The layer rows ``s4tf.summary`` prints (between the two rules)."""
    out = io.StringIO()
    s4tf.summary(model, input_shape, file=out, **options)
    lines = out.getvalue().splitlines()
    rules = [i for i, line in enumerate(lines) if set(line) == {"="}]
    return lines[rules[0] + 1:rules[1]]


def import_torchvision():
    """``(torch, torchvision)``, or skip the test saying why.

    The registry's torchvision wheel is a CUDA build whose custom ops fail to
    register against a CPU torch; with ``torch.library.register_fake`` a no-op
    during the import, ``torchvision.models`` builds models fine.
    """
    try:
        import torch
    except ImportError as error:
        pytest.skip(f"torch is not importable ({error}); the comparison with torchvision needs it")
    register_fake = torch.library.register_fake
    torch.library.register_fake = lambda *args, **kwargs: (lambda fn: fn)
    try:
        import torchvision
    except Exception as error:  # ImportError, or a RuntimeError from its compiled ops
        pytest.skip(f"torchvision is not importable ({error})")
    finally:
        torch.library.register_fake = register_fake
    return torch, torchvision


def torch_parameter_count(module) -> int:
    return sum(p.numel() for p in module.parameters())
