"""Convolutions: values against loop references, TF padding, derivatives, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import s4tf
from s4tf.testing import check_gradients

RNG = np.random.default_rng(0)


def _f64(*shape):
    return RNG.standard_normal(shape)


def _tf_padding(size, k, s, d, mode):
    """TensorFlow's documented padding rule, written out independently of s4tf."""
    if mode == "valid":
        return (0, 0)
    out = math.ceil(size / s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return (total // 2, total - total // 2)


def ref_conv(x, w, strides, mode, dilations, groups=1):
    """Direct loop: y[o] = sum_k xpad[o * s + k * d] @ w[k], per channel group."""
    n = x.ndim - 2
    window = w.shape[:-2]
    pads = tuple(_tf_padding(x.shape[1 + i], window[i], strides[i], dilations[i], mode)
                 for i in range(n))
    xpad = np.pad(x, ((0, 0),) + pads + ((0, 0),))
    cg, cout = w.shape[-2], w.shape[-1]
    og = cout // groups
    out = tuple((xpad.shape[1 + i] - (window[i] - 1) * dilations[i] - 1) // strides[i] + 1
                for i in range(n))
    y = np.zeros((x.shape[0],) + out + (cout,))
    for o in np.ndindex(*out):
        for k in np.ndindex(*window):
            pos = tuple(o[i] * strides[i] + k[i] * dilations[i] for i in range(n))
            patch = xpad[(slice(None),) + pos]
            for g in range(groups):
                y[(slice(None),) + o + (slice(g * og, (g + 1) * og),)] += (
                    patch[:, g * cg:(g + 1) * cg] @ w[k][:, g * og:(g + 1) * og])
    return y


def ref_conv_transpose(y, w, out_spatial, strides, mode, dilations):
    """Direct loop of the adjoint: scatter y[o] @ w[k]^T to o * s + k * d - pad_before."""
    n = y.ndim - 2
    window = w.shape[:-2]
    pads = tuple(_tf_padding(out_spatial[i], window[i], strides[i], dilations[i], mode)
                 for i in range(n))
    padded = tuple(out_spatial[i] + sum(pads[i]) for i in range(n))
    x = np.zeros((y.shape[0],) + padded + (w.shape[-2],))
    for o in np.ndindex(*y.shape[1:-1]):
        for k in np.ndindex(*window):
            pos = tuple(o[i] * strides[i] + k[i] * dilations[i] for i in range(n))
            x[(slice(None),) + pos] += y[(slice(None),) + o] @ w[k].T
    key = tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, out_spatial, strict=True))
    return x[(slice(None),) + key]


CASES_2D = [  # strides, padding, dilations, input spatial
    ((1, 1), "valid", (1, 1), (5, 6)),
    ((1, 1), "same", (1, 1), (5, 6)),
    ((2, 2), "same", (1, 1), (5, 6)),
    ((2, 3), "valid", (1, 1), (7, 8)),
    ((1, 1), "same", (2, 2), (6, 5)),
    ((2, 1), "valid", (1, 2), (7, 7)),
    ((3, 2), "same", (2, 1), (7, 6)),
]


@pytest.mark.parametrize("strides, padding, dilations, spatial", CASES_2D)
def test_conv2d_matches_loop_reference(strides, padding, dilations, spatial):
    x, w = _f64(2, *spatial, 3), _f64(3, 2, 3, 4)
    y = s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides=strides, padding=padding,
                       dilations=dilations)
    np.testing.assert_allclose(y.numpy(), ref_conv(x, w, strides, padding, dilations), atol=1e-5)


@pytest.mark.parametrize("strides, padding, dilations", [(1, "same", 1), (2, "valid", 1),
                                                         (2, "same", 2), (3, "same", 1)])
