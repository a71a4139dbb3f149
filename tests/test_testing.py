"""The checkers every op test relies on must fail on wrong answers, wrong shapes included."""

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose, check_gradients


@pytest.mark.parametrize("actual, expected", [
    (s4tf.Tensor([1, 1, 1]), np.ones((2, 3))),      # would broadcast to (2, 3)
    (s4tf.Tensor([2.0]), 2.0),                       # (1,) is not a scalar
    (s4tf.Tensor(2.0), [2.0]),
    (s4tf.ones([3, 1]), np.ones((3, 3))),
    ([s4tf.ones([2, 1])], [np.ones((2, 2))]),        # inside a structure too
])
def test_assert_allclose_compares_shapes_exactly(actual, expected):
    with pytest.raises(AssertionError, match=r"shape \(.*\) does not match the expected shape"):
        assert_allclose(actual, expected)


def test_assert_allclose_still_treats_none_as_zero_of_any_shape():
    assert_allclose(None, np.zeros((2, 3)))
    assert_allclose([s4tf.zeros([2]), None], [None, np.zeros(4)])
    with pytest.raises(AssertionError, match="off"):
        assert_allclose(None, np.ones(2))


def _spread(jvp_rule):
    """``x`` of shape (3,) repeated into two rows, with forward-mode rule ``jvp_rule``."""
    @s4tf.differentiable
    def spread(x):
        return x * s4tf.ones([2, 3], dtype=s4tf.float64)

    @spread.vjp
    def _(x):
        return spread(x), lambda v: v.sum(axis=0)

    @spread.jvp
    def _(x):
        return spread(x), lambda t: jvp_rule(t)

    return spread


def test_check_gradients_rejects_a_tangent_of_the_wrong_shape():
    x = s4tf.Tensor([0.5, -1.0, 2.0], dtype=s4tf.float64)
    check_gradients(_spread(lambda t: t * s4tf.ones([2, 3], dtype=s4tf.float64)), x)
    # The right numbers in the wrong shape: broadcasting would make them match.
    unspread = _spread(lambda t: t)
    with pytest.raises(AssertionError, match=r"shape \(3,\) does not match the expected shape \(2, 3\)"):
        check_gradients(unspread, x, modes=("forward",))
