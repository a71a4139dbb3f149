"""The eager convolution and pooling kernels against direct loops, on every code path.

The kernels pick a layout by shape (pixel-major or offset-major im2col, the
row layout of 2-D convolutions, the copy-free 1x1 case, col2im or the
flipped forward for the input gradient; pools that tile, overlap or skip)
and work in batch chunks that reuse one buffer. Each case below is chosen to
take one of those paths, and every result is compared, in float64, with a
loop written from the definition: the forward sum, its two adjoints, and the
window maximum with TF's first-maximum ties. They run on the naive kernels
and on the CuPy stand-in (whose host boundary catches a stray ``np`` call).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from s4tf.backends import im2col
from s4tf.backends.base import get_backend_object

RNG = np.random.default_rng(7)


@pytest.fixture(params=["naive", "cupy"])
def kernels(request):
    return get_backend_object(request.param).kernels


def _call(kernels, name, *arrays, **params):
    """Run kernel ``name`` on ``kernels``' own arrays; the result back on the host."""
    xp = kernels.xp
    out = getattr(kernels, name)(*(xp.asarray(a) for a in arrays), **params)
    return out.get() if hasattr(out, "get") else np.asarray(out)


# --- references, written from the definitions -------------------------------------------

def _geometry(spatial, window, strides, padding, dilations):
    padded = [n + lo + hi for n, (lo, hi) in zip(spatial, padding, strict=True)]
    return tuple((p - (k - 1) * d - 1) // s + 1
                 for p, k, s, d in zip(padded, window, strides, dilations, strict=True))


def _reads(o, k, strides, padding, dilations):
    """The input position output ``o`` reads at window offset ``k`` (may be in the padding)."""
    return tuple(oi * s + ki * d - lo
                 for oi, ki, s, d, (lo, _) in zip(o, k, strides, dilations, padding, strict=True))


def _inside(pos, spatial):
    return all(0 <= p < n for p, n in zip(pos, spatial, strict=True))


def _pairs(out, window, spatial, strides, padding, dilations, channels_in, channels_out, groups):
    """Every (output index, input index, filter index) the convolution multiplies, per group.

    Indices are tuples for the whole array, channel slices included: the
    output's ``(all, *o, group's outputs)``, the input's ``(all, *pos,
    group's inputs)``, the filter's ``(*k, all, group's outputs)``.
    """
    cg, og = channels_in // groups, channels_out // groups
    everything = slice(None)
    for o in np.ndindex(*out):
        for k in np.ndindex(*window):
            pos = _reads(o, k, strides, padding, dilations)
            if _inside(pos, spatial):
                for j in range(groups):
                    ins, outs = slice(j * cg, (j + 1) * cg), slice(j * og, (j + 1) * og)
                    yield (everything,) + o + (outs,), (everything,) + pos + (ins,), k + (everything, outs)


def ref_conv(x, w, strides, padding, dilations, groups):
    out = _geometry(x.shape[1:-1], w.shape[:-2], strides, padding, dilations)
    y = np.zeros((x.shape[0],) + out + (w.shape[-1],))
    for at_y, at_x, at_w in _pairs(out, w.shape[:-2], x.shape[1:-1], strides, padding, dilations,
                                   x.shape[-1], w.shape[-1], groups):
        y[at_y] += x[at_x] @ w[at_w]
    return y


def ref_backprop_input(g, w, input_shape, strides, padding, dilations, groups):
    dx = np.zeros(input_shape)
    for at_g, at_x, at_w in _pairs(g.shape[1:-1], w.shape[:-2], input_shape[1:-1], strides,
                                   padding, dilations, input_shape[-1], w.shape[-1], groups):
        dx[at_x] += g[at_g] @ w[at_w].T
    return dx


def ref_backprop_filter(x, g, filter_shape, strides, padding, dilations, groups):
    dw = np.zeros(filter_shape)
    for at_g, at_x, at_w in _pairs(g.shape[1:-1], filter_shape[:-2], x.shape[1:-1], strides,
                                   padding, dilations, x.shape[-1], filter_shape[-1], groups):
        dw[at_w] += x[at_x].T @ g[at_g]
    return dw


# --- convolution cases: (input shape, filter shape, strides, padding, dilations, groups) ---

