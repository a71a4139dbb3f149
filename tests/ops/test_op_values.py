"""Op values against NumPy, and S4TF's derivative conventions at ties and kinks."""

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose

# Every backend runs the same op suite; see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("backend")

rng = np.random.default_rng(7)
A = rng.standard_normal((2, 3))
B = rng.standard_normal((3,))
POS = rng.uniform(0.5, 2.0, (2, 3))

UNARY = {
    "exp": (s4tf.exp, np.exp, A), "log": (s4tf.log, np.log, POS),
    "log1p": (s4tf.log1p, np.log1p, POS), "expm1": (s4tf.expm1, np.expm1, A),
    "sqrt": (s4tf.sqrt, np.sqrt, POS), "rsqrt": (s4tf.rsqrt, lambda a: 1 / np.sqrt(a), POS),
    "sin": (s4tf.sin, np.sin, A), "cos": (s4tf.cos, np.cos, A), "tan": (s4tf.tan, np.tan, A),
    "tanh": (s4tf.tanh, np.tanh, A), "sigmoid": (s4tf.sigmoid, lambda a: 1 / (1 + np.exp(-a)), A),
    "abs": (s4tf.abs, np.abs, A), "sign": (s4tf.sign, np.sign, A),
    "square": (s4tf.square, np.square, A), "floor": (s4tf.floor, np.floor, A * 3),
    "ceil": (s4tf.ceil, np.ceil, A * 3), "round": (s4tf.round, np.round, A * 3),
    "softmax": (s4tf.softmax, lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True), A),
    "log_softmax": (s4tf.log_softmax,
                    lambda a: a - np.log(np.exp(a).sum(-1, keepdims=True)), A),
    "logsumexp": (lambda t: s4tf.reduce_logsumexp(t, axis=0), lambda a: np.log(np.exp(a).sum(0)), A),
    "clip": (lambda t: s4tf.clip(t, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), A),
    "variance": (lambda t: t.variance(axis=1), lambda a: a.var(axis=1), A),
    "max": (lambda t: t.max(axis=1, keepdims=True), lambda a: a.max(axis=1, keepdims=True), A),
    "min": (lambda t: t.min(), lambda a: a.min(), A),
    "mean": (lambda t: t.mean(axis=(0, 1)), lambda a: a.mean(), A),
    "argmax": (lambda t: t.argmax(axis=1), lambda a: a.argmax(axis=1), A),
    "argmin": (lambda t: t.argmin(), lambda a: a.argmin(), A),
    "getitem": (lambda t: t[::-1, None, -2:], lambda a: a[::-1, None, -2:], A),
    "gather": (lambda t: s4tf.gather(t, [[2, 0], [1, 1]], axis=1),
               lambda a: np.take(a, [[2, 0], [1, 1]], axis=1), A),
    "pad": (lambda t: s4tf.pad(t, [(0, 1), (2, 0)], value=-1.0),
            lambda a: np.pad(a, [(0, 1), (2, 0)], constant_values=-1.0), A),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_numpy(name):
    ours, theirs, a = UNARY[name]
    assert_allclose(ours(s4tf.Tensor(a, dtype=s4tf.float64)), theirs(a), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("op,ref", [
    ("+", np.add), ("-", np.subtract), ("*", np.multiply), ("/", np.divide),
    ("maximum", np.maximum), ("minimum", np.minimum), ("@", None),
])
def test_binary_values_match_numpy(op, ref):
    x, y = s4tf.Tensor(A, dtype=s4tf.float64), s4tf.Tensor(B, dtype=s4tf.float64)
    result = {
        "+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "/": lambda: x / y,
        "maximum": lambda: s4tf.maximum(x, y), "minimum": lambda: s4tf.minimum(x, y),
        "@": lambda: x @ y,
    }[op]()
    expected = A @ B if op == "@" else ref(A, B)
    assert_allclose(result, expected, atol=1e-12)


def test_shape_ops_match_numpy():
    a = rng.standard_normal((2, 3, 4))
    t = s4tf.Tensor(a)
    assert s4tf.concat([t, t], axis=1).shape == (2, 6, 4)
    assert_allclose(s4tf.stack([t, t], axis=-1), np.stack([a, a], axis=-1), atol=1e-6)
    parts = s4tf.split(t, 2, axis=2)
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]
    assert_allclose(parts[1], a[:, :, 2:], atol=1e-6)
    assert_allclose(t.transpose(1, 2, 0), a.transpose(1, 2, 0), atol=1e-6)
    assert_allclose(s4tf.broadcast_to(t[:, :1], (2, 3, 4)), np.broadcast_to(a[:, :1], (2, 3, 4)),
                    atol=1e-6)
    assert t.flatten().shape == (24,) and t.expand_dims(0).shape == (1, 2, 3, 4)
    batched = s4tf.Tensor(rng.standard_normal((5, 1, 2, 3))) @ s4tf.Tensor(rng.standard_normal((4, 3, 2)))
    assert batched.shape == (5, 4, 2, 2)


