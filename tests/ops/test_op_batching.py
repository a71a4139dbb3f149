"""Every primitive's batching rule: values against a loop of the unbatched op, and gradients.

``BATCH_CASES`` has one entry (or more) per primitive: ``name: (f, args,
in_axes)``. ``s4tf.vmap(f, in_axes)(*args)`` must equal the unbatched ``f``
applied to each example in a Python loop and stacked, on every backend; the
batched function's derivatives are checked against finite differences (first
and second order, both modes) with respect to its floating arguments; and the
per-example gradient, ``vmap`` of ``gradient``, must equal a loop of
``gradient``. ``tests/ops/test_rule_coverage.py`` names every primitive with a
batching rule that no case reaches.

The cases exercise the rules' branches: the batch on a later axis, unbatched
operands that broadcast against it, several batched operands on different
axes. The neural-network primitives' cases are added at the end of the dict,
in a block of their own.
"""

import numpy as np
import pytest

import s4tf
from s4tf.ops.batching_helpers import fold_leading_axis
from s4tf.ops.convolution import conv_, conv_backprop_filter_, conv_backprop_input_
from s4tf.ops.elementwise import gelu_grad, pow_scalar, relu_grad
from s4tf.ops.indexing import gather_, getitem_, index_add, scatter_add
from s4tf.ops.joining import concat_
from s4tf.ops.layer_norm import backprop_ as layer_norm_backprop
from s4tf.ops.layer_norm import layer_norm_
from s4tf.ops.linalg import dense_, matmul_, matmul_nt, matmul_tn
from s4tf.ops.normalization import backprop_, batch_moments_, batch_norm_, scale_grad_
from s4tf.ops.optimization_barrier import optimization_barrier
from s4tf.ops.pooling import (
    max_pool_,
    max_pool_scatter_,
    max_pool_select_,
    window_sum_,
    window_sum_transpose_,
)
from s4tf.ops.reductions import reduce_max, reduce_min
from s4tf.testing import assert_allclose, check_gradients

pytestmark = pytest.mark.usefixtures("backend")

_rng = np.random.default_rng(4321)


def T(*shape, lo=-1.0, hi=1.0):
    return s4tf.Tensor(_rng.uniform(lo, hi, shape), dtype=s4tf.float64)


def P(*shape):
    """Positive values, away from the kinks and poles of log, sqrt, pow and abs."""
    return T(*shape, lo=0.5, hi=2.0)


def _spread(*shape):
    # Distinct values at least 0.1 apart: max/min/where stay away from ties and kinks.
    values = _rng.permutation(int(np.prod(shape))) * 0.1 - 0.05 * np.prod(shape) + 0.05
    return s4tf.Tensor(values.reshape(shape), dtype=s4tf.float64)


def Int(*shape, high=5):
    return s4tf.Tensor(_rng.integers(0, high, shape).astype(np.int32))


def B(*shape):
    return s4tf.Tensor(_rng.random(shape) > 0.5)


# The neural-network cases' static parameters.
_C1 = dict(strides=(1, 1), padding=((0, 0), (0, 0)), dilations=(1, 1), groups=1)
_C2 = dict(strides=(2, 1), padding=((1, 0), (0, 1)), dilations=(1, 2), groups=2)
_POOL = dict(window=(2, 2), strides=(2, 1), padding=((0, 1), (1, 0)))
_NORM = dict(axis=1, epsilon=1e-3)

