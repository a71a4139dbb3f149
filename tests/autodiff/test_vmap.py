"""s4tf.vmap: arguments and results, composition with the differential operators, errors.

Values are checked against a Python loop over examples of the unbatched
function, on every backend (tests/conftest.py).
"""

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose

pytestmark = pytest.mark.usefixtures("backend")

_rng = np.random.default_rng(7)


def T(*shape):
    return s4tf.Tensor(_rng.uniform(-1.0, 1.0, shape), dtype=s4tf.float64)


def stacked(values, axis=0):
    return s4tf.stack(list(values), axis=axis)


def loop(f, *args, in_axes):
    """``f`` applied to each example in Python: what vmap must equal."""
    size = next(a.shape[ax] for a, ax in zip(args, in_axes, strict=True) if ax is not None)

    def example(a, ax, i):
        return a if ax is None else s4tf.ops.getitem(a, (slice(None),) * ax + (i,))

    return [f(*(example(a, ax, i) for a, ax in zip(args, in_axes, strict=True)))
            for i in range(size)]


def test_mapped_axis_and_unmapped_arguments():
    x, w = T(3, 5, 4), T(4, 2)

    def f(w, x):
        return s4tf.tanh(x @ w).sum(axis=0)

    got = s4tf.vmap(f, in_axes=(None, 1))(w, x)
    assert_allclose(got, stacked(loop(f, w, x, in_axes=(None, 1))), atol=1e-12)


def test_out_axes_moves_the_batch():
    x = T(5, 3)
    got = s4tf.vmap(lambda r: s4tf.stack([r, r * 2.0]), out_axes=2)(x)
    assert got.shape == (2, 3, 5)
    assert_allclose(got[1, :, 4], x[4] * 2.0, atol=1e-12)


def test_per_example_gradients_equal_a_loop_of_gradient():
    w, b, x, y = T(3, 2), T(2), T(6, 3), T(6, 2)

    def loss(params, x, y):
        w, b = params
        return ((s4tf.sigmoid(x @ w + b) - y) ** 2).sum()

    got = s4tf.vmap(s4tf.gradient(of=loss), in_axes=(None, 0, 0))((w, b), x, y)
    expected = loop(s4tf.gradient(of=loss), (w, b), x, y, in_axes=(None, 0, 0))
    assert_allclose(got[0][0], stacked(e[0][0] for e in expected), atol=1e-12)
    assert_allclose(got[0][1], stacked(e[0][1] for e in expected), atol=1e-12)
    assert_allclose(got[1], stacked(e[1] for e in expected), atol=1e-12)
    assert_allclose(got[2], stacked(e[2] for e in expected), atol=1e-12)


def test_gradient_of_a_vmapped_function():
    x, w = T(4, 3), T(3)

    def f(w, x):
        return s4tf.vmap(lambda row: s4tf.sin(row * w).sum())(x).sum()

    got = s4tf.gradient(w, x, of=f)
    expected = s4tf.gradient(w, x, of=lambda w, x: s4tf.sin(x * w).sum())
    assert_allclose(got, expected, atol=1e-12)


def test_a_primitive_without_a_rule_names_itself():
    bare = s4tf.ops.primitive("neg")
    with pytest.raises(NotImplementedError, match="'neg' has no batching rule"):
        s4tf.vmap(lambda r: bare(r))(T(2, 3))
