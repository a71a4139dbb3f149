"""Checks every image model of the mobile zoo gets (not a test module; the family tests call these)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from zoo_checks import running_cells

import s4tf
from s4tf import optimizers


def batch(shape, classes, seed=0):
    """Seeded NHWC images and integer labels as NumPy arrays."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.integers(0, classes, size=shape[0]).astype(np.int32))


def _step(model, backend, images, labels, seed):
    """One SGD step in the training phase on ``backend``: loss, new weights, running means."""
    with s4tf.backend(backend):
        model = s4tf.to_backend(model, backend)
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
        opt = optimizers.SGD(model, learning_rate=0.1)
        s4tf.random.seed(seed)  # the same dropout and stochastic-depth draws on both backends
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(
                model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
        model = opt.update(model, grads)
        s4tf.barrier()
        weights = [leaf.numpy() for leaf in s4tf.tree_leaves(model, differentiable=True)]
        means = [cell.value.numpy() for cell in running_cells(model)]
        return loss.item(), weights, means


def check_gradient_step_agrees(make_model, input_shape, classes, rtol=1e-3):
    """One training step of the same initial model on naive and on xla gives the same model.

    Each weight's update on xla must be within ``rtol`` of naive's (relative
    to the update's norm: float32 sums in another order) or within 1e-6 per
    element, and every weight must move.
    """
    pytest.importorskip("jax")
    s4tf.random.seed(0)
    with s4tf.backend("naive"):
        model = make_model()
    images, labels = batch(input_shape, classes)
    before = [leaf.numpy() for leaf in s4tf.tree_leaves(model, differentiable=True)]
    # xla first: moving to xla copies the BatchNorm cells, so the naive step
    # after it starts from the same statistics.
    loss_xla, weights_xla, means_xla = _step(model, "xla", images, labels, seed=7)
    loss_naive, weights_naive, means_naive = _step(model, "naive", images, labels, seed=7)
    assert np.isfinite(loss_naive)
    assert loss_xla == pytest.approx(loss_naive, rel=1e-5, abs=1e-5)
    for i, (old, naive, xla) in enumerate(zip(before, weights_naive, weights_xla, strict=True)):
        update = np.linalg.norm(naive - old)
        assert update > 0, f"weight {i} of shape {old.shape} did not move"
        # An update near zero (an offset followed by BatchNorm) is compared absolutely.
        assert np.linalg.norm(xla - naive) <= rtol * update + 1e-6 * np.sqrt(old.size), (
            f"weight {i} of shape {old.shape}: xla and naive updates differ by "
            f"{np.linalg.norm(xla - naive)}, the update's norm is {update}")
    for naive, xla in zip(means_naive, means_xla, strict=True):
        np.testing.assert_allclose(xla, naive, rtol=1e-4, atol=1e-5)


def check_summary(model, input_shape, total):
    """``s4tf.summary`` runs on ``model`` and reports ``total`` parameters."""
    out = io.StringIO()
    s4tf.summary(model, input_shape, file=out)
    text = out.getvalue()
    assert f"{total:,}" in text, text[-500:]


def check_save_load(model, input_shape, path):
    """``s4tf.load(path)`` rebuilds ``model`` (no ``like=``), BatchNorm statistics included."""
    x = s4tf.random.normal(list(input_shape), seed=4)
    with s4tf.training():
        model(x)  # statistics away from their initial values
    s4tf.save(model, path)
    loaded = s4tf.load(path)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