def test_conv1d_and_conv3d_match_loop_reference(strides, padding, dilations):
    x, w = _f64(2, 9, 2), _f64(3, 2, 3)
    y = s4tf.nn.conv1d(s4tf.Tensor(x), s4tf.Tensor(w), strides, padding, dilations)
    np.testing.assert_allclose(y.numpy(), ref_conv(x, w, (strides,), padding, (dilations,)),
                               atol=1e-5)
    x, w = _f64(1, 5, 6, 5, 2), _f64(2, 3, 2, 2, 3)
    n3 = (strides,) * 3, (dilations,) * 3
    y = s4tf.nn.conv3d(s4tf.Tensor(x), s4tf.Tensor(w), strides, padding, dilations)
    np.testing.assert_allclose(y.numpy(), ref_conv(x, w, n3[0], padding, n3[1]), atol=1e-5)


def test_same_padding_puts_the_odd_element_after():
    # Width 4, window 2, stride 1: one padding element, after (TF), so the last
    # output sees x[3] and the zero; with it before, the first would see 0 and x[0].
    x = s4tf.Tensor([[[1.0], [2.0], [3.0], [4.0]]])
    w = s4tf.Tensor([[[1.0]], [[10.0]]])
    assert s4tf.nn.conv1d(x, w, padding="same").numpy().ravel().tolist() == [21, 32, 43, 4]


def test_same_padding_agrees_with_jax_on_tf_semantics():
    lax = pytest.importorskip("jax.lax")
    x, w = _f64(2, 7, 6, 3), _f64(3, 4, 3, 5)
    for strides in ((1, 1), (2, 2), (3, 2)):
        want = lax.conv_general_dilated(x, w, strides, "SAME", rhs_dilation=(1, 2),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
        got = s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides, "same", (1, 2))
        np.testing.assert_allclose(got.numpy(), np.asarray(want), atol=1e-5)


def test_depthwise_conv2d_matches_loop_reference_in_tf_channel_order():
    x, w = _f64(2, 6, 5, 3), _f64(3, 2, 3, 2)
    y = s4tf.nn.depthwise_conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides=2, padding="same")
    assert y.shape == (2, 3, 3, 6)
    want = np.zeros(y.shape)
    for c in range(3):
        for m in range(2):
            want[..., c * 2 + m] = ref_conv(x[..., c:c + 1], w[:, :, c:c + 1, m:m + 1], (2, 2),
                                            "same", (1, 1))[..., 0]
    np.testing.assert_allclose(y.numpy(), want, atol=1e-5)


