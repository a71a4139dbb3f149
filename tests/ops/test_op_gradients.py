"""Every primitive of s4tf.ops against finite differences: reverse, forward, second order."""

import numpy as np
import pytest

import s4tf
from s4tf.ops import index_add, scatter_add
from s4tf.ops.elementwise import gelu_grad
from s4tf.ops.layer_norm import backprop_ as layer_norm_backprop
from s4tf.ops.layer_norm import layer_norm
from s4tf.testing import check_gradients

# Every backend runs the same op suite; see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("backend")

_rng = np.random.default_rng(1234)


def T(*shape, lo=-1.0, hi=1.0):
    return s4tf.Tensor(_rng.uniform(lo, hi, shape), dtype=s4tf.float64)


def P(*shape):
    """Positive values, away from the kinks and poles of log, sqrt, pow and abs."""
    return T(*shape, lo=0.5, hi=2.0)


def _spread(*shape):
    # Distinct values at least 0.1 apart: max/min/where/clip stay away from ties and kinks.
    values = _rng.permutation(np.prod(shape)) * 0.1 - 0.05 * np.prod(shape) + 0.05
    return s4tf.Tensor(values.reshape(shape), dtype=s4tf.float64)


CASES = {
    # Elementwise, one input.
    "neg": (lambda x: -x, [T(3)]),
    "exp": (s4tf.exp, [T(2, 3)]),
    "log": (s4tf.log, [P(3)]),
    "log1p": (s4tf.log1p, [P(3)]),
    "expm1": (s4tf.expm1, [T(3)]),
    "sqrt": (s4tf.sqrt, [P(3)]),
    "rsqrt": (s4tf.rsqrt, [P(3)]),
    "sin": (s4tf.sin, [T(3)]),
    "cos": (s4tf.cos, [T(3)]),
    "tan": (s4tf.tan, [T(3)]),
    "tanh": (s4tf.tanh, [T(3)]),
    "sigmoid": (s4tf.sigmoid, [T(3)]),
    "abs": (s4tf.abs, [_spread(2, 3)]),
    "square": (s4tf.square, [T(3)]),
    "relu": (s4tf.ops.relu, [_spread(2, 3)]),
    "gelu": (s4tf.gelu, [T(3)]),
    "layer_norm": (lambda x, s, b: layer_norm(x, s, b, epsilon=1e-3), [T(2, 3), T(3), T(3)]),
    "layer_norm_backprop": (lambda g, x, s: layer_norm_backprop(g * g, x, s, epsilon=1e-3),
                            [T(2, 3), T(2, 3), T(3)]),
    "gelu_grad": (lambda v, x: gelu_grad(v * v, x), [T(3), T(3)]),
    # float64 to float64, so the check stays exact (test_cast_between_floats_is_differentiable
    # goes through float32).
    "cast": (lambda x: s4tf.cast(x, dtype=s4tf.float64) * x, [T(3)]),
    "pow_int_exponent": (lambda x: x ** 3, [T(3)]),
    "pow_fractional_exponent": (lambda x: x ** 2.5, [P(3)]),
    # Elementwise, two inputs, with broadcasting.
    "pow": (lambda x, y: x ** y, [P(2, 3), T(3)]),
    "rpow": (lambda y: 2.0 ** y, [T(3)]),
    "add": (lambda x, y: x + y, [T(2, 3), T(3)]),
    "sub": (lambda x, y: x - y, [T(2, 1), T(1, 3)]),
    "mul": (lambda x, y: x * y, [T(4, 1, 3), T(2, 1)]),
    "div": (lambda x, y: x / y, [T(2, 3), P(2, 1)]),
    "rdiv": (lambda x: 2.0 / x, [P(3)]),
    "maximum": (s4tf.maximum, [_spread(2, 3), _spread(3) + 0.03]),
    "minimum": (s4tf.minimum, [_spread(2, 3), _spread(3) + 0.03]),
    "where": (lambda x, y: s4tf.where(x > 0, x, y), [_spread(2, 3), T(3)]),
    "clip": (lambda x: s4tf.clip(x, -0.33, 0.33), [_spread(6)]),
    # Reductions.
    "sum_all": (lambda x: x.sum(), [T(2, 3)]),
    "sum_axis_keepdims": (lambda x: x.sum(axis=1, keepdims=True), [T(2, 3, 2)]),
    "sum_axes": (lambda x: x.sum(axis=(0, 2)), [T(2, 3, 2)]),
    "mean": (lambda x: x.mean(axis=-1), [T(2, 3)]),
    "mean_keepdims": (lambda x: x.mean(axis=0, keepdims=True), [T(2, 3)]),
    "max_axis": (lambda x: x.max(axis=0), [_spread(3, 4)]),
    "min_keepdims": (lambda x: x.min(axis=1, keepdims=True), [_spread(3, 4)]),
    "max_all": (lambda x: x.max(), [_spread(3, 4)]),
    "variance": (lambda x: x.variance(axis=0), [T(3, 4)]),
    "variance_keepdims": (lambda x: x.variance(axis=(0, 1), keepdims=True), [T(2, 2, 2)]),
    # Shapes.
    "reshape": (lambda x: x.reshape(3, -1), [T(2, 3)]),
    "transpose": (lambda x: x.transpose(2, 0, 1), [T(2, 3, 4)]),
    "T": (lambda x: x.T, [T(2, 3)]),
    "broadcast_to": (lambda x: s4tf.broadcast_to(x, (2, 3, 4)), [T(3, 1)]),
    "expand_dims": (lambda x: s4tf.expand_dims(x, 1), [T(2, 3)]),
    "squeeze": (lambda x: s4tf.squeeze(x), [T(1, 3, 1)]),
    "concat": (lambda x, y: s4tf.concat([x, y], axis=1), [T(2, 3), T(2, 1)]),
    "stack": (lambda x, y: s4tf.stack([x, y], axis=1), [T(2, 3), T(2, 3)]),
    "split": (lambda x: s4tf.split(x, [1, 2], axis=1), [T(2, 3)]),
    "pad": (lambda x: s4tf.pad(x, [(1, 0), (0, 2)], value=3.0), [T(2, 3)]),
    # Indexing.
    "getitem_int": (lambda x: x[1], [T(3, 2)]),
    "getitem_slices_none": (lambda x: x[::-1, None, 1:], [T(3, 4)]),
    "getitem_negative": (lambda x: x[-1, ::-2], [T(3, 5)]),
    "getitem_ellipsis": (lambda x: x[..., 0], [T(2, 3)]),
    "getitem_repeated_reads": (lambda x: x[0] * x[0] + x[1:].sum() * x[-1], [T(4)]),
    "gather_multidim": (lambda x: s4tf.gather(x, s4tf.Tensor([[0, 2], [2, 2]]), axis=1), [T(2, 3)]),
    "getitem_index_tensor": (lambda x: x[s4tf.Tensor([1, 1, 0])], [T(2, 3)]),
    "index_add": (lambda x, u: index_add(x, u, key=(slice(None), 1)), [T(2, 3), T(2)]),
    "scatter_add": (lambda x, u: scatter_add(x, s4tf.Tensor([0, 0, 2]), u, axis=0), [T(3, 2), T(3, 2)]),
    # Linear algebra.
    "matmul": (lambda x, y: x @ y, [T(2, 3), T(3, 4)]),
    "matmul_vector_matrix": (lambda x, y: x @ y, [T(3), T(3, 4)]),
    "matmul_matrix_vector": (lambda x, y: x @ y, [T(2, 3), T(3)]),
    "matmul_vector_vector": (lambda x, y: s4tf.matmul(x, y), [T(3), T(3)]),
    "matmul_batch_broadcast": (lambda x, y: x @ y, [T(2, 1, 2, 3), T(3, 3, 2)]),
    # Softmax family.
    "softmax": (lambda x: s4tf.softmax(x), [T(2, 3)]),
    "log_softmax": (lambda x: s4tf.log_softmax(x, axis=0), [T(2, 3)]),
    "reduce_logsumexp": (lambda x: s4tf.reduce_logsumexp(x, axis=1), [T(2, 3)]),
    "reduce_logsumexp_all": (lambda x: s4tf.reduce_logsumexp(x), [T(2, 3)]),
    # Python floats and mixed float/tensor arithmetic.
    "python_floats": (lambda a, b: a * b + s4tf.sin(a) / b - a ** 2, [0.3, 1.7]),
    "float_and_tensor": (lambda a, x: (s4tf.exp(x * a) + a).sum(), [0.7, T(3)]),
}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_to_second_order(name, mode, backend):
    f, points = CASES[name]
    # The cases are built at import, on the default backend: move them to this one.
    points = [s4tf.to_backend(p, backend) for p in points]
    check_gradients(f, *points, order=2, modes=(mode,))