CONV_CASES = {
    # 2-D, many channels, unit stride down: the row layout (forward, flipped input gradient).
    "rows_same": ((3, 7, 6, 5), (3, 3, 5, 4), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    "rows_strided_across_dilated_down": ((2, 9, 8, 3), (3, 2, 3, 2), (1, 2), ((0, 1), (2, 1)),
                                         (2, 1), 1),
    "even_kernel_same": ((2, 6, 7, 4), (4, 2, 4, 3), (1, 1), ((1, 2), (0, 1)), (1, 1), 1),
    # Strided both ways: pixel-major im2col, col2im for the input gradient.
    "strided": ((3, 7, 8, 4), (3, 3, 4, 5), (2, 2), ((1, 1), (1, 1)), (1, 1), 1),
    "stride_beyond_kernel": ((2, 10, 9, 3), (2, 2, 3, 2), (3, 4), ((0, 0), (1, 0)), (1, 1), 1),
    "strided_dilated": ((2, 11, 10, 2), (3, 2, 2, 3), (2, 3), ((2, 2), (1, 1)), (2, 3), 1),
    # A large border: the input gradient is col2im even with unit strides.
    "valid_large_window": ((2, 9, 9, 2), (5, 5, 2, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    # One channel: offset-major im2col and col2im into a channels-first buffer.
    "grey": ((3, 9, 7, 1), (5, 3, 1, 4), (1, 1), ((2, 2), (1, 1)), (1, 1), 1),
    "grey_strided": ((2, 8, 8, 1), (3, 3, 1, 2), (2, 2), ((1, 1), (0, 1)), (1, 1), 1),
    # Channel groups and depthwise (groups == channels, two outputs per channel).
    "groups": ((2, 6, 5, 4), (3, 2, 2, 6), (1, 2), ((1, 1), (0, 1)), (1, 1), 2),
    "depthwise": ((2, 6, 6, 3), (3, 3, 1, 6), (2, 1), ((1, 1), (1, 1)), (1, 2), 3),
    # 1x1: no copy at all with unit strides; a strided subsample otherwise.
    "pointwise": ((3, 4, 5, 6), (1, 1, 6, 4), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    "pointwise_strided": ((2, 7, 6, 3), (1, 1, 3, 4), (2, 2), ((0, 0), (0, 0)), (1, 1), 1),
    # One and three spatial axes.
    "conv1d": ((3, 11, 3), (3, 3, 4), (2,), ((1, 1),), (2,), 1),
    "conv1d_unit": ((2, 9, 4), (4, 4, 2), (1,), ((1, 2),), (1,), 1),
    "conv3d": ((2, 5, 4, 5, 2), (2, 3, 2, 2, 3), (1, 1, 2), ((1, 0), (1, 1), (0, 1)),
               (1, 1, 1), 1),
}

#: The default chunk size, one image per chunk, and chunks of uneven size (the last smaller).
CHUNK_SIZES = [1 << 20, 1, 700]


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_convolution_kernels_match_loops(kernels, case, chunk_bytes, monkeypatch):
    monkeypatch.setattr(im2col, "CHUNK_BYTES", chunk_bytes)
    x_shape, w_shape, strides, padding, dilations, groups = CONV_CASES[case]
    params = dict(strides=strides, padding=padding, dilations=dilations, groups=groups)
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    want = ref_conv(x, w, **params)
    np.testing.assert_allclose(_call(kernels, "conv", x, w, **params), want, atol=1e-12)
    g = RNG.standard_normal(want.shape)
    np.testing.assert_allclose(
        _call(kernels, "conv_backprop_input", g, w, input_shape=x_shape, **params),
        ref_backprop_input(g, w, x_shape, **params), atol=1e-12)
    np.testing.assert_allclose(
        _call(kernels, "conv_backprop_filter", x, g, filter_shape=w_shape, **params),
        ref_backprop_filter(x, g, w_shape, **params), atol=1e-12)


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_an_empty_batch_gives_empty_results_and_a_zero_filter_gradient(kernels, case):
    x_shape, w_shape, strides, padding, dilations, groups = CONV_CASES[case]
    params = dict(strides=strides, padding=padding, dilations=dilations, groups=groups)
    x, w = np.zeros((0,) + x_shape[1:]), RNG.standard_normal(w_shape)
    y = _call(kernels, "conv", x, w, **params)
    assert y.shape == (0,) + ref_conv(np.zeros((1,) + x_shape[1:]), w, **params).shape[1:]
    dx = _call(kernels, "conv_backprop_input", y, w, input_shape=x.shape, **params)
    dw = _call(kernels, "conv_backprop_filter", x, y, filter_shape=w_shape, **params)
    assert dx.shape == x.shape and dw.shape == w_shape and not dw.any()


@pytest.mark.parametrize("case", ["rows_same", "grey", "strided", "groups", "pointwise"])
def test_float32_convolutions_stay_float32(kernels, case):
    x_shape, w_shape, strides, padding, dilations, groups = CONV_CASES[case]
    params = dict(strides=strides, padding=padding, dilations=dilations, groups=groups)
    x, w = RNG.standard_normal(x_shape), RNG.standard_normal(w_shape)
    want = ref_conv(x, w, **params)
    g = RNG.standard_normal(want.shape)
    x32, w32, g32 = (a.astype(np.float32) for a in (x, w, g))
    results = [
        (_call(kernels, "conv", x32, w32, **params), want),
        (_call(kernels, "conv_backprop_input", g32, w32, input_shape=x_shape, **params),
         ref_backprop_input(g, w, x_shape, **params)),
        (_call(kernels, "conv_backprop_filter", x32, g32, filter_shape=w_shape, **params),
         ref_backprop_filter(x, g, w_shape, **params)),
    ]
    for got, expected in results:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_the_cases_take_the_paths_they_are_named_for():
    # If a layout rule changes, the cases above stop testing what they claim to.
    def x_of(case):
        return np.zeros(CONV_CASES[case][0])

    def rows(case):
        x_shape, w_shape, strides, _, _, groups = CONV_CASES[case]
        return im2col.by_rows(x_of(case), w_shape[:-2], strides, groups)

    assert rows("rows_same") and rows("rows_strided_across_dilated_down")
    assert not rows("strided") and not rows("grey") and not rows("groups")
    assert not rows("conv1d") and not rows("conv3d")
    assert im2col.offset_major(1, 8) and not im2col.offset_major(2, 8)
    assert im2col.offset_major(3, 4) and not im2col.offset_major(4, 4)
    x = np.zeros((2, 4, 5, 6))
    [(start, stop, cols)] = im2col.columns(np, x, (4, 5), (1, 1), (1, 1), ((0, 0), (0, 0)),
                                           (1, 1), 1)
    assert (start, stop) == (0, 2) and np.shares_memory(cols, x)  # 1x1: x itself, no copy


# --- pooling --------------------------------------------------------------------------

POOL_CASES = {  # input shape, window, strides, padding
    "tiles": ((2, 6, 4, 3), (2, 2), (2, 2), ((0, 0), (0, 0))),
    "tiles_with_padding": ((2, 5, 3, 2), (2, 2), (2, 2), ((0, 1), (1, 0))),
    "gaps": ((2, 7, 7, 2), (2, 2), (3, 3), ((0, 0), (0, 0))),
    "overlap": ((2, 7, 6, 3), (3, 3), (2, 2), ((1, 1), (1, 0))),
    "overlap_unit_stride": ((1, 5, 5, 2), (3, 2), (1, 1), ((1, 1), (0, 1))),
    "even_window_same": ((2, 6, 5, 2), (4, 4), (1, 2), ((1, 2), (1, 2))),
    "pool1d": ((3, 9, 2), (3,), (2,), ((1, 1),)),
    "pool3d": ((1, 4, 5, 4, 2), (2, 3, 2), (2, 1, 2), ((0, 0), (1, 1), (0, 1))),
}


def _windows(spatial, window, strides, padding):
    """For each output position, the in-bounds input positions of its window, in offset order."""
    out = _geometry(spatial, window, strides, padding, (1,) * len(window))
    for o in np.ndindex(*out):
        positions = [_reads(o, k, strides, padding, (1,) * len(window))
                     for k in np.ndindex(*window)]
        yield o, [p for p in positions if _inside(p, spatial)]


def ref_pools(x, g, window, strides, padding):
    """Max pool, its first-maximum scatter of ``g``, window sums and their transpose."""
    spatial = x.shape[1:-1]
    out = _geometry(spatial, window, strides, padding, (1,) * len(window))
    shape = (x.shape[0],) + out + (x.shape[-1],)
    maxima, sums = np.full(shape, -np.inf), np.zeros(shape)
    scattered, spread = np.zeros(x.shape), np.zeros(x.shape)
    for o, positions in _windows(spatial, window, strides, padding):
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[-1])):
            values = [x[(n,) + p + (c,)] for p in positions]
            maxima[(n,) + o + (c,)] = max(values)
            sums[(n,) + o + (c,)] = sum(values)
            first = positions[values.index(max(values))]
            scattered[(n,) + first + (c,)] += g[(n,) + o + (c,)]
            for p in positions:
                spread[(n,) + p + (c,)] += g[(n,) + o + (c,)]
    return maxima, scattered, sums, spread


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pooling_kernels_match_loops(kernels, case, chunk_bytes, monkeypatch):
    monkeypatch.setattr(im2col, "CHUNK_BYTES", chunk_bytes)
    shape, window, strides, padding = POOL_CASES[case]
    # Small integers: many ties, so the first-maximum rule is exercised.
    x = RNG.integers(0, 4, size=shape).astype(np.float64)
    params = dict(window=window, strides=strides, padding=padding)
    maxima = _call(kernels, "max_pool", x, **params)
    g = RNG.standard_normal(maxima.shape)
    want_max, want_scatter, want_sum, want_spread = ref_pools(x, g, window, strides, padding)
    np.testing.assert_array_equal(maxima, want_max)
    np.testing.assert_allclose(_call(kernels, "max_pool_scatter", x, g, **params), want_scatter,
                               atol=1e-12)
    np.testing.assert_allclose(_call(kernels, "window_sum", x, **params), want_sum, atol=1e-12)
    np.testing.assert_allclose(
        _call(kernels, "window_sum_transpose", g, input_shape=shape, **params), want_spread,
        atol=1e-12)
    # max_pool_select is max_pool_scatter's transpose: <select(v), g> == <v, scatter(g)>.
    v = RNG.standard_normal(shape)
    selected = _call(kernels, "max_pool_select", x, v, **params)
    np.testing.assert_allclose(np.sum(selected * g), np.sum(v * want_scatter), rtol=1e-12)


def test_pools_keep_integer_and_float32_dtypes(kernels):
    params = dict(window=(3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
    x = RNG.integers(-50, 50, size=(2, 5, 5, 2))
    for dtype in (np.int32, np.float32):
        maxima = _call(kernels, "max_pool", x.astype(dtype), **params)
        assert maxima.dtype == dtype
        np.testing.assert_array_equal(maxima, ref_pools(x, np.zeros(maxima.shape), **params)[0])
        assert _call(kernels, "window_sum", x.astype(dtype), **params).dtype == dtype


def test_pool_outputs_are_new_arrays(kernels):
    # One offset covering every window (here a 1x1 window) must not hand back a view of x.
    x = np.arange(8.0).reshape(1, 2, 2, 2)
    for name in ("max_pool", "window_sum"):
        given = kernels.xp.asarray(x.copy())
        out = getattr(kernels, name)(given, window=(1, 1), strides=(1, 1),
                                     padding=((0, 0), (0, 0)))
        out[...] = -1
        assert (given.get() if hasattr(given, "get") else given).tolist() == x.tolist()


# --- finite differences through the ops, float64 -----------------------------------------

def _tensor(*shape):
    import s4tf

    return s4tf.Tensor(RNG.standard_normal(shape), dtype=s4tf.float64)


GRADIENT_CASES = {  # conv2d arguments: input shape, filter shape, strides, padding, dilations
    "grey_same": ((2, 5, 6, 1), (3, 3, 1, 2), 1, "same", 1),
    "rows_even_kernel_same": ((1, 6, 5, 3), (4, 2, 3, 2), 1, "same", 1),
    "rows_dilated": ((1, 7, 6, 2), (2, 3, 2, 3), 1, "valid", (2, 1)),
    "stride_beyond_kernel": ((2, 7, 8, 3), (2, 2, 3, 2), 3, "same", 1),
    "pointwise": ((2, 3, 4, 5), (1, 1, 5, 3), 1, "valid", 1),
}


@pytest.mark.parametrize("case", sorted(GRADIENT_CASES))
def test_convolution_paths_pass_finite_differences(case):
    import s4tf
    from s4tf.testing import check_gradients

    x_shape, w_shape, strides, padding, dilations = GRADIENT_CASES[case]
    check_gradients(lambda x, w: s4tf.nn.conv2d(x, w, strides, padding, dilations),
                    _tensor(*x_shape), _tensor(*w_shape))


def test_depthwise_and_pool_paths_pass_finite_differences():
    import s4tf
    from s4tf.testing import check_gradients

    # Channel groups (offset-major columns, channels-first col2im), second order too.
    check_gradients(lambda x, w: s4tf.nn.depthwise_conv2d(x, w, (2, 1), "same"),
                    _tensor(2, 5, 5, 3), _tensor(3, 2, 3, 2), order=2)
    # Pools: overlapping windows with padding (adds), tiling windows (assignments).
    x = s4tf.Tensor(RNG.permutation(2 * 7 * 6 * 2).reshape(2, 7, 6, 2) / 10.0,
                    dtype=s4tf.float64)  # distinct values: no ties for differences to cross
    check_gradients(lambda x: s4tf.nn.max_pool2d(x, 3, 2, "same"), x)
    check_gradients(lambda x: s4tf.nn.avg_pool2d(x, 3, 2, "same"), x)
    check_gradients(lambda x: s4tf.nn.avg_pool2d(x, 2, 2), x[:, :6])