@pytest.mark.parametrize("strides, padding, dilations, spatial", CASES_2D)
def test_conv2d_transpose_matches_loop_adjoint(strides, padding, dilations, spatial):
    y_spatial = tuple(
        (math.ceil(n / s) if padding == "same" else (n - (3 - 1) * d - 1) // s + 1)
        if i == 0 else
        (math.ceil(n / s) if padding == "same" else (n - (2 - 1) * d - 1) // s + 1)
        for i, (n, s, d) in enumerate(zip(spatial, strides, dilations, strict=True)))
    y, w = _f64(2, *y_spatial, 4), _f64(3, 2, 3, 4)
    got = s4tf.nn.conv2d_transpose(s4tf.Tensor(y), s4tf.Tensor(w), output_shape=spatial,
                                   strides=strides, padding=padding, dilations=dilations)
    want = ref_conv_transpose(y, w, spatial, strides, padding, dilations)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    # And it is the adjoint of conv2d: <conv_t(y), x> == <y, conv(x)>.
    x = _f64(2, *spatial, 3)
    forward = ref_conv(x, w, strides, padding, dilations)
    np.testing.assert_allclose(np.sum(got.numpy() * x), np.sum(y * forward), rtol=1e-10)


def test_transposed_output_shape_inference_follows_keras():
    x = s4tf.ones([1, 4, 5, 3])
    assert s4tf.nn.conv2d_transpose(x, s4tf.ones([3, 3, 2, 3]), strides=2, padding="same").shape \
        == (1, 8, 10, 2)
    assert s4tf.nn.conv2d_transpose(x, s4tf.ones([3, 3, 2, 3]), strides=2).shape == (1, 9, 11, 2)
    assert s4tf.nn.conv2d_transpose(x, s4tf.ones([1, 1, 2, 3]), strides=3).shape == (1, 12, 15, 2)
    assert s4tf.nn.conv1d_transpose(s4tf.ones([2, 4, 3]), s4tf.ones([3, 2, 3])).shape == (2, 6, 2)
    assert s4tf.nn.conv3d_transpose(s4tf.ones([1, 2, 2, 2, 3]), s4tf.ones([2, 2, 2, 5, 3]),
                                    strides=2, output_shape=(1, 4, 4, 4, 5)).shape \
        == (1, 4, 4, 4, 5)


def _t(*shape):
    return s4tf.Tensor(_f64(*shape), dtype=s4tf.float64)


@pytest.mark.parametrize("strides, padding, dilations", [((1, 1), "valid", (1, 1)),
                                                         ((2, 2), "same", (1, 1)),
                                                         ((1, 2), "same", (2, 1))])
def test_conv2d_gradients_first_and_second_order(strides, padding, dilations):
    def f(x, w):
        return s4tf.nn.conv2d(x, w, strides, padding, dilations)

    check_gradients(f, _t(1, 5, 4, 2), _t(2, 3, 2, 2), order=2)


def test_conv1d_conv3d_depthwise_gradients():
    check_gradients(lambda x, w: s4tf.nn.conv1d(x, w, 2, "same"), _t(2, 5, 2), _t(3, 2, 3),
                    order=2)
    check_gradients(lambda x, w: s4tf.nn.conv3d(x, w, 1, "same"), _t(1, 3, 3, 2, 2),
                    _t(2, 2, 1, 2, 2))
    check_gradients(lambda x, w: s4tf.nn.depthwise_conv2d(x, w, 2, "same"), _t(1, 4, 4, 2),
                    _t(2, 2, 2, 2), order=2)


def test_transposed_conv_gradients():
    def f(y, w):
        return s4tf.nn.conv2d_transpose(y, w, output_shape=(5, 4), strides=2, padding="same")

    check_gradients(f, _t(1, 3, 2, 2), _t(3, 2, 2, 2), order=2)
    check_gradients(lambda y, w: s4tf.nn.conv1d_transpose(y, w, strides=2), _t(1, 3, 2),
                    _t(2, 2, 2))


@pytest.mark.parametrize("strides, padding", [(1, "same"), (2, "valid")])
def test_the_backprop_ops_differentiate_in_every_argument(strides, padding):
    # Each transpose primitive as a function of (data, cotangent): both of its
    # rules are exercised, including the ones second-order conv checks never reach.
    out = (5, 5) if padding == "same" else (2, 2)
    x, w, u = _t(1, 5, 5, 2), _t(2, 3, 2, 3), _t(1, *out, 3)

    def filter_grad(x, u):
        return s4tf.pullback(w, of=lambda w: s4tf.nn.conv2d(x, w, strides, padding))(u)

    def input_grad(w, u):
        return s4tf.pullback(x, of=lambda x: s4tf.nn.conv2d(x, w, strides, padding))(u)

    check_gradients(filter_grad, x, u, order=2)
    check_gradients(input_grad, w, u, order=2)


def test_grad_of_conv_is_the_transposed_conv():
    x, w, g = _t(2, 6, 6, 3), _t(3, 3, 3, 4), _t(2, 3, 3, 4)
    _, pb = s4tf.value_with_pullback(x, of=lambda x: s4tf.nn.conv2d(x, w, 2, "same"))
    want = s4tf.nn.conv2d_transpose(g, w, output_shape=(2, 6, 6, 3), strides=2, padding="same")
    np.testing.assert_allclose(pb(g).numpy(), want.numpy(), atol=1e-12)


def test_float32_forward_is_float32_and_accurate():
    x, w = _f64(4, 9, 9, 5), _f64(3, 3, 5, 7)
    y = s4tf.nn.conv2d(s4tf.Tensor(x, dtype=s4tf.float32), s4tf.Tensor(w, dtype=s4tf.float32),
                       padding="same")
    assert y.dtype == s4tf.float32
    np.testing.assert_allclose(y.numpy(), ref_conv(x, w, (1, 1), "same", (1, 1)), atol=1e-4)


@pytest.mark.parametrize("call, words", [
    (lambda: s4tf.nn.conv2d(s4tf.ones([4, 4, 3]), s4tf.ones([3, 3, 3, 2])),
     ["conv2d", "rank 4", "(4, 4, 3)"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([3, 3, 2, 2])),
     ["conv2d", "3 channels", "(1, 4, 4, 3)", "(3, 3, 2, 2)"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([3, 3, 3])),
     ["conv2d", "filter", "rank 4", "(3, 3, 3)"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([5, 5, 3, 1])),
     ["conv2d", "valid", "does not fit"]),
    (lambda: s4tf.nn.conv1d(s4tf.ones([1, 4, 3]), s4tf.ones([2, 3, 1]), padding="full"),
     ["conv1d", "padding", "'full'"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 3, 1]), strides=(1, 0)),
     ["conv2d", "strides", "(1, 0)"]),
    (lambda: s4tf.nn.depthwise_conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 4, 1])),
     ["depthwise_conv2d", "(1, 4, 4, 3)", "(2, 2, 4, 1)"]),
    (lambda: s4tf.nn.conv2d_transpose(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 3, 2])),
     ["conv2d_transpose", "(1, 4, 4, 3)", "(2, 2, 3, 2)"]),
    (lambda: s4tf.nn.conv2d_transpose(s4tf.ones([1, 4, 4, 3]), s4tf.ones([3, 3, 2, 3]),
                                      output_shape=(20, 20), strides=2),
     ["conv2d_transpose", "(20, 20)", "(4, 4)"]),
])
def test_shape_errors_name_the_op_and_shapes(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for word in words:
        assert word in str(info.value)


def test_batch_chunking_of_the_kernels_gives_the_same_values(monkeypatch):
    # Tiny chunks (one image each) exercise the chunk loops that big batches take.
    from s4tf.backends import im2col

    x, w, g = _t(3, 6, 5, 2), _t(3, 2, 2, 4), _t(3, 3, 3, 4)

    def all_three():
        y, pb = s4tf.value_with_pullback(x, w, of=lambda x, w: s4tf.nn.conv2d(x, w, 2, "same"))
        return [y.numpy(), *(t.numpy() for t in pb(g))]

    whole = all_three()
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 1)
    for got, want in zip(all_three(), whole, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(whole[0], ref_conv(x.numpy(), w.numpy(), (2, 2), "same", (1, 1)),
                               atol=1e-12)


BACKEND_CASES = {
    "conv1d_dilated": (lambda x, w: s4tf.nn.conv1d(x, w, 1, "same", 2), ((2, 7, 3), (3, 3, 2))),
    "conv2d_strided": (lambda x, w: s4tf.nn.conv2d(x, w, 2, "same"), ((2, 6, 5, 3), (3, 3, 3, 4))),
    "conv3d": (lambda x, w: s4tf.nn.conv3d(x, w, 1, "valid"), ((1, 4, 3, 4, 2), (2, 2, 2, 2, 3))),
    "transpose": (lambda y, w: s4tf.nn.conv2d_transpose(y, w, None, 2, "valid"),
                  ((2, 3, 3, 4), (3, 3, 2, 4))),
    "depthwise": (lambda x, w: s4tf.nn.depthwise_conv2d(x, w, 1, "same"),
                  ((2, 5, 5, 3), (3, 3, 3, 2))),
    "conv2d_explicit": (lambda x, w: s4tf.nn.conv2d(x, w, 2, ((1, 2), (0, 1))),
                        ((2, 6, 5, 3), (3, 3, 3, 4))),
    "transpose_explicit": (lambda y, w: s4tf.nn.conv2d_transpose(y, w, None, 2, ((1, 1), (0, 2))),
                           ((2, 3, 3, 4), (3, 3, 2, 4))),
}


@pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")
@pytest.mark.parametrize("case", sorted(BACKEND_CASES))
def test_every_backend_matches_naive_values_and_gradients(backend, case):
    fn, shapes = BACKEND_CASES[case]
    arrays = [_f64(*shape) for shape in shapes]

    def loss(*xs):
        y = fn(*xs)
        return (y * y).sum()

    with s4tf.backend("naive"):
        naive = [s4tf.Tensor(a) for a in arrays]
        want_value, want_grads = fn(*naive).numpy(), s4tf.gradient(*naive, of=loss)
    tensors = [s4tf.Tensor(a) for a in arrays]
    got = fn(*tensors)
    assert got.backend == backend
    np.testing.assert_allclose(got.numpy(), want_value, rtol=1e-9, atol=1e-9)
    for g, w in zip(s4tf.gradient(*tensors, of=loss), want_grads, strict=True):
        assert g.backend == backend
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-9)