BATCH_CASES = {
    # Elementwise, one input; the batch on axis 1 stays there.
    "neg": (lambda x: -x, [T(2, 4)], 1),
    "exp": (s4tf.exp, [T(4, 3)], 0),
    "log": (s4tf.log, [P(3, 4)], 1),
    "log1p": (s4tf.log1p, [P(4)], 0),
    "expm1": (s4tf.expm1, [T(4, 2)], 0),
    "sqrt": (s4tf.sqrt, [P(4, 2)], 0),
    "rsqrt": (s4tf.rsqrt, [P(4, 2)], 1),
    "sin": (s4tf.sin, [T(4, 2)], 0),
    "cos": (s4tf.cos, [T(4, 2)], 0),
    "tan": (s4tf.tan, [T(4, 2)], 0),
    "tanh": (s4tf.tanh, [T(2, 4)], 1),
    "sigmoid": (s4tf.sigmoid, [T(4, 2)], 0),
    "abs": (s4tf.abs, [_spread(4, 2)], 0),
    "pow_scalar": (lambda x: pow_scalar(x, exponent=3.0), [T(4, 2)], 0),
    "cast": (lambda x: s4tf.cast(x, dtype=s4tf.float64) * x, [T(4, 2)], 0),
    "cast_to_int": (lambda x: s4tf.cast(x * 3.0, dtype=s4tf.int32), [T(4, 2)], 0),
    "relu": (s4tf.ops.relu, [_spread(4, 3)], 1),
    "relu_grad": (relu_grad, [T(4, 3), _spread(3) + 0.05], (0, None)),
    "gelu": (s4tf.gelu, [T(4, 3)], 1),
    "gelu_grad": (gelu_grad, [T(4, 3), T(3)], (0, None)),
    "layer_norm": (lambda x, s, b: layer_norm_(x, s, b, epsilon=1e-3), [T(4, 2, 3), T(3), T(3)],
                   (1, None, None)),
    "layer_norm_per_example_scale": (lambda x, s, b: layer_norm_(x, s, b, epsilon=1e-3),
                                     [T(4, 2, 3), T(4, 3), T(3)], (0, 0, None)),
    "layer_norm_backprop": (lambda g, x, s: layer_norm_backprop(g, x, s, epsilon=1e-3),
                            [T(4, 2, 3), T(2, 3), T(3)], (0, None, None)),
    "layer_norm_backprop_per_example_scale": (
        lambda g, x, s: layer_norm_backprop(g, x, s, epsilon=1e-3),
        [T(2, 3), T(2, 4, 3), T(3, 4)], (None, 1, 1)),
    "sign": (s4tf.sign, [_spread(4, 2)], 0),
    "floor": (s4tf.floor, [T(4, 2) * 3.0], 0),
    "ceil": (s4tf.ceil, [T(4, 2) * 3.0], 0),
    "round": (s4tf.round, [T(4, 2) * 3.0], 0),
    "logical_not": (s4tf.logical_not, [B(4, 2)], 0),
    # Elementwise, two or three inputs: broadcasting against unbatched operands, the batch
    # on different axes, an unbatched operand of higher rank than the batched one.
    "add": (lambda x, y: x + y, [T(4, 3), T(2, 3)], (0, None)),
    "add_python_number": (lambda x: 2.0 + x, [T(4, 3)], 0),
    "sub": (lambda x, y: x - y, [T(3, 4), T(4, 3)], (1, 0)),
    "mul": (lambda x, y: x * y, [T(4, 3), T(2, 1, 3)], (0, None)),
    "mul_both_batched_other_ranks": (lambda x, y: x * y, [T(4, 2, 3), T(3, 4)], (0, 1)),
    "div": (lambda x, y: x / y, [T(2, 4, 3), P(3)], (1, None)),
    "pow": (lambda x, y: x ** y, [P(4, 3), T(4, 3)], 0),
    "maximum": (s4tf.maximum, [_spread(4, 3), _spread(3) + 0.03], (0, None)),
    "minimum": (s4tf.minimum, [_spread(3, 4), _spread(4, 3) + 0.03], (1, 0)),
    "floor_div": (lambda x, y: x // y, [Int(4, 3, high=20), Int(3, high=4) + 1], (0, None)),
    "mod": (lambda x, y: x % y, [Int(4, 3, high=20), Int(4, high=4) + 1], (0, 0)),
    "equal": (lambda x, y: s4tf.ops.equal(x, y), [Int(4, 3), Int(3)], (0, None)),
    "not_equal": (lambda x, y: s4tf.ops.not_equal(x, y), [Int(3, 4), Int(4, 3)], (1, 0)),
    "less": (lambda x, y: x < y, [T(4, 3), T(3)], (0, None)),
    "less_equal": (lambda x, y: x <= y, [T(4, 3), T(4)], (0, 0)),
    "greater": (lambda x, y: x > y, [T(3, 4), T(3, 1)], (1, None)),
    "greater_equal": (lambda x, y: x >= y, [T(4, 3), T(3, 4)], (0, 1)),
    "logical_and": (s4tf.logical_and, [B(4, 3), B(3)], (0, None)),
    "logical_or": (s4tf.logical_or, [B(4, 3), B(3, 4)], (0, 1)),
    "where": (lambda c, x, y: s4tf.where(c, x, y), [B(4, 3), T(3), T(2, 1, 3)], (0, None, None)),
    "where_all_batched": (lambda c, x, y: s4tf.where(c, x, y), [B(3, 4), T(4, 3), T(4)],
                          (1, 0, 0)),
    # Shapes.
    "reshape": (lambda x: x.reshape(3, -1), [T(2, 4, 3)], 1),
    "transpose": (lambda x: x.transpose(2, 0, 1), [T(2, 3, 4, 2)], 2),
    "broadcast_to": (lambda x: s4tf.broadcast_to(x, (2, 3, 4)), [T(3, 4, 1)], 1),
    "expand_dims": (lambda x: s4tf.expand_dims(x, 1), [T(2, 4)], 1),
    # Reductions: the batch axis is skipped, never moved.
    "reduce_sum": (lambda x: x.sum(axis=(0, 2)), [T(2, 3, 4, 2)], 2),
    "reduce_sum_keepdims": (lambda x: x.sum(axis=1, keepdims=True), [T(4, 3, 2)], 0),
    "reduce_mean": (lambda x: x.mean(axis=(0, 2)), [T(2, 3, 4, 2)], 2),
    "reduce_mean_keepdims": (lambda x: x.mean(axis=1, keepdims=True), [T(4, 3, 2)], 0),
    "reduce_max": (lambda x: reduce_max(x, axis=(1,), keepdims=False), [_spread(3, 4, 2)], 1),
    "reduce_min": (lambda x: reduce_min(x, axis=(0, 1), keepdims=True), [_spread(3, 4, 2)], 2),
    "argmax": (lambda x: s4tf.argmax(x, axis=1), [_spread(3, 4, 2)], 0),
    "argmin": (lambda x: s4tf.argmin(x, axis=0), [_spread(3, 4, 2)], 2),
    # Joining: unbatched parts are broadcast to the batch.
    "concat": (lambda x, y: concat_(x, y, axis=1), [T(2, 4, 3), T(2, 1)], (1, None)),
    "stack": (lambda x, y: s4tf.stack([x, y], axis=0), [T(4, 3), T(3, 4)], (0, 1)),
    "pad": (lambda x: s4tf.pad(x, [(1, 0), (0, 2)], value=3.0), [T(2, 4, 3)], 1),
    # Linear algebra: one product for the whole batch.
    "matmul_rows_times_matrix": (lambda x, y: matmul_(x, y), [T(4, 2, 3), T(3, 5)], (0, None)),
    "matmul_batch_between": (lambda x, y: matmul_(x, y), [T(2, 4, 3), T(3, 2)], (1, None)),
    "matmul_matrix_times_batch": (lambda x, y: matmul_(x, y), [T(2, 3), T(3, 4, 2)], (None, 1)),
    "matmul_both": (lambda x, y: matmul_(x, y), [T(4, 2, 3), T(3, 2, 4)], (0, 2)),
    "matmul_stacked_unbatched": (lambda x, y: matmul_(x, y), [T(4, 2, 3), T(2, 3, 2)],
                                 (0, None)),
    "matmul_vector": (lambda x, y: x @ y, [T(4, 3), T(3, 2)], (0, None)),
    "matmul_nt": (lambda x, y: matmul_nt(x, y), [T(4, 2, 3), T(5, 3)], (0, None)),
    "matmul_nt_both": (lambda x, y: matmul_nt(x, y), [T(2, 3, 4), T(4, 5, 3)], (2, 0)),
    "matmul_tn": (lambda x, y: matmul_tn(x, y), [T(4, 3, 2), T(3, 5)], (0, None)),
    # A contracted axis of size 1 (per-example weight gradients): a broadcast product.
    "matmul_tn_both": (lambda x, y: matmul_tn(x, y), [T(4, 1, 3), T(4, 1, 2)], (0, 0)),
    "matmul_outer": (lambda x, y: matmul_(x, y), [T(3, 1, 4), T(4, 1, 2)], (2, 0)),
    "matmul_nt_outer": (lambda x, y: matmul_nt(x, y), [T(4, 3, 1), T(2, 1)], (0, None)),
    "dense": (lambda x, w, b: dense_(x, w, b), [T(4, 2, 3), T(3, 5), T(5)], (0, None, None)),
    "dense_batched_layers": (lambda x, w, b: dense_(x, w, b), [T(2, 3), T(4, 3, 5), T(5, 4)],
                             (None, 0, 1)),
    # Neural-network primitives (vmap-nn). Convolutions: a batch beside N is folded into
    # it, a batch of filters is stacked inside the channel groups, both batched is one
    # grouped convolution; plain (_C1) and strided, padded, dilated, grouped (_C2) cases.
    "conv_input_batched": (lambda x, w: conv_(x, w, **_C1), [T(1, 3, 4, 4, 2), T(2, 2, 2, 3)],
                           (1, None)),
    "conv_filters_batched": (lambda x, w: conv_(x, w, **_C2), [T(1, 5, 4, 4), T(2, 2, 2, 3, 4)],
                             (None, 3)),
    "conv_both_batched": (lambda x, w: conv_(x, w, **_C2), [T(3, 1, 5, 4, 4), T(2, 2, 2, 4, 3)],
                          (0, 4)),
    "conv_backprop_input_cotangent_batched": (
        lambda g, w: conv_backprop_input_(g, w, input_shape=(1, 4, 4, 2), **_C1),
        [T(1, 3, 3, 3, 3), T(2, 2, 2, 3)], (3, None)),
    "conv_backprop_input_filters_batched": (
        lambda g, w: conv_backprop_input_(g, w, input_shape=(1, 5, 4, 4), **_C2),
        [T(1, 3, 3, 4), T(3, 2, 2, 2, 4)], (None, 0)),
    "conv_backprop_input_both_batched": (
        lambda g, w: conv_backprop_input_(g, w, input_shape=(1, 5, 4, 4), **_C2),
        [T(1, 3, 3, 3, 4), T(2, 2, 2, 4, 3)], (1, 4)),
    "conv_backprop_filter_both_batched": (
        lambda x, g: conv_backprop_filter_(x, g, filter_shape=(2, 2, 2, 4), **_C2),
        [T(1, 5, 4, 4, 3), T(3, 1, 3, 3, 4)], (4, 0)),
    "conv_backprop_filter_cotangent_batched": (
        lambda x, g: conv_backprop_filter_(x, g, filter_shape=(2, 2, 2, 4), **_C2),
        [T(1, 5, 4, 4), T(1, 3, 3, 3, 4)], (None, 1)),
    "conv_backprop_filter_input_batched": (
        lambda x, g: conv_backprop_filter_(x, g, filter_shape=(2, 2, 2, 3), **_C1),
        [T(1, 4, 4, 3, 2), T(1, 3, 3, 3)], (3, None)),
    # Pools: the batch is folded into N; a shared selector is broadcast.
    "max_pool": (lambda x: max_pool_(x, **_POOL), [_spread(1, 5, 3, 4, 2)], 2),
    "max_pool_select": (lambda x, v: max_pool_select_(x, v, **_POOL),
                        [_spread(1, 5, 4, 2), T(3, 1, 5, 4, 2)], (None, 0)),
    "max_pool_scatter": (lambda x, g: max_pool_scatter_(x, g, **_POOL),
                         [_spread(1, 5, 4, 2, 3), T(1, 3, 4, 3, 2)], (4, 3)),
    "window_sum": (lambda x: window_sum_(x, **_POOL), [T(3, 1, 5, 4, 2)], 0),
    "window_sum_transpose": (
        lambda g: window_sum_transpose_(g, input_shape=(1, 5, 4, 2), **_POOL),
        [T(1, 3, 4, 2, 3)], 4),
    # Batch norm: each example's statistics are its own (the batch merged into the
    # features); a shared scale, offset or input is broadcast.
    "batch_moments": (lambda x: batch_moments_(x, axis=1), [T(2, 3, 3, 2)], 2),
    "batch_norm": (lambda x, s, b: batch_norm_(x, s, b, batch_moments_(x, axis=1), **_NORM),
                   [T(3, 2, 3, 2), T(3), T(3)], (0, None, None)),
    "batch_norm_shared_input": (
        lambda x, s, b: batch_norm_(x, s, b, batch_moments_(x, axis=1), **_NORM),
        [T(2, 3, 2), T(3, 3), T(3, 3)], (None, 1, 0)),
    "batch_norm_backprop": (
        lambda g, x, s: backprop_(g, x, s, batch_moments_(x, axis=1), **_NORM),
        [T(2, 3, 2, 3), T(3, 2, 3, 2), T(3)], (3, 0, None)),
    "batch_norm_scale_grad": (
        lambda g, x: scale_grad_(g, x, batch_moments_(x, axis=1), **_NORM),
        [T(2, 3, 3, 2), T(2, 3, 2)], (2, None)),
    # Indexing: a full slice for the batch; batched indices into the examples' tables
    # merged along the axis (offsets b * n).
    "getitem": (lambda x: getitem_(x, key=(slice(None, None, -1), None, Ellipsis, 1)),
                [T(3, 4, 2)], 1),
    "index_add_shared_input": (lambda x, u: index_add(x, u, key=(slice(None), 1)),
                               [T(2, 3), T(2, 4)], (None, 1)),
    "index_add_both": (lambda x, u: index_add(x, u, key=(Ellipsis, 0)),
                       [T(2, 4, 3), T(4, 1)], (1, 0)),
    "gather_table_batched": (lambda x, i: gather_(x, i, axis=1), [T(2, 4, 3), Int(2, 2, high=3)],
                             (1, None)),
    "gather_indices_batched": (lambda x, i: gather_(x, i, axis=1),
                               [T(2, 3), Int(2, 4, high=3)], (None, 1)),
    "gather_both": (lambda x, i: gather_(x, i, axis=0), [T(3, 4, 2), Int(4, 2, 2, high=3)],
                    (1, 0)),
    "scatter_add_updates_batched": (
        lambda x, i, u: scatter_add(x, i, u, axis=0),
        [T(3, 2), Int(2, 2, high=3), T(4, 2, 2, 2)], (None, None, 0)),
    "scatter_add_indices_batched": (
        lambda x, i, u: scatter_add(x, i, u, axis=1),
        [T(2, 3), Int(4, 3, high=3), T(2, 3, 4)], (None, 0, 2)),
    "scatter_add_all_batched": (
        lambda x, i, u: scatter_add(x, i, u, axis=0),
        [T(3, 4, 2), Int(3, 4, high=3), T(3, 2, 4)], (1, 1, 2)),
}

# Cases whose op has no derivative (or whose result is not floating): values only.
NOT_DIFFERENTIABLE = {
    "cast_to_int", "sign", "floor", "ceil", "round", "logical_not", "floor_div", "mod", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "argmax", "argmin",
}

# remat's optimization barrier (s4tf/ops/optimization_barrier.py, not exported): the
# identity in its first operand, the others (the cotangents it waits for) on other axes.
BATCH_CASES.update({
    "optimization_barrier": (lambda x, y: optimization_barrier(x, y), [T(4, 3), T(3, 4)], (0, 1)),
    "optimization_barrier_unbatched_first": (lambda x, y: optimization_barrier(x, y) * y.sum(),
                                             [T(3), T(2, 4)], (None, 1)),
})


def _axes(in_axes, args):
    return tuple(in_axes) if isinstance(in_axes, tuple) else (in_axes,) * len(args)


def _example(value, axis, i):
    return value if axis is None else value[(slice(None),) * axis + (i,)]


def _loop(f, args, axes):
    """The unbatched ``f`` on each example, stacked: what vmap must equal."""
    size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    outs = [f(*(_example(a, ax, i) for a, ax in zip(args, axes, strict=True)))
            for i in range(size)]
    return s4tf.stack(outs)


def _on(backend, args):
    return [s4tf.to_backend(a, backend) for a in args]


@pytest.mark.parametrize("name", sorted(BATCH_CASES))
def test_batched_op_equals_a_loop_over_examples(name, backend):
    f, args, in_axes = BATCH_CASES[name]
    args = _on(backend, args)
    axes = _axes(in_axes, args)
    got = s4tf.vmap(f, in_axes=axes)(*args)
    expected = _loop(f, args, axes)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    assert_allclose(got, expected, atol=1e-12, rtol=1e-12)


def _split_points(args, axes):
    """The floating arguments (differentiated) and a function rebuilding the full list."""
    floating = [i for i, a in enumerate(args) if a.dtype.is_floating]

    def rebuild(points):
        full = list(args)
        for i, p in zip(floating, points, strict=True):
            full[i] = p
        return full

    return [args[i] for i in floating], rebuild


DIFFERENTIABLE = sorted(set(BATCH_CASES) - NOT_DIFFERENTIABLE)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_of_a_batched_op(name, backend):
    f, args, in_axes = BATCH_CASES[name]
    args = _on(backend, args)
    axes = _axes(in_axes, args)
    points, rebuild = _split_points(args, axes)
    batched = s4tf.vmap(f, in_axes=axes)
    check_gradients(lambda *p: batched(*rebuild(p)), *points, order=2)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_per_example_gradients_equal_a_loop_of_gradients(name, backend):
    f, args, in_axes = BATCH_CASES[name]
    args = _on(backend, args)
    axes = _axes(in_axes, args)
    points, rebuild = _split_points(args, axes)
    floating = [i for i, a in enumerate(args) if a.dtype.is_floating]

    def loss(*all_args):
        out = f(*all_args)
        return (out * out).sum()

    def per_example(*all_args):
        fixed = list(all_args)

        def of(*p):
            for i, value in zip(floating, p, strict=True):
                fixed[i] = value
            return loss(*fixed)

        grads = s4tf.gradient(*[all_args[i] for i in floating], of=of)
        return grads if isinstance(grads, tuple) else (grads,)

    got = s4tf.vmap(per_example, in_axes=axes)(*args)
    size = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    for k in range(len(floating)):
        expected = s4tf.stack([
            per_example(*(_example(a, ax, i) for a, ax in zip(args, axes, strict=True)))[k]
            for i in range(size)])
        assert_allclose(got[k], expected, atol=1e-12, rtol=1e-10, what=f"{name} gradient {k}")


def test_the_fold_rule_folds_the_batch_into_the_leading_axis(backend):
    # A primitive with a leading axis of its own in both arguments (an add, here).
    add = s4tf.ops.primitive("add", promote=True, batch=fold_leading_axis((0, 1)),
                             vjp=(lambda g, x, y, out: g, lambda g, x, y, out: g))
    x, y = _on(backend, [T(2, 4, 3), T(2, 3)])
    got = s4tf.vmap(add, in_axes=(1, None))(x, y)
    assert_allclose(got, _loop(add, [x, y], (1, None)), atol=1e-12)
    assert_allclose(s4tf.gradient(x, of=lambda x: s4tf.vmap(add, in_axes=(1, None))(x, y).sum()),
                    s4tf.ones_like(x), atol=1e-12)


def test_the_fold_rule_names_an_argument_batched_outside_its_positions(backend):
    add = s4tf.ops.primitive("add", promote=True, batch=fold_leading_axis((0,)))
    with pytest.raises(NotImplementedError, match="argument 1 is batched"):
        s4tf.vmap(add)(*_on(backend, [T(4, 2, 3), T(4, 3)]))


def test_per_example_outer_products_are_one_broadcast_multiply(monkeypatch):
    # x^T @ g of one row each (a per-example weight gradient): no batch of tiny GEMMs.
    kernels = s4tf.backends.base.get_backend_object("naive").kernels
    called = []
    for name in ("matmul", "matmul_tn", "mul"):
        original = getattr(kernels, name)
        monkeypatch.setattr(kernels, name, lambda *a, _n=name, _f=original, **k: (
            called.append(_n), _f(*a, **k))[1])
    with s4tf.backend("naive"):
        x, g = T(4, 1, 3), T(4, 1, 2)
        got = s4tf.vmap(lambda x, g: matmul_tn(x, g))(x, g)
    assert called == ["mul"]
    assert_allclose(got, _loop(lambda x, g: matmul_tn(x, g), [x, g], (0, 0)), atol=1e-12)
