"""The batch-normalization kernels against their formulas, on every kernel table.

The eager kernels tile per-feature vectors over a matrix view of the data
(rows of about ``RUN`` elements) and move a feature axis that is not last;
the cases below take each path (a tiling that divides the rows or not, the
feature axis first, in the middle and last, one feature, more features than
``RUN``) and compare in float64 with the textbook formulas. They run on the
naive kernels, the CuPy stand-in (whose host boundary catches a stray ``np``
call) and the xla backend's JAX replay.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from s4tf.backends.base import get_backend_object
from s4tf.backends.norm_kernels import RUN

RNG = np.random.default_rng(3)
TABLES = ["naive", "cupy"] + (["xla"] if importlib.util.find_spec("jax") else [])
CASES = {  # name -> (shape, feature axis)
    "nhwc": ((4, 6, 6, 16), 3),
    "rows_not_divisible": ((3, 7, 5), 2),
    "features_first": ((5, 4, 3), 0),
    "features_in_the_middle": ((4, 3, 5), 1),
    "one_feature": ((50, 1), 1),
    "wider_than_a_run": ((3, RUN + 2), 1),
}


@pytest.fixture(params=TABLES)
def kernels(request):
    if request.param == "xla":
        from s4tf.backends.xla.kernels import JAX_KERNELS

        return JAX_KERNELS
    return get_backend_object(request.param).kernels


def _call(kernels, name, *arrays, **params):
    xp = kernels.xp
    out = getattr(kernels, name)(*(xp.asarray(a) for a in arrays), **params)
    return out.get() if hasattr(out, "get") else np.asarray(out)


def _reference(x, axis, epsilon):
    """``(mean, variance, xh, r)`` per feature, broadcast along ``axis`` where shaped like ``x``."""
    others = tuple(i for i in range(x.ndim) if i != axis)
    mean, variance = x.mean(others), x.var(others)
    kept = tuple(-1 if i == axis else 1 for i in range(x.ndim))
    r = 1 / np.sqrt(variance + epsilon)
    return mean, variance, (x - mean.reshape(kept)) * r.reshape(kept), r, kept, others


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_match_the_formulas(kernels, case):
    shape, axis = CASES[case]
    x, g = RNG.normal(1.5, 2.0, size=shape), RNG.normal(size=shape)
    features = shape[axis]
    scale, offset = RNG.uniform(0.5, 2.0, features), RNG.normal(size=features)
    epsilon = 0.01
    mean, variance, xh, r, kept, others = _reference(x, axis, epsilon)
    moments = _call(kernels, "batch_moments", x, axis=axis)
    np.testing.assert_allclose(moments, np.stack([mean, variance]), rtol=1e-12, atol=1e-12)
    y = _call(kernels, "batch_norm", x, scale, offset, moments, axis=axis, epsilon=epsilon)
    np.testing.assert_allclose(y, xh * scale.reshape(kept) + offset.reshape(kept), rtol=1e-12,
                               atol=1e-12)
    dx = _call(kernels, "batch_norm_backprop", g, x, scale, moments, axis=axis, epsilon=epsilon)
    expected = (scale * r).reshape(kept) * (
        g - g.mean(others, keepdims=True) - xh * (g * xh).mean(others, keepdims=True))
    np.testing.assert_allclose(dx, expected, rtol=1e-10, atol=1e-12)
    ds = _call(kernels, "batch_norm_scale_grad", g, x, moments, axis=axis, epsilon=epsilon)
    np.testing.assert_allclose(ds, (g * xh).sum(others), rtol=1e-10, atol=1e-12)


def test_the_backprop_kernel_is_the_derivative_of_the_forward_one(kernels):
    # Central differences of <g, batch_norm(x)> with the statistics recomputed: the
    # kernel's formula includes the path through the mean and the variance.
    shape, axis = (6, 5, 3), 2
    x, g = RNG.normal(size=shape), RNG.normal(size=shape)
    scale, offset = RNG.uniform(0.5, 2.0, 3), RNG.normal(size=3)

    def loss(x):
        moments = _call(kernels, "batch_moments", x, axis=axis)
        return float((g * _call(kernels, "batch_norm", x, scale, offset, moments, axis=axis,
                                epsilon=0.1)).sum())

    direction = RNG.normal(size=shape)
    numeric = (loss(x + 1e-6 * direction) - loss(x - 1e-6 * direction)) / 2e-6
    moments = _call(kernels, "batch_moments", x, axis=axis)
    dx = _call(kernels, "batch_norm_backprop", g, x, scale, moments, axis=axis, epsilon=0.1)
    np.testing.assert_allclose((dx * direction).sum(), numeric, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_kernels_keep_the_input_dtype(kernels, dtype):
    x = RNG.normal(size=(8, 4, 4)).astype(dtype)
    g = RNG.normal(size=(8, 4, 4)).astype(dtype)
    scale, offset = np.ones(4, dtype), np.zeros(4, dtype)
    moments = _call(kernels, "batch_moments", x, axis=2)
    outputs = [moments,
               _call(kernels, "batch_norm", x, scale, offset, moments, axis=2, epsilon=1e-3),
               _call(kernels, "batch_norm_backprop", g, x, scale, moments, axis=2, epsilon=1e-3),
               _call(kernels, "batch_norm_scale_grad", g, x, moments, axis=2, epsilon=1e-3)]
    assert [o.dtype for o in outputs] == [np.dtype(dtype)] * 4
    reference = _reference(x.astype(np.float64), 2, 1e-3)[2]
    np.testing.assert_allclose(outputs[1], reference, rtol=0, atol=5e-3 if dtype == np.float16 else 1e-5)


def test_kernels_never_write_into_their_inputs(kernels):
    x, g = RNG.normal(size=(4, 3, 8)), RNG.normal(size=(4, 3, 8))
    scale, offset = RNG.uniform(0.5, 2.0, 8), RNG.normal(size=8)
    xp = kernels.xp
    arrays = [xp.asarray(a) for a in (x, g, scale, offset)]
    moments = kernels.batch_moments(arrays[0], axis=2)
    kernels.batch_norm(arrays[0], arrays[2], arrays[3], moments, axis=2, epsilon=0.1)
    kernels.batch_norm_backprop(arrays[1], arrays[0], arrays[2], moments, axis=2, epsilon=0.1)
    kernels.batch_norm_scale_grad(arrays[1], arrays[0], moments, axis=2, epsilon=0.1)
    for array, original in zip(arrays, (x, g, scale, offset), strict=True):
        host = array.get() if hasattr(array, "get") else np.asarray(array)
        np.testing.assert_array_equal(host, original)