# Explicit padding: (before, after) pairs per spatial axis, as jax.lax.conv_general_dilated.
EXPLICIT_2D = [  # strides, padding, dilations, input spatial
    ((1, 1), ((1, 1), (1, 1)), (1, 1), (5, 6)),
    ((2, 2), ((1, 1), (1, 1)), (1, 1), (6, 7)),   # PyTorch's padding=1, stride 2
    ((2, 1), ((0, 2), (3, 0)), (1, 2), (5, 4)),   # asymmetric, more than the window half
    ((1, 3), ((2, 0), (0, 1)), (2, 1), (4, 7)),
]


def _explicit_reference(x, w, strides, padding, dilations):
    """The "valid" loop reference over an input zero-padded by hand."""
    return ref_conv(np.pad(x, ((0, 0),) + padding + ((0, 0),)), w, strides, "valid", dilations)


@pytest.mark.parametrize("strides, padding, dilations, spatial", EXPLICIT_2D)
def test_explicit_padding_is_valid_convolution_of_the_padded_input(backend, strides, padding,
                                                                   dilations, spatial):
    x, w = _f64(2, *spatial, 3), _f64(3, 2, 3, 4)
    got = s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides, padding, dilations)
    np.testing.assert_allclose(got.numpy(), _explicit_reference(x, w, strides, padding, dilations),
                               atol=1e-10)
    # Lists work as well as tuples, and "same" is its own pairs.
    same = s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides, "same", dilations)
    pairs = [[lo, hi] for lo, hi in s4tf.ops.window_geometry.explicit_padding(
        spatial, (3, 2), strides, dilations, "same", "test")]
    np.testing.assert_array_equal(
        s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), strides, pairs, dilations).numpy(),
        same.numpy())


