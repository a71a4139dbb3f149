"""Pools, upsampling and zero padding: loop references, TF semantics, derivatives."""

from __future__ import annotations

import math

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

RNG = np.random.default_rng(1)


def _f64(*shape):
    return RNG.standard_normal(shape)


def _t(*shape):
    return s4tf.Tensor(_f64(*shape), dtype=s4tf.float64)


def ref_pool(x, window, strides, mode, kind):
    """Direct loop with TF semantics: max ignores padding (-inf), avg counts real elements."""
    n = x.ndim - 2
    pads, out = [], []
    for i in range(n):
        size, k, s = x.shape[1 + i], window[i], strides[i]
        if mode == "same":
            o = math.ceil(size / s)
            total = max((o - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            o = (size - k) // s + 1
            pads.append((0, 0))
        out.append(o)
    y = np.zeros((x.shape[0],) + tuple(out) + (x.shape[-1],))
    for o in np.ndindex(*out):
        ranges = []
        for i in range(n):
            start = o[i] * strides[i] - pads[i][0]
            ranges.append(slice(max(start, 0), min(start + window[i], x.shape[1 + i])))
        patch = x[(slice(None),) + tuple(ranges)].reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None),) + o] = patch.max(axis=1) if kind == "max" else patch.mean(axis=1)
    return y


