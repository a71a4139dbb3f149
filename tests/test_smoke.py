"""The Manifesto's first example: derivative(of: f) of x * x at 3 is 6."""

import s4tf


def test_derivative_of_square():
    assert s4tf.derivative(3.0, of=lambda x: x * x) == 6.0
    assert s4tf.gradient(3.0, of=lambda x: x * x) == 6.0