@pytest.mark.parametrize("strides, padding, dilations, spatial", EXPLICIT_2D)
def test_explicit_padding_derivatives_first_and_second_order(strides, padding, dilations, spatial):
    check_gradients(lambda x, w: s4tf.nn.conv2d(x, w, strides, padding, dilations),
                    _t(1, *spatial, 2), _t(3, 2, 2, 2), order=2)


def test_explicit_padding_of_the_other_convolutions():
    check_gradients(lambda x, w: s4tf.nn.conv1d(x, w, 2, ((2, 1),)), _t(2, 5, 2), _t(3, 2, 3),
                    order=2)
    check_gradients(lambda x, w: s4tf.nn.conv3d(x, w, 1, ((1, 0), (0, 1), (1, 1))),
                    _t(1, 3, 3, 2, 2), _t(2, 2, 2, 2, 2))
    check_gradients(lambda x, w: s4tf.nn.depthwise_conv2d(x, w, 2, ((1, 1), (0, 2))),
                    _t(1, 4, 5, 2), _t(3, 3, 2, 2), order=2)
    x, d, p = _f64(1, 5, 5, 2), _f64(3, 3, 2, 2), _f64(1, 1, 4, 3)
    got = s4tf.nn.separable_conv2d(s4tf.Tensor(x), s4tf.Tensor(d), s4tf.Tensor(p),
                                   padding=((1, 1), (1, 1)))
    padded = s4tf.nn.zero_padding2d(s4tf.Tensor(x), 1)
    want = s4tf.nn.separable_conv2d(padded, s4tf.Tensor(d), s4tf.Tensor(p))
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