POOL_CASES = [  # pool size, strides, padding, spatial
    ((2, 2), (2, 2), "valid", (6, 5)),
    ((2, 2), (2, 2), "same", (5, 5)),
    ((3, 3), (1, 1), "same", (5, 4)),
    ((3, 2), (2, 1), "valid", (7, 5)),
    ((3, 3), (2, 2), "same", (6, 7)),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("pool, strides, padding, spatial", POOL_CASES)
def test_pool2d_matches_loop_reference(kind, pool, strides, padding, spatial):
    x = _f64(2, *spatial, 3)
    fn = getattr(s4tf.nn, f"{kind}_pool2d")
    y = fn(s4tf.Tensor(x), pool, strides, padding)
    np.testing.assert_allclose(y.numpy(), ref_pool(x, pool, strides, padding, kind), atol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("padding", ["valid", "same"])
def test_pool1d_and_pool3d_match_loop_reference(kind, padding):
    x = _f64(2, 7, 2)
    y = getattr(s4tf.nn, f"{kind}_pool1d")(s4tf.Tensor(x), 3, 2, padding)
    np.testing.assert_allclose(y.numpy(), ref_pool(x, (3,), (2,), padding, kind), atol=1e-12)
    x = _f64(1, 5, 4, 3, 2)
    y = getattr(s4tf.nn, f"{kind}_pool3d")(s4tf.Tensor(x), 2, 2, padding)
    np.testing.assert_allclose(y.numpy(), ref_pool(x, (2,) * 3, (2,) * 3, padding, kind),
                               atol=1e-12)


def test_same_avg_pool_excludes_padding_and_max_pool_ignores_it():
    # All-negative input: a zero-padded max would return 0 at the edges.
    x = -s4tf.ones([1, 3, 3, 1]) - s4tf.reshape(s4tf.arange(9.0), (1, 3, 3, 1))
    assert s4tf.nn.max_pool2d(x, 2, 2, "same").numpy().ravel().tolist() == [-1, -3, -7, -9]
    ones = s4tf.ones([1, 3, 3, 1])
    assert s4tf.nn.avg_pool2d(ones, 2, 2, "same").numpy().ravel().tolist() == [1.0] * 4


def test_strides_default_to_pool_size():
    assert s4tf.nn.max_pool2d(s4tf.ones([1, 6, 6, 2]), (2, 3)).shape == (1, 3, 2, 2)


def test_max_pool_gradient_goes_to_the_first_maximum_of_each_window():
    x = s4tf.Tensor([[[[1.0], [3.0], [3.0], [0.0]]]], dtype=s4tf.float64)  # (1, 1, 4, 1)
    g = s4tf.gradient(x, of=lambda x: s4tf.nn.max_pool2d(x, (1, 2), (1, 1)).sum())
    # Windows [1,3], [3,3], [3,0]: the tie in the middle window goes to its first 3.
    assert g.numpy().ravel().tolist() == [0.0, 2.0, 1.0, 0.0]


@pytest.mark.parametrize("pool, strides, padding", [((2, 2), (2, 2), "valid"),
                                                    ((3, 3), (2, 2), "same"),
                                                    ((2, 3), (1, 2), "same")])
def test_pool2d_gradients_first_and_second_order(pool, strides, padding):
    x = _t(1, 5, 5, 2)  # continuous random values: no ties, max pool is smooth here
    check_gradients(lambda x: s4tf.nn.max_pool2d(x, pool, strides, padding), x, order=2)
    check_gradients(lambda x: s4tf.nn.avg_pool2d(x, pool, strides, padding), x, order=2)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool1d_pool3d_gradients(kind):
    pool1d, pool3d = getattr(s4tf.nn, f"{kind}_pool1d"), getattr(s4tf.nn, f"{kind}_pool3d")
    check_gradients(lambda x: pool1d(x, 3, 2, "same"), _t(2, 6, 2))
    check_gradients(lambda x: pool3d(x, 2, 2, "same"), _t(1, 3, 3, 3, 1))


def test_pool_transposes_differentiate_in_every_argument():
    # The pullbacks as functions of the cotangent exercise scatter's and
    # window_sum_transpose's own rules (reached only when differentiating a VJP).
    x = _t(1, 5, 5, 2)

    def max_vjp(u):
        return s4tf.pullback(x, of=lambda x: s4tf.nn.max_pool2d(x, 3, 2, "same"))(u)

    def avg_vjp(u):
        return s4tf.pullback(x, of=lambda x: s4tf.nn.avg_pool2d(x, 3, 2, "same"))(u)

    check_gradients(max_vjp, _t(1, 3, 3, 2), order=2)
    check_gradients(avg_vjp, _t(1, 3, 3, 2), order=2)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_global_pools_reduce_every_spatial_axis(n):
    x = _f64(2, *(3,) * n, 4)
    axes = tuple(range(1, n + 1))
    got_avg = getattr(s4tf.nn, f"global_avg_pool{n}d")(s4tf.Tensor(x))
    got_max = getattr(s4tf.nn, f"global_max_pool{n}d")(s4tf.Tensor(x))
    np.testing.assert_allclose(got_avg.numpy(), x.mean(axis=axes), atol=1e-12)
    np.testing.assert_allclose(got_max.numpy(), x.max(axis=axes), atol=1e-12)
    check_gradients(getattr(s4tf.nn, f"global_avg_pool{n}d"), _t(1, *(2,) * n, 2))
    check_gradients(getattr(s4tf.nn, f"global_max_pool{n}d"), _t(1, *(2,) * n, 2))


def test_upsampling_repeats_nearest_neighbours():
    x = _f64(2, 3, 2, 4)
    got = s4tf.nn.upsampling2d(s4tf.Tensor(x), size=(2, 3))
    np.testing.assert_array_equal(got.numpy(), x.repeat(2, axis=1).repeat(3, axis=2))
    x1, x3 = _f64(1, 3, 2), _f64(1, 2, 2, 2, 1)
    np.testing.assert_array_equal(s4tf.nn.upsampling1d(s4tf.Tensor(x1), 3).numpy(),
                                  x1.repeat(3, axis=1))
    np.testing.assert_array_equal(s4tf.nn.upsampling3d(s4tf.Tensor(x3), 2).numpy(),
                                  x3.repeat(2, axis=1).repeat(2, axis=2).repeat(2, axis=3))
    check_gradients(lambda x: s4tf.nn.upsampling2d(x, 2), _t(1, 2, 2, 2), order=2)


def test_zero_padding_forms():
    x = _f64(1, 2, 3, 2)
    got = s4tf.nn.zero_padding2d(s4tf.Tensor(x), ((1, 0), (2, 3)))
    np.testing.assert_array_equal(got.numpy(), np.pad(x, ((0, 0), (1, 0), (2, 3), (0, 0))))
    assert s4tf.nn.zero_padding2d(s4tf.Tensor(x), 1).shape == (1, 4, 5, 2)
    assert s4tf.nn.zero_padding2d(s4tf.Tensor(x), (1, 2)).shape == (1, 4, 7, 2)
    assert s4tf.nn.zero_padding1d(s4tf.ones([1, 3, 2]), (1, 2)).shape == (1, 6, 2)
    assert s4tf.nn.zero_padding3d(s4tf.ones([1, 1, 1, 1, 2]), 1).shape == (1, 3, 3, 3, 2)
    check_gradients(lambda x: s4tf.nn.zero_padding1d(x, (2, 1)), _t(1, 3, 2))


@pytest.mark.parametrize("call, words", [
    (lambda: s4tf.nn.max_pool2d(s4tf.ones([4, 4, 3]), 2, 2), ["max_pool2d", "rank 4", "(4, 4, 3)"]),
    (lambda: s4tf.nn.avg_pool1d(s4tf.ones([1, 4, 3]), 5, 1), ["avg_pool1d", "valid", "5"]),
    (lambda: s4tf.nn.avg_pool2d(s4tf.ones([1, 4, 4, 3]), (2, 2, 2), 2),
     ["avg_pool2d", "pool_size", "(2, 2, 2)"]),
    (lambda: s4tf.nn.max_pool2d(s4tf.ones([1, 4, 4, 3]), 2, 2, "SAME!"), ["max_pool2d", "SAME!"]),
    (lambda: s4tf.nn.global_avg_pool2d(s4tf.ones([2, 3])), ["global_avg_pool2d", "(2, 3)"]),
    (lambda: s4tf.nn.upsampling2d(s4tf.ones([1, 2, 2, 1]), 0), ["upsampling2d", "size"]),
    (lambda: s4tf.nn.zero_padding2d(s4tf.ones([1, 2, 2, 1]), ((1, 2, 3),)),
     ["zero_padding2d", "padding"]),
])
def test_errors_name_the_op_and_what_was_wrong(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for word in words:
        assert word in str(info.value)


BACKEND_CASES = {
    "max_same": lambda x: s4tf.nn.max_pool2d(x, 3, 2, "same"),
    "avg_same": lambda x: s4tf.nn.avg_pool2d(x, 3, 2, "same"),
    "max_explicit": lambda x: s4tf.nn.max_pool2d(x, 3, 2, ((1, 1), (0, 2))),
    "avg_explicit": lambda x: s4tf.nn.avg_pool2d(x, 3, 2, ((1, 1), (0, 2))),
    "max1d_valid": lambda x: s4tf.nn.max_pool1d(s4tf.reshape(x, (2, 25, 3)), 4, 3),
    "avg3d": lambda x: s4tf.nn.avg_pool3d(s4tf.reshape(x, (2, 5, 5, 1, 3)), (2, 2, 1), 1, "same"),
    "global_and_resampling": lambda x: s4tf.nn.zero_padding2d(
        s4tf.nn.upsampling2d(x, 2), ((1, 0), (0, 2))).sum(axis=(1, 2))
        + s4tf.nn.global_max_pool2d(x),
}


@pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")
@pytest.mark.parametrize("case", sorted(BACKEND_CASES))
def test_every_backend_matches_naive_values_and_gradients(backend, case):
    fn = BACKEND_CASES[case]
    array = _f64(2, 5, 5, 3)

    def loss(x):
        y = fn(x)
        return (y * y).sum()

    with s4tf.backend("naive"):
        naive = s4tf.Tensor(array)
        want_value, want_grad = fn(naive).numpy(), s4tf.gradient(naive, of=loss)
    x = s4tf.Tensor(array)
    got = fn(x)
    assert got.backend == backend
    np.testing.assert_allclose(got.numpy(), want_value, rtol=1e-9, atol=1e-9)
    grad = s4tf.gradient(x, of=loss)
    assert grad.backend == backend
    np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-9, atol=1e-9)


def ref_adaptive_avg_pool2d(x, out_h, out_w):
    """PyTorch's bins, by loops: start = floor(i * H / out), end = ceil((i + 1) * H / out)."""
    n, height, width, c = x.shape
    y = np.zeros((n, out_h, out_w, c))
    for i in range(out_h):
        h0, h1 = math.floor(i * height / out_h), math.ceil((i + 1) * height / out_h)
        for j in range(out_w):
            w0, w1 = math.floor(j * width / out_w), math.ceil((j + 1) * width / out_w)
            y[:, i, j] = x[:, h0:h1, w0:w1].mean(axis=(1, 2))
    return y


@pytest.mark.parametrize("spatial, out", [((6, 4), (3, 2)), ((5, 7), (3, 2)), ((1, 1), (7, 7)),
                                          ((3, 5), (7, 4)), ((4, 4), (4, 4)), ((5, 3), (1, 1))])
def test_adaptive_avg_pool2d_matches_pytorch_bins(backend, spatial, out):
    array = _f64(2, *spatial, 3)
    x = s4tf.Tensor(array, dtype=s4tf.float64)
    got = s4tf.nn.adaptive_avg_pool2d(x, out)
    assert got.backend == backend and got.shape == (2, *out, 3)
    np.testing.assert_allclose(got.numpy(), ref_adaptive_avg_pool2d(array, *out), rtol=1e-12)
    check_gradients(lambda x: s4tf.nn.adaptive_avg_pool2d(x, out), x)


def test_adaptive_avg_pool2d_overlapping_bins_by_hand():
    # 5 rows into 3 bins: rows 0-1, 1-3 (1, 2), 3-4; 1 column stays.
    x = s4tf.reshape(s4tf.Tensor([0.0, 1.0, 2.0, 3.0, 4.0]), (1, 5, 1, 1))
    assert s4tf.nn.adaptive_avg_pool2d(x, (3, 1)).reshape(-1).tolist() == [0.5, 2.0, 3.5]


@pytest.mark.parametrize("call, words", [
    (lambda: s4tf.nn.adaptive_avg_pool2d(s4tf.ones([4, 4, 3]), 2), ["rank 4", "(4, 4, 3)"]),
    (lambda: s4tf.nn.adaptive_avg_pool2d(s4tf.ones([1, 4, 4, 3]), (2, 0)), ["output_size", "(2, 0)"]),
])
def test_adaptive_avg_pool2d_errors(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert all(word in str(info.value) for word in words), str(info.value)


def ref_pool_explicit(x, window, strides, padding, kind):
    """Direct loop over an input padded by ``padding``: max ignores it, avg counts real elements."""
    out = [(n + lo + hi - k) // s + 1
           for n, k, s, (lo, hi) in zip(x.shape[1:-1], window, strides, padding, strict=True)]
    y = np.zeros((x.shape[0], *out, x.shape[-1]))
    for o in np.ndindex(*out):
        ranges = []
        for i, (lo, _) in enumerate(padding):
            start = o[i] * strides[i] - lo
            ranges.append(slice(max(start, 0), min(start + window[i], x.shape[1 + i])))
        patch = x[(slice(None), *ranges)].reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None), *o)] = patch.max(axis=1) if kind == "max" else patch.mean(axis=1)
    return y