def test_cast_between_floats_is_differentiable():
    # float64 -> float32 -> float64 rounds to ~1e-7, so a wider step keeps the check exact.
    def f(x):
        return s4tf.cast(s4tf.cast(x, dtype=s4tf.float32), dtype=s4tf.float64) * x

    check_gradients(f, T(3), order=2, eps=1e-2, atol=1e-4, rtol=1e-4)
    grad = s4tf.gradient(s4tf.Tensor([1.0, 2.0]), of=lambda x: x.astype(s4tf.float64).sum())
    assert grad.dtype == s4tf.float32 and grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("seed", range(6))
def test_broadcasting_binary_ops_over_random_shapes(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    shape = tuple(int(n) for n in rng.integers(1, 4, rank))
    # Each operand keeps a random subset of trailing axes, some squashed to 1.
    other = tuple(1 if rng.random() < 0.4 else n for n in shape[int(rng.integers(0, rank)):])
    x = s4tf.Tensor(rng.uniform(0.5, 2.0, shape), dtype=s4tf.float64)
    y = s4tf.Tensor(rng.uniform(0.5, 2.0, other), dtype=s4tf.float64)
    for f in (lambda a, b: a * b - b, lambda a, b: a / b + a, lambda a, b: a ** b):
        check_gradients(f, x, y, order=2, seed=seed)
        check_gradients(f, y, x, order=1, seed=seed)


def test_checker_catches_a_wrong_rule():
    wrong = s4tf.differentiable(
        lambda t: t * t,
        vjp=lambda t: (t * t, lambda g: g * 3 * t),
        jvp=lambda t: (t * t, lambda v: v * 3 * t),
    )
    with pytest.raises(AssertionError, match="reverse mode .* argument 0"):
        check_gradients(wrong, T(2), modes=("reverse",))
    with pytest.raises(AssertionError, match="forward mode"):
        check_gradients(wrong, T(2), modes=("forward",))


def test_checker_rejects_float32_points():
    with pytest.raises(TypeError, match="float64"):
        check_gradients(s4tf.exp, s4tf.Tensor([1.0]))