@pytest.mark.parametrize("strides, padding", [((2, 2), ((1, 1), (1, 1))), ((1, 2), ((0, 2), (1, 0)))])
def test_explicit_padding_of_transposed_convolutions(strides, padding):
    # The adjoint of the forward convolution with the same padding; without an
    # output_shape the smallest output that convolves back to the input's size
    # (jax.lax.conv_transpose's and PyTorch's ConvTranspose2d's rule).
    y, w = _f64(2, 3, 4, 4), _f64(3, 3, 2, 4)
    got = s4tf.nn.conv2d_transpose(s4tf.Tensor(y), s4tf.Tensor(w), strides=strides, padding=padding)
    spatial = tuple((n - 1) * s + 3 - lo - hi
                    for n, s, (lo, hi) in zip((3, 4), strides, padding, strict=True))
    assert got.shape == (2, *spatial, 2)
    x = _f64(2, *spatial, 2)
    forward = _explicit_reference(x, w, strides, padding, (1, 1))
    np.testing.assert_allclose(np.sum(got.numpy() * x), np.sum(y * forward), rtol=1e-10)
    check_gradients(lambda y, w: s4tf.nn.conv2d_transpose(y, w, strides=strides, padding=padding),
                    _t(1, 3, 4, 4), _t(3, 3, 2, 4), order=2)


def test_explicit_padding_matches_jax(backend):
    jax = pytest.importorskip("jax")
    x, w = _f64(2, 7, 6, 3), _f64(3, 3, 3, 4)
    want = jax.lax.conv_general_dilated(x, w, (2, 2), ((1, 2), (0, 1)),
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    got = s4tf.nn.conv2d(s4tf.Tensor(x), s4tf.Tensor(w), 2, ((1, 2), (0, 1)))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), atol=1e-10)


@pytest.mark.parametrize("call, words", [
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 3, 1]), padding=((1, 1),)),
     ["conv2d", "2 (before, after) pairs", "((1, 1),)"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 3, 1]),
                            padding=((1, -1), (0, 0))),
     ["conv2d", "non-negative", "((1, -1), (0, 0))"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 4, 4, 3]), s4tf.ones([2, 2, 3, 1]), padding=1),
     ["conv2d", '"same", "valid" or 2 (before, after) pairs', "got 1"]),
    (lambda: s4tf.nn.conv2d(s4tf.ones([1, 2, 4, 3]), s4tf.ones([5, 2, 3, 1]),
                            padding=((1, 1), (0, 0))),
     ["conv2d", "window 5", "spatial size 2", "padded by (1, 1)"]),
    (lambda: s4tf.nn.conv2d_transpose(s4tf.ones([1, 2, 2, 3]), s4tf.ones([3, 3, 2, 3]),
                                      padding=((3, 3), (0, 0))),
     ["conv2d_transpose", "((3, 3), (0, 0))", "(-2, 4)"]),
])
def test_explicit_padding_errors_name_the_op_and_the_fix(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
