"""The differential operators (docs/api/autodiff.md), control flow, and higher-order derivatives."""

import dataclasses

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose

# Every backend runs the same op suite; see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("backend")

F1 = lambda x: x * x * 2.0
F2 = lambda x, y: x * y + y
F3 = lambda x, y, z: x * y * z


@pytest.mark.parametrize("f,points,grads", [
    (F1, (3.0,), 12.0),
    (F2, (2.0, 5.0), (5.0, 3.0)),
    (F3, (2.0, 3.0, 4.0), (12.0, 8.0, 6.0)),
])
def test_every_operator_with_one_two_and_three_points(f, points, grads):
    value = f(*points)
    assert s4tf.gradient(*points, of=f) == grads
    assert s4tf.gradient(of=f)(*points) == grads
    assert s4tf.value_with_gradient(*points, of=f) == (value, grads)
    assert s4tf.value_with_gradient(of=f)(*points) == (value, grads)
    assert s4tf.pullback(*points, of=f)(2.0) == (tuple(2 * g for g in grads)
                                                if isinstance(grads, tuple) else 2 * grads)
    v, pb = s4tf.value_with_pullback(*points, of=f)
    assert v == value and pb(1.0) == grads
    assert s4tf.pullback(of=f)(*points)(1.0) == grads
    ones = (1.0,) * len(points)
    directional = sum(grads) if isinstance(grads, tuple) else grads
    assert s4tf.derivative(*points, of=f) == directional  # all points moved together
    assert s4tf.derivative(of=f)(*points) == directional
    assert s4tf.value_with_derivative(*points, of=f) == (value, directional)
    assert s4tf.differential(*points, of=f)(*ones) == directional
    assert s4tf.differential(of=f)(*points)(*ones) == directional
    v, df = s4tf.value_with_differential(*points, of=f)
    assert v == value and df(*ones) == directional
    assert s4tf.value_with_differential(of=f)(*points)[1](*ones) == directional


def test_pullback_is_reusable_and_takes_tensor_cotangents():
    x = s4tf.Tensor([1.0, 2.0])
    pb = s4tf.pullback(x, of=lambda t: t * t)
    assert pb(s4tf.Tensor([1.0, 1.0])).tolist() == [2.0, 4.0]
    assert pb(s4tf.Tensor([0.0, 3.0])).tolist() == [0.0, 12.0]
    with pytest.raises(ValueError, match="scalar"):
        s4tf.gradient(x, of=lambda t: t * t)


def test_without_derivative_stops_gradients():
    assert s4tf.gradient(3.0, of=lambda x: x * s4tf.without_derivative(x)) == 3.0
    stopped = s4tf.without_derivative({"a": s4tf.Tensor([1.0])})
    assert stopped["a"].tolist() == [1.0]


def test_loops_recursion_closures_and_containers():
    def power(x, n):
        return 1.0 if n == 0 else x * power(x, n - 1)  # recursion

    assert s4tf.gradient(2.0, of=lambda x: power(x, 4)) == 32.0

    def loop(x):
        total = 0.0
        for i in range(1, 4):  # loop with data-dependent break
            total = total + x * i
            if total > 5.0:
                break
        return total

    assert s4tf.gradient(1.0, of=loop) == 6.0
    assert s4tf.gradient(2.0, of=loop) == 3.0
    scale = 3.0
    closure = lambda x: x * scale
    assert s4tf.gradient(1.0, of=closure) == 3.0

    def containers(x):
        items = [x, x * 2.0]
        table = {"a": items[1], "b": (x, x)}
        return sum(items) + table["a"] * table["b"][1]

    assert s4tf.gradient(1.5, of=containers) == 3.0 + 4 * 1.5


@dataclasses.dataclass(frozen=True)
class Quadratic:
    a: float

    def __call__(self, x):
        return self.a * x * x


def test_dataclass_methods_and_python_float_arithmetic():
    assert s4tf.gradient(2.0, of=Quadratic(3.0)) == 12.0
    assert s4tf.gradient(2.0, of=lambda x: (x ** 2 - 1.0) / x + abs(-x)) == pytest.approx(1.25 + 1)
    y = s4tf.gradient(s4tf.Tensor([2.0]), of=lambda t: (t * 3.0).sum())
    assert y.tolist() == [3.0] and y.dtype == s4tf.float32


def test_value_with_gradient_of_several_points_and_a_model():
    x, w = s4tf.Tensor([1.0, 2.0]), s4tf.Tensor([3.0, 4.0])
    value, (gx, gw) = s4tf.value_with_gradient(x, w, of=lambda a, b: (a * b).sum())
    assert value.item() == 11.0 and gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]


def test_third_derivative_of_x_cubed():
    cube = lambda x: x * x * x
    assert s4tf.derivative(2.0, of=s4tf.derivative(of=s4tf.derivative(of=cube))) == 6.0
    assert s4tf.gradient(2.0, of=s4tf.gradient(of=s4tf.gradient(of=cube))) == 6.0
    assert s4tf.derivative(2.0, of=s4tf.gradient(of=s4tf.derivative(of=lambda x: x ** 3))) == 6.0
    t = s4tf.Tensor(2.0, dtype=s4tf.float64)
    third = s4tf.derivative(t, of=s4tf.derivative(of=s4tf.derivative(of=cube)))
    assert float(third) == 6.0


def _hessian_case():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 3))
    x = rng.standard_normal(3)
    v = rng.standard_normal(3)
    f = lambda t: (s4tf.sin(t) * (s4tf.Tensor(a) @ t)).sum()
    # f = sum_i sin(x_i) (A x)_i; its Hessian, worked out by hand:
    hessian = np.diag(np.cos(x)) @ a + (np.diag(np.cos(x)) @ a).T - np.diag(np.sin(x) * (a @ x))
    return f, s4tf.Tensor(x), s4tf.Tensor(v), hessian @ v


def test_hessian_vector_product_forward_over_reverse():
    f, x, v, expected = _hessian_case()
    hvp = s4tf.differential(x, of=s4tf.gradient(of=f))(v)
    assert_allclose(hvp, expected, atol=1e-12)


def test_hessian_vector_product_reverse_over_reverse():
    f, x, v, expected = _hessian_case()
    hvp = s4tf.gradient(x, of=lambda t: (s4tf.gradient(t, of=f) * v).sum())
    assert_allclose(hvp, expected, atol=1e-12)
    hvp = s4tf.gradient(x, of=lambda t: s4tf.differential(t, of=f)(v))  # reverse over forward
    assert_allclose(hvp, expected, atol=1e-12)
