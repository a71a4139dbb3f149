"""A representative op suite and its gradients: naive against NumPy formulas and finite
differences, every other backend against naive; scatter_add on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import BACKENDS  # tests/conftest.py: the backends this machine runs
from numpy.lib.stride_tricks import sliding_window_view

import s4tf
from s4tf.ops import scatter_add
from s4tf.testing import check_gradients

# One test line runs many different graphs on purpose: not a recompilation problem.
pytestmark = pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning")

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 5))
C = RNG.normal(size=(3, 4))
P = RNG.uniform(0.5, 2.0, size=(3, 4))
IMG = RNG.normal(size=(2, 6, 6, 3))
FILTER = RNG.normal(size=(3, 3, 3, 4))
IDX = np.array([2, 0, 2], dtype=np.int32)
SCALE, OFFSET = RNG.uniform(0.5, 2.0, size=3), RNG.normal(size=3)

# Independent NumPy formulas of the cases: what the naive backend is checked against.
def _softmax(a, axis):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _conv_pool(x, w):
    # conv2d "same" (3x3, stride 1), then a 2x2 max pool of stride 1 and a 2x2 average
    # pool of stride 2, both "valid", in loops over windows.
    padded = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))  # n, h, w, c, 3, 3
    y = np.einsum("nhwcij,ijco->nhwo", windows, w)
    y = sliding_window_view(y, (2, 2), axis=(1, 2)).max(axis=(-2, -1))
    return sliding_window_view(y, (2, 2), axis=(1, 2))[:, ::2, ::2].mean(axis=(-2, -1))


def _batch_norm(x, scale, offset, epsilon=0.01):
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    y = (x - mean) / np.sqrt(var + epsilon) * scale + offset
    return y * mean + var


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


# name -> (function of tensors, inputs, the same function in NumPy): every function
# returns a tensor.
CASES = {
    "elementwise": (lambda a, c: s4tf.tanh(a) * s4tf.exp(c) - s4tf.sigmoid(a) / (1.5 + c * c), (A, C),
                    lambda a, c: np.tanh(a) * np.exp(c) - _sigmoid(a) / (1.5 + c * c)),
    "unary_math": (lambda p: s4tf.log(p) + s4tf.sqrt(p) + s4tf.rsqrt(p) + s4tf.sin(p) ** 3, (P,),
                   lambda p: np.log(p) + np.sqrt(p) + 1 / np.sqrt(p) + np.sin(p) ** 3),
    "scalars": (lambda a: 2.0 * a - 0.5 / (a * a + 1.0) + a ** 2, (A,),
                lambda a: 2.0 * a - 0.5 / (a * a + 1.0) + a ** 2),
    "max_min_where": (lambda a, c: s4tf.where(a > c, s4tf.maximum(a, c), s4tf.minimum(a, 0.1)), (A, C),
                      lambda a, c: np.where(a > c, np.maximum(a, c), np.minimum(a, 0.1))),
    "reductions": (lambda a: a.sum(axis=0) + a.mean(axis=0) * a.max(axis=0) - a.min(axis=0), (A,),
                   lambda a: a.sum(axis=0) + a.mean(axis=0) * a.max(axis=0) - a.min(axis=0)),
    "keepdims": (lambda a: a - a.mean(axis=1, keepdims=True), (A,),
                 lambda a: a - a.mean(axis=1, keepdims=True)),
    "logsumexp": (lambda a: s4tf.reduce_logsumexp(a, axis=1), (A,),
                  lambda a: np.log(np.exp(a).sum(axis=1))),
    "shape_ops": (lambda a: a.reshape(2, 6).T.reshape(-1)[::2].expand_dims(0).squeeze(0), (A,),
                  lambda a: a.reshape(2, 6).T.reshape(-1)[::2]),
    "slicing": (lambda a: a[1:, :3] * a[:2, 1:], (A,), lambda a: a[1:, :3] * a[:2, 1:]),
    "gather": (lambda a: a[IDX] + s4tf.gather(a, IDX, axis=0), (A,),
               lambda a: 2 * a[[2, 0, 2]]),
    "gather_axis1": (lambda a: s4tf.gather(a, [3, 3, 0], axis=1), (A,),
                     lambda a: np.stack([a[:, 3], a[:, 3], a[:, 0]], axis=1)),
    "matmul": (lambda a, b: a @ b, (A, B), lambda a, b: np.einsum("ij,jk->ik", a, b)),
    "softmax": (lambda a: s4tf.softmax(a) + s4tf.log_softmax(a, axis=0), (A,),
                lambda a: _softmax(a, -1) + np.log(_softmax(a, 0))),
    "concat_pad": (lambda a, c: s4tf.pad(s4tf.concat([a, c], axis=1), [(1, 0), (0, 2)]), (A, C),
                   lambda a, c: np.pad(np.concatenate([a, c], axis=1), [(1, 0), (0, 2)])),
    "stack_split": (lambda a, c: s4tf.stack(s4tf.split(a + c, 2, axis=1), axis=0), (A, C),
                    lambda a, c: np.stack([(a + c)[:, :2], (a + c)[:, 2:]], axis=0)),
    "conv_pool": (
        lambda x, w: s4tf.nn.avg_pool2d(
            s4tf.nn.max_pool2d(s4tf.nn.conv2d(x, w, padding="same"), pool_size=2, strides=1),
            pool_size=2, strides=2),
        (IMG, FILTER),
        _conv_pool,
    ),
    # The output and both statistics, so every result's derivative counts.
    "batch_norm": (
        lambda x, s, b: (lambda y, mean, var: y * mean + var)(*s4tf.nn.batch_norm(x, s, b, epsilon=0.01)),
        (IMG, SCALE, OFFSET),
        _batch_norm,
    ),
}

# Naive is the reference of the other backends, and is itself checked against NumPy
# and finite differences (comparing it with itself would test nothing).
against_naive = pytest.mark.parametrize(
    "backend", [name for name in BACKENDS if name != "naive"], indirect=True)


def _on(backend_name, arrays):
    with s4tf.backend(backend_name):
        return [s4tf.Tensor(a) for a in arrays]


def _assert_backend_array(t, backend):
    # A kernel that calls np. instead of xp. hands back a host array: CuPy (and its
    # stand-in) refuse those, but only a later op would notice.
    assert t.backend == backend
    assert type(t._data) is t._backend.array_type, (type(t._data), t._backend.array_type)


def _scalar_loss(fn):
    def loss(*xs):
        y = fn(*xs)
        return (y * y).sum()

    return loss


@pytest.mark.parametrize("case", sorted(CASES))
def test_naive_values_match_numpy(case):
    fn, arrays, formula = CASES[case]
    got = fn(*_on("naive", arrays))
    _assert_backend_array(got, "naive")
    np.testing.assert_allclose(got.numpy(), formula(*arrays), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", sorted(CASES))
def test_naive_derivatives_match_finite_differences(case):
    fn, arrays, _ = CASES[case]
    check_gradients(_scalar_loss(fn), *_on("naive", arrays), modes=("reverse", "forward"))


@against_naive
@pytest.mark.parametrize("case", sorted(CASES))
def test_values_match_naive(backend, case):
    fn, arrays, _ = CASES[case]
    expected = fn(*_on("naive", arrays)).numpy()
    got = fn(*_on(backend, arrays))
    _assert_backend_array(got, backend)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-10)


@against_naive
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_naive(backend, case):
    fn, arrays, _ = CASES[case]
    loss = _scalar_loss(fn)
    expected = s4tf.gradient(*_on("naive", arrays), of=loss)
    got = s4tf.gradient(*_on(backend, arrays), of=loss)
    if len(arrays) == 1:
        expected, got = (expected,), (got,)
    for e, g in zip(expected, got, strict=True):
        _assert_backend_array(g, backend)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-9, atol=1e-9)


@against_naive
@pytest.mark.parametrize("case", ["elementwise", "matmul", "softmax", "slicing", "batch_norm"])
def test_forward_mode_matches_naive(backend, case):
    fn, arrays, _ = CASES[case]
    tangents = [np.ones_like(a) for a in arrays]

    def run(name):
        points = _on(name, arrays)
        ts = _on(name, tangents)
        df = s4tf.differential(*points, of=fn)
        return df(*ts) if len(points) > 1 else df(ts[0])

    np.testing.assert_allclose(run(backend).numpy(), run("naive").numpy(), rtol=1e-9, atol=1e-9)


def test_float32_stays_float32(backend):
    x = s4tf.Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = (x @ x.T * 0.5).sum(axis=1)
    assert y.dtype == s4tf.float32
    np.testing.assert_allclose(y.numpy(), [9.5, 32.0], rtol=1e-6)


def test_integer_ops_match_numpy(backend):
    def fn(x):
        return (x * 3 - 1) // 2 % 5, x.argmax(axis=1), (x > 2).sum()

    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = fn(*_on(backend, [x]))
    expected = ((x * 3 - 1) // 2 % 5, np.array([3, 3, 3]), np.int64(9))
    assert [g.dtype for g in got] == [s4tf.int32, s4tf.int32, s4tf.int64]
    for e, g in zip(expected, got, strict=True):
        np.testing.assert_array_equal(g.numpy(), e)


# scatter_add, the functional form of gather's transpose: repeated indices add up.
SCATTER_X = RNG.normal(size=(4, 3))
SCATTER_INDICES = np.array([2, 0, 2, 2], dtype=np.int32)  # 2 three times, 1 never
SCATTER_WEIGHTS = RNG.normal(size=(4, 3))


def _scatter_operands(axis):
    updates_shape = list(SCATTER_X.shape)
    updates_shape[axis] = len(SCATTER_INDICES)
    return SCATTER_X, SCATTER_INDICES, np.random.default_rng(axis).normal(size=updates_shape)


def _scatter_add_numpy(x, indices, updates, axis):
    out = x.copy()
    for position, index in enumerate(indices):  # one update at a time: repeats add up
        target = [slice(None)] * x.ndim
        target[axis] = index
        out[tuple(target)] += np.take(updates, position, axis=axis)
    return out


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_add_values(backend, axis):
    x, indices, updates = _scatter_operands(axis)
    got = scatter_add(*_on(backend, [x, indices, updates]), axis=axis)
    _assert_backend_array(got, backend)
    np.testing.assert_allclose(got.numpy(), _scatter_add_numpy(x, indices, updates, axis),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("axis", [0, 1])
def test_scatter_add_derivatives(backend, axis):
    x, indices, updates = _on(backend, _scatter_operands(axis))
    (weights,) = _on(backend, [SCATTER_WEIGHTS])

    def f(x, updates):
        return scatter_add(x, indices, updates, axis=axis) * weights

    # Every update reaches the output (each with its own weight), and so does all of x.
    dx, dupdates = s4tf.gradient(x, updates, of=lambda x, u: f(x, u).sum())
    np.testing.assert_allclose(dx.numpy(), SCATTER_WEIGHTS, rtol=1e-12)
    np.testing.assert_allclose(dupdates.numpy(), np.take(SCATTER_WEIGHTS, SCATTER_INDICES, axis=axis),
                               rtol=1e-12)
    check_gradients(f, x, updates, order=2)


# Issue 10, item 7: result dtypes agree on every backend. The rule: ops with floating
# values (transcendentals, true division, softmax, mean) give float32 for int and bool
# inputs (as JAX; NumPy would give float64, or float16 for bools); every other op keeps
# its input's dtype; floating inputs (bfloat16 and float16 included) keep theirs.
FLOATING_VALUED = {
    "exp": s4tf.exp, "log": s4tf.log, "log1p": s4tf.log1p, "expm1": s4tf.expm1,
    "sqrt": s4tf.sqrt, "rsqrt": s4tf.rsqrt, "sin": s4tf.sin, "cos": s4tf.cos, "tan": s4tf.tan,
    "tanh": s4tf.tanh, "sigmoid": s4tf.sigmoid, "softmax": s4tf.softmax,
    "log_softmax": s4tf.log_softmax, "logsumexp": lambda x: s4tf.reduce_logsumexp(x, axis=-1),
    "div": lambda x: x / x, "div_scalar": lambda x: x / 2, "mean": lambda x: x.mean(axis=0),
}
DTYPE_KEEPING = {
    "neg": lambda x: -x, "abs": s4tf.abs, "square": s4tf.square,
    "add": lambda x: x + x, "sub": lambda x: x - x, "mul": lambda x: x * x,
    "pow": lambda x: x ** 2, "maximum": lambda x: s4tf.maximum(x, x), "where": lambda x: s4tf.where(x > 1, x, x),
    "max": lambda x: x.max(axis=0), "matmul": lambda x: x @ x.T,
    "concat": lambda x: s4tf.concat([x, x], axis=0), "transpose": lambda x: x.T,
}


@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "bfloat16", "float32", "float64"])
def test_result_dtypes_follow_one_rule_on_every_backend(backend, dtype):
    dtype = s4tf.dtypes.as_dtype(dtype)
    x = s4tf.Tensor(np.arange(1, 7).reshape(2, 3)).astype(dtype)
    for name, fn in FLOATING_VALUED.items():
        expected = dtype if dtype.is_floating else s4tf.float32
        out = fn(x)
        assert out.dtype == expected, (name, dtype, out.dtype)
        if not dtype.is_floating:
            reference = fn(x.to("naive").astype(s4tf.float64)).numpy()
            np.testing.assert_allclose(out.numpy(), reference, rtol=1e-6, err_msg=name)
    # Integer sums accumulate in int64, as in NumPy -- on every backend.
    assert x.sum().dtype == x.to("naive").sum().dtype
    if dtype == s4tf.bool:
        return  # arithmetic on bools is not part of the rule
    for name, fn in DTYPE_KEEPING.items():
        assert fn(x).dtype == dtype, (name, dtype, fn(x).dtype)
