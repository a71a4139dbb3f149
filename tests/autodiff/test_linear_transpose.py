"""s4tf.linear_transpose and @f.transpose: adjoints of linear maps, and clear refusals."""

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose


def _dot(a, b):
    return sum(float((x * y).sum()) for x, y in zip(s4tf.tree_leaves(a), s4tf.tree_leaves(b),
                                                     strict=True))


@pytest.mark.usefixtures("backend")
class TestAdjoint:
    def test_a_matrix(self):
        a = s4tf.Tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        ft = s4tf.linear_transpose(lambda x: a @ x, s4tf.zeros([2]))
        assert ft(s4tf.Tensor([1.0, 0.0, 1.0])).tolist() == [6.0, 8.0]

    def test_a_composite_map_satisfies_the_adjoint_identity(self):
        s4tf.random.seed(1)
        w = s4tf.random.normal([3, 4])

        mask = s4tf.Tensor([[True, False, True]] * 4)

        def f(x):  # reshapes, a transpose, slicing, concat, reductions, a masked where
            y = (x.reshape([4, 3]) @ w).transpose(1, 0)
            both = s4tf.concat([y[:, :2] * 2.0 - y[:, 2:], y.sum(axis=1, keepdims=True)], axis=1)
            return s4tf.where(mask, both, 0.0) / 4.0

        x = s4tf.random.normal([12])
        t, v = s4tf.random.normal([12]), s4tf.random.normal([4, 3])
        ft = s4tf.linear_transpose(f, x)
        assert _dot(ft(v), t) == pytest.approx(_dot(v, f(t)), rel=1e-5)
        # The transpose of the transpose is the map again.
        assert_allclose(s4tf.linear_transpose(ft, v)(t), f(t), rtol=1e-5, atol=1e-6)

    def test_structured_and_several_points(self):
        def f(p, s):
            return p["a"] * 3.0 + p["b"].sum() - s

        p = {"a": s4tf.ones([2]), "b": s4tf.ones([3])}
        tp, ts = s4tf.linear_transpose(f, p, 1.0)(s4tf.Tensor([1.0, 2.0]))
        assert tp["a"].tolist() == [3.0, 6.0] and tp["b"].tolist() == [3.0, 3.0, 3.0]
        assert float(ts) == -3.0

    def test_under_vmap(self):
        s4tf.random.seed(2)
        a, v = s4tf.random.normal([3, 4]), s4tf.random.normal([6, 3])
        ft = s4tf.linear_transpose(lambda x: a @ x, s4tf.zeros([4]))
        assert_allclose(s4tf.vmap(ft)(v), v @ a, rtol=1e-5, atol=1e-6)

    def test_an_affine_map_is_transposed_as_its_linear_part(self):
        ft = s4tf.linear_transpose(lambda x: 2.0 * x + 1.0, s4tf.zeros([2]))
        assert ft(s4tf.ones([2])).tolist() == [2.0, 2.0]


@pytest.mark.parametrize("f, problem", [
    (lambda x: s4tf.tanh(x), "tanh, which is not linear"),
    (lambda x: x * x, "mul combines two values"),
    (lambda x: 1.0 / x, "div takes a value that depends on them as its argument 1"),
    (lambda x: s4tf.relu(x), "relu, which is not linear"),
    (lambda x: s4tf.where(x > 0.0, x, 0.0), "greater, which is not linear"),
])
def test_a_nonlinear_function_is_refused_naming_the_op_and_line(f, problem):
    with pytest.raises(ValueError, match=problem) as error:
        s4tf.linear_transpose(f, s4tf.ones([2]))
    assert "test_linear_transpose.py" in str(error.value)
    assert "s4tf.pullback(x, of=f)" in str(error.value)


def test_a_registered_transpose_is_returned_and_gives_derivatives():
    calls = []

    @s4tf.differentiable
    def scale(x):
        return s4tf.Tensor([1.0, 2.0, 3.0]) * x

    @scale.transpose
    def _(v):
        calls.append(v)
        return s4tf.Tensor([1.0, 2.0, 3.0]) * v

    x = s4tf.Tensor([1.0, 1.0, 1.0])
    assert s4tf.linear_transpose(scale, x) is scale.transpose_rule
    assert s4tf.gradient(x, of=lambda x: scale(x).sum()).tolist() == [1.0, 2.0, 3.0]
    assert len(calls) == 1  # the pullback is the registered transpose
    assert s4tf.differential(x, of=scale)(s4tf.ones([3])).tolist() == [1.0, 2.0, 3.0]
    # Inside another function being transposed, it is trusted as linear.
    ft = s4tf.linear_transpose(lambda x: scale(x) * 2.0, x)
    assert ft(s4tf.ones([3])).tolist() == [2.0, 4.0, 6.0]


def test_bad_calls():
    with pytest.raises(TypeError, match="give an example point"):
        s4tf.linear_transpose(lambda x: x)
    with pytest.raises(TypeError, match="must be callable"):
        s4tf.linear_transpose(np.ones(2), 1.0)
