"""Pooling layers: agreement with s4tf.nn, defaults, no parameters, gradients."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import check_gradients


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pools_match_nn_and_differentiate(kind, n):
    x = s4tf.random.normal((2,) + (5,) * n + (3,), dtype=s4tf.float64, seed=n)
    layer = getattr(layers, f"{kind}Pool{n}D")(pool_size=2, strides=2, padding="same")
    fn = getattr(s4tf.nn, f"{kind.lower()}_pool{n}d")
    np.testing.assert_array_equal(layer(x).numpy(), fn(x, pool_size=2, strides=2, padding="same").numpy())
    assert layer.strides == (2,) * n and s4tf.parameter_count(layer) == 0
    check_gradients(lambda x: layer(x), x)
    pooled = getattr(layers, f"Global{kind}Pool{n}D")()
    reduce = x.max if kind == "Max" else x.mean
    np.testing.assert_allclose(pooled(x).numpy(), reduce(axis=tuple(range(1, n + 1))).numpy(), rtol=1e-12)


def test_strides_default_to_pool_size():
    pool = layers.AvgPool2D(pool_size=(2, 3))
    assert pool.strides == (2, 3) and pool.padding == "valid"
    assert pool(s4tf.ones([1, 4, 6, 1])).shape == (1, 2, 2, 1)


def test_adaptive_avg_pool2d_layer_matches_nn_on_every_backend(backend):
    x = s4tf.random.normal((2, 5, 3, 4), dtype=s4tf.float64, seed=3)
    layer = layers.AdaptiveAvgPool2D(output_size=(2, 3))
    assert layer.output_size == (2, 3) and s4tf.parameter_count(layer) == 0
    np.testing.assert_array_equal(layer(x).numpy(), s4tf.nn.adaptive_avg_pool2d(x, (2, 3)).numpy())
    check_gradients(lambda x: layer(x), x)
    with pytest.raises(ValueError, match=r"AdaptiveAvgPool2D: expected an input of shape"):
        layer(s4tf.ones([5, 3, 4]))


@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_explicit_padding_pools_store_pairs_and_match_nn(kind):
    pool = getattr(layers, f"{kind}Pool2D")(pool_size=3, strides=2, padding=[[0, 1], [1, 1]])
    assert pool.padding == ((0, 1), (1, 1))
    x = s4tf.random.normal([2, 7, 6, 3], dtype=s4tf.float64, seed=2)
    expected = getattr(s4tf.nn, f"{kind.lower()}_pool2d")(x, 3, 2, ((0, 1), (1, 1)))
    np.testing.assert_array_equal(pool(x).numpy(), expected.numpy())
    check_gradients(lambda x: pool(x), x)
    with pytest.raises(ValueError, match=f"{kind}Pool1D: padding must be"):
        getattr(layers, f"{kind}Pool1D")(pool_size=2, padding=((1, 1), (1, 1)))


def test_padding_at_call_time_overrides_the_pools_own():
    pool = layers.MaxPool2D(pool_size=3, strides=2)
    x = -s4tf.abs(s4tf.random.normal([1, 6, 6, 2], seed=3))  # a zero padding would win
    got = pool(x, padding=((1, 1), (1, 1)))
    np.testing.assert_array_equal(got.numpy(),
                                  s4tf.nn.max_pool2d(x, 3, 2, ((1, 1), (1, 1))).numpy())
    assert pool.padding == "valid" and got.shape == (1, 3, 3, 2)


# Issue 19, item 4: one padding check for layers and ops, in any case.
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kind", ["Max", "Avg"])
def test_pools_take_upper_case_padding_and_name_themselves_in_errors(kind, n):
    cls = getattr(layers, f"{kind}Pool{n}D")
    x = s4tf.random.normal((1,) + (5,) * n + (2,), dtype=s4tf.float64, seed=n)
    for upper, lower in (("SAME", "same"), ("Valid", "valid")):
        pool = cls(pool_size=2, padding=upper)
        assert pool.padding == lower
        np.testing.assert_array_equal(pool(x).numpy(), cls(pool_size=2, padding=lower)(x).numpy())
        np.testing.assert_array_equal(cls(pool_size=2)(x, padding=upper).numpy(), pool(x).numpy())
    message = rf"{kind}Pool{n}D: padding must be \"same\", \"valid\" or {n} \(before, after\) pairs .*; got 'full'"
    with pytest.raises(ValueError, match=message):
        cls(pool_size=2, padding="full")
    with pytest.raises(ValueError, match=message):
        cls(pool_size=2)(x, padding="full")
    op = f"{kind.lower()}_pool{n}d"
    with pytest.raises(ValueError, match=rf"^{op}: padding must be .*; got 'full'\. Case does not"):
        getattr(s4tf.nn, op)(x, pool_size=2, padding="full")
    np.testing.assert_array_equal(getattr(s4tf.nn, op)(x, pool_size=2, padding="SAME").numpy(),
                                  cls(pool_size=2, padding="same")(x).numpy())
