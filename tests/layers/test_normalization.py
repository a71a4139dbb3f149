"""BatchNorm, LayerNorm, GroupNorm, InstanceNorm: statistics, learning phase, gradients."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients

X = np.random.default_rng(0).normal(2.0, 3.0, size=(6, 4, 5))


def _norm(x, axes, eps):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def test_batchnorm_fields_and_defaults():
    bn = layers.BatchNorm(feature_count=5)
    assert (bn.axis, bn.momentum, bn.epsilon) == (-1, 0.99, 0.001)
    assert bn.offset.tolist() == [0.0] * 5 and bn.scale.tolist() == [1.0] * 5
    assert isinstance(bn.running_mean, s4tf.State) and isinstance(bn.running_variance, s4tf.State)
    assert bn.running_variance.value.tolist() == [1.0] * 5
    assert layers.BatchNorm.TangentVector._s4tf_field_names == ("offset", "scale")


def test_batchnorm_training_uses_batch_stats_and_moves_running_stats():
    bn = layers.BatchNorm(feature_count=5, momentum=0.9, dtype=s4tf.float64)
    x = s4tf.Tensor(X)
    with s4tf.training():
        y = bn(x)
    np.testing.assert_allclose(y.numpy(), _norm(X, (0, 1), 0.001), rtol=1e-10)
    batch_mean, batch_var = X.mean((0, 1)), X.var((0, 1))
    np.testing.assert_allclose(bn.running_mean.value.numpy(), 0.1 * batch_mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_variance.value.numpy(), 0.9 + 0.1 * batch_var, rtol=1e-12)
    with s4tf.training():
        bn(x)
    np.testing.assert_allclose(bn.running_mean.value.numpy(), 0.9 * 0.1 * batch_mean + 0.1 * batch_mean,
                               rtol=1e-12)
    # Inference: the running statistics, and nothing moves.
    before = bn.running_mean.value.numpy().copy()
    out = bn(x).numpy()
    rm, rv = bn.running_mean.value.numpy(), bn.running_variance.value.numpy()
    np.testing.assert_allclose(out, (X - rm) / np.sqrt(rv + 0.001), rtol=1e-12)
    np.testing.assert_array_equal(bn.running_mean.value.numpy(), before)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_batchnorm_updates_inside_differentiation_without_leaking_tracers(mode):
    bn = layers.BatchNorm(feature_count=5, dtype=s4tf.float64)
    x = s4tf.Tensor(X)
    with s4tf.training():
        if mode == "reverse":
            s4tf.gradient(bn, x, of=lambda m, x: (m(x) ** 2).sum())
        else:
            s4tf.derivative(1.0, of=lambda s: (bn(x * s) ** 2).sum())
    value = bn.running_mean.value
    assert type(value) is s4tf.Tensor  # a plain tensor, not a tracer
    np.testing.assert_allclose(value.numpy(), 0.01 * X.mean((0, 1)), rtol=1e-10)
    assert bn(x).shape == X.shape  # still usable afterwards


def test_batchnorm_other_axis_and_gradients():
    bn = layers.BatchNorm(feature_count=4, axis=1, dtype=s4tf.float64)
    bn = s4tf.replace(bn, scale=s4tf.Tensor([1.0, 2.0, 0.5, 1.5], dtype=s4tf.float64))
    with s4tf.training():
        y = bn(s4tf.Tensor(X))
        np.testing.assert_allclose(
            y.numpy(), _norm(X, (0, 2), 0.001) * np.array([1.0, 2.0, 0.5, 1.5])[:, None], rtol=1e-10)
        check_gradients(lambda m, x: m(x), bn, s4tf.Tensor(X[:3]))
    with s4tf.inference():   # the running statistics' path, on purpose
        check_gradients(lambda m, x: m(x), bn, s4tf.Tensor(X[:3]))


def test_layernorm_groupnorm_instancenorm_values_and_gradients():
    x = s4tf.Tensor(X)
    ln = layers.LayerNorm(feature_count=5, dtype=s4tf.float64)
    np.testing.assert_allclose(ln(x).numpy(), _norm(X, (-1,), 0.001), rtol=1e-10)
    gn = layers.GroupNorm(feature_count=4, group_count=2, axis=1, dtype=s4tf.float64)
    grouped = X.reshape(6, 2, 2, 5)
    np.testing.assert_allclose(gn(x).numpy(), _norm(grouped, (2, 3), 0.001).reshape(X.shape), rtol=1e-10)
    inorm = layers.InstanceNorm(feature_count=5, dtype=s4tf.float64)
    np.testing.assert_allclose(inorm(x).numpy(), _norm(X, (1,), 0.001), rtol=1e-10)
    small = s4tf.Tensor(X[:2])
    for layer in (ln, gn, inorm):
        check_gradients(lambda m, x: m(x), layer, small)


def test_groupnorm_rejects_a_group_count_that_does_not_divide():
    with pytest.raises(ValueError, match="group_count=3 must be positive and divide feature_count=4"):
        layers.GroupNorm(feature_count=4, group_count=3)