def test_index_add_and_scatter_add_values():
    x = s4tf.zeros([3, 2])
    out = s4tf.ops.scatter_add(x, s4tf.Tensor([0, 0, 2]), s4tf.ones([3, 2]), axis=0)
    assert out.tolist() == [[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]]
    out = s4tf.ops.index_add(x, s4tf.ones([3]), key=(slice(None), 1))
    assert out.tolist() == [[0.0, 1.0]] * 3
    assert x.tolist() == [[0.0, 0.0]] * 3  # inputs are never written


def test_one_hot_values_and_minus_one_row():
    hot = s4tf.one_hot(s4tf.Tensor([[0, 2], [-1, 1]]), 3)
    assert hot.shape == (2, 2, 3) and hot.dtype == s4tf.float32
    assert hot.tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 0, 0], [0, 1, 0]]]


def test_maximum_minimum_ties_give_the_whole_gradient_to_the_first_argument():
    x = s4tf.Tensor([1.0, 2.0, 3.0])
    y = s4tf.Tensor([1.0, 0.0, 3.0])
    for op in (s4tf.maximum, s4tf.minimum):
        gx, gy = s4tf.gradient(x, y, of=lambda a, b: op(a, b).sum())  # noqa: B023
        assert gx.tolist()[0] == 1.0 and gy.tolist()[0] == 0.0
        assert gx.tolist()[2] == 1.0 and gy.tolist()[2] == 0.0
        fx = s4tf.differential(x, y, of=op)(s4tf.ones([3]), s4tf.zeros([3]))
        assert fx.tolist()[0] == 1.0
    assert s4tf.gradient(2.0, 2.0, of=s4tf.maximum) == (1.0, 0.0)


def test_max_reduction_ties_split_the_gradient_evenly():
    x = s4tf.Tensor([[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]])
    assert s4tf.gradient(x, of=lambda t: t.max()).tolist() == [[0.5, 0, 0.5], [0, 0, 0]]
    rows = s4tf.gradient(x, of=lambda t: t.max(axis=1).sum()).tolist()
    assert rows == [[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]
    columns = s4tf.Tensor([[1.0, 2.0], [1.0, 3.0]])
    assert s4tf.gradient(columns, of=lambda t: t.min(axis=0).sum()).tolist() == [[0.5, 1.0], [0.5, 0.0]]
    tangent = s4tf.differential(x, of=lambda t: t.max())(s4tf.ones([2, 3]))
    assert float(tangent) == 1.0


def test_abs_and_relu_like_where_have_zero_derivative_at_zero():
    x = s4tf.Tensor([-1.0, 0.0, 2.0])
    assert s4tf.gradient(x, of=lambda t: s4tf.abs(t).sum()).tolist() == [-1.0, 0.0, 1.0]
    relu = lambda t: s4tf.where(t > 0, t, 0.0)
    assert s4tf.gradient(x, of=lambda t: relu(t).sum()).tolist() == [0.0, 0.0, 1.0]
    assert s4tf.derivative(0.0, of=abs) == 0.0


def test_softmax_is_stable_for_large_inputs():
    big = s4tf.Tensor([1000.0, 1000.0, -1000.0])
    assert_allclose(s4tf.softmax(big), [0.5, 0.5, 0.0], atol=1e-7)
    assert np.isfinite(s4tf.log_softmax(big).numpy()).all()
    grad = s4tf.gradient(big, of=lambda t: s4tf.reduce_logsumexp(t))
    assert_allclose(grad, [0.5, 0.5, 0.0], atol=1e-7)


def test_pow_derivative_at_zero_base_is_finite():
    gx, gy = s4tf.gradient(s4tf.Tensor([0.0, 2.0]), s4tf.Tensor([2.0, 3.0]),
                           of=lambda x, y: (x ** y).sum())
    assert gx.tolist() == [0.0, 12.0]
    assert_allclose(gy, [0.0, 8 * np.log(2.0)], rtol=1e-6)


@pytest.mark.parametrize("lo, hi", [(3.0, 1.0), (3, 1), (0.5, -0.5)])
def test_clip_with_bounds_out_of_order_names_both(lo, hi):
    x = s4tf.Tensor([0.0, 5.0])
    with pytest.raises(ValueError, match=rf"clip: the lower bound lo={lo!r} is greater than "
                                         rf"the upper bound hi={hi!r}.*clip\(x, {hi!r}, {lo!r}\)"):
        s4tf.clip(x, lo, hi)
    with pytest.raises(ValueError, match="clip: the lower bound"):
        x.clip(lo, hi)
    assert s4tf.clip(x, hi, lo).tolist() == [max(hi, 0.0), lo]
    assert s4tf.clip(x, lo, lo).tolist() == [lo, lo]  # equal bounds are in order