EXPLICIT_POOLS = [  # pool size, strides, padding, spatial
    ((3, 3), (2, 2), ((1, 1), (1, 1)), (6, 7)),    # PyTorch's ResNet stem pool
    ((3, 3), (2, 2), ((0, 1), (0, 1)), (7, 7)),    # ceil mode, as SqueezeNet's
    ((2, 3), (1, 2), ((1, 0), (2, 1)), (4, 5)),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("pool, strides, padding, spatial", EXPLICIT_POOLS)
def test_explicit_padding_pools(backend, kind, pool, strides, padding, spatial):
    x = -np.abs(_f64(2, *spatial, 3))  # all negative: a zero padding would win every maximum
    fn = getattr(s4tf.nn, f"{kind}_pool2d")
    got = fn(s4tf.Tensor(x), pool, strides, padding)
    np.testing.assert_allclose(got.numpy(), ref_pool_explicit(x, pool, strides, padding, kind),
                               atol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_explicit_padding_pool_gradients(kind):
    fn = getattr(s4tf.nn, f"{kind}_pool2d")
    check_gradients(lambda x: fn(x, (3, 2), (2, 1), ((1, 2), (1, 0))), _t(2, 5, 4, 2), order=2)
    fn1d = getattr(s4tf.nn, f"{kind}_pool1d")
    check_gradients(lambda x: fn1d(x, 3, 2, ((2, 1),)), _t(2, 6, 2), order=2)


def test_explicit_pool_padding_must_leave_every_window_an_element():
    with pytest.raises(ValueError, match=r"max_pool2d: padding \(\(2, 2\), \(0, 0\)\) puts a whole "
                                         r"window of pool_size \(2, 2\) in the padding"):
        s4tf.nn.max_pool2d(s4tf.ones([1, 4, 4, 1]), 2, 1, ((2, 2), (0, 0)))
