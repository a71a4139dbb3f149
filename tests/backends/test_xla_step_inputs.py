"""What enters a compiled xla step: no large constants uploaded per step."""

from __future__ import annotations

import numpy as np
import pytest

import s4tf

pytest.importorskip("jax")

from s4tf.backends.xla import graph  # noqa: E402


@pytest.fixture(autouse=True)
def nothing_pending():
    s4tf.barrier()
    yield
    s4tf.barrier()


def _device_parameter_shapes(fn):
    """Shapes of the device buffers the step of ``fn()`` takes (run after collecting)."""
    kept = fn()
    trace = graph.collect()
    shapes = sorted(x.shape for x in trace._device)
    graph.execute(trace)
    return shapes, kept


def test_zeros_like_records_a_broadcast_instead_of_uploading_zeros():
    with s4tf.backend("xla"):
        x = s4tf.ones([64, 32])
    s4tf.barrier()
    shapes, zeros = _device_parameter_shapes(lambda: (s4tf.zeros_like(x), s4tf.ones_like(x)))
    assert shapes == []
    np.testing.assert_array_equal(zeros[0].numpy(), np.zeros((64, 32), np.float32))
    np.testing.assert_array_equal(zeros[1].numpy(), np.ones((64, 32), np.float32))


def test_a_slices_gradient_uploads_no_zeros_of_the_sliced_shape():
    with s4tf.backend("xla"):
        x = s4tf.Tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    s4tf.barrier()

    def step():
        return s4tf.gradient(x, of=lambda t: (s4tf.split(t, 2, axis=1)[1] ** 2).sum())

    shapes, grad = _device_parameter_shapes(step)
    assert shapes == [(3, 4)]  # x itself, nothing else of its shape
    expected = np.zeros((3, 4), np.float32)
    expected[:, 2:] = 2 * np.arange(12.0).reshape(3, 4)[:, 2:]
    np.testing.assert_array_equal(grad.numpy(), expected)


def test_layer_norm_gradient_reduces_only_for_the_scale_and_offset():
    # The unit scale its rules need is a broadcast constant, not
    # sum(x * 0) * 0 + 1: no extra pass over x, no extra scalar inputs.
    from s4tf.ops.layer_norm import layer_norm

    rng = np.random.default_rng(0)
    with s4tf.backend("xla"):
        x = s4tf.Tensor(rng.normal(size=(4, 3, 8)).astype(np.float32))
        scale = s4tf.Tensor(rng.normal(size=(8,)).astype(np.float32))
        offset = s4tf.zeros([8])
    s4tf.barrier()
    grads = s4tf.gradient(x, scale, offset,
                          of=lambda x, s, b: (layer_norm(x, s, b, epsilon=1e-5) ** 2).sum())
    trace = graph.collect()
    ops = [op for _, op, _, _ in trace.program]
    graph.execute(trace)
    assert ops.count("reduce_sum") == 2, ops
    with s4tf.backend("naive"):
        expected = s4tf.gradient(*(s4tf.to_backend(t, "naive") for t in (x, scale, offset)),
                                 of=lambda x, s, b: (layer_norm(x, s, b, epsilon=1e-5) ** 2).sum())
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
