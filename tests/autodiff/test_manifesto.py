"""The Differentiable Programming Manifesto's examples, in s4tf."""

import importlib.util
import math
import pathlib
import sys
import warnings

import numpy as np
import pytest

import s4tf
from s4tf.testing import assert_allclose

# Every backend runs the same op suite; see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("backend")

_EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "perceptron.py"


def _example():
    spec = importlib.util.spec_from_file_location("perceptron_example", _EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining classes
    spec.loader.exec_module(module)
    return module


def test_derivative_of_x_times_x():
    f = lambda x: x * x
    assert s4tf.derivative(3.0, of=f) == 6.0
    assert s4tf.gradient(3.0, of=f) == 6.0
    assert s4tf.derivative(of=f)(3.0) == 6.0


def test_perceptron_reaches_the_least_squares_optimum():
    model, loss = _example().train_perceptron(steps=800, learning_rate=0.2)
    # Least squares of w.x + b on the AND gate: w = (0.5, 0.5), b = -0.25; every residual
    # is 0.25, so the loss (sum of squared errors / 2) is 4 * 0.0625 / 2.
    assert_allclose(model.weight, [0.5, 0.5], atol=1e-3)
    assert abs(model.bias - -0.25) < 1e-3
    assert abs(loss - 0.125) < 1e-4


def test_podcast_speed_model_learns_through_dicts_and_control_flow():
    example = _example()
    start = example.PodcastSpeedModel(
        min_speed=0.5, max_speed=3.0,
        category_multipliers={"comedy": 1.0, "news": 1.0},
        section_multipliers={"advertisement": 1.0, "introduction": 1.0, "body": 1.0, "conclusion": 1.0},
    )
    grad = s4tf.gradient(start, of=example.mean_error)
    assert set(grad.category_multipliers) == {"comedy", "news"}
    # All predictions are 1.0 and every observation is >= 1, so each multiplier should grow.
    assert grad.section_multipliers["advertisement"] < 0 and grad.category_multipliers["news"] < 0
    assert grad.min_speed == 0.0 and grad.max_speed == 0.0  # clamps not taken
    model, error = example.train_podcast(steps=300)
    assert error < example.mean_error(start) / 4


def _clamped(model):
    return model.category_multipliers["a"] * 10.0


def test_podcast_clamp_branch_routes_the_derivative_to_the_bound():
    example = _example()
    model = example.PodcastSpeedModel(
        min_speed=0.5, max_speed=3.0, category_multipliers={"comedy": 5.0},
        section_multipliers={"body": 1.0},
    )
    grad = s4tf.gradient(model, of=lambda m: m.prediction("comedy", "body"))
    assert grad.max_speed == 1.0 and grad.category_multipliers["comedy"] == 0.0


@s4tf.differentiable
def my_exp(x):
    return math.exp(x)


@my_exp.vjp
def _my_exp_vjp(x):
    y = my_exp(x)
    return y, lambda v: v * y


@my_exp.jvp
def _my_exp_jvp(x):
    y = my_exp(x)
    return y, lambda t: t * y


def test_custom_derivative_of_exp_decorator_form():
    assert my_exp(1.0) == math.exp(1.0)
    assert s4tf.gradient(1.0, of=my_exp) == pytest.approx(math.e)
    assert s4tf.derivative(2.0, of=my_exp) == pytest.approx(math.exp(2.0))
    assert s4tf.gradient(1.0, of=lambda x: my_exp(x * x)) == pytest.approx(2 * math.e)


def test_custom_derivative_of_a_foreign_function_and_nesting():
    def vjp(x):
        y = fast_exp(x)
        return y, lambda v: v * fast_exp(x)  # differentiable again: higher order works

    def jvp(x):
        y = fast_exp(x)
        return y, lambda t: t * fast_exp(x)

    fast_exp = s4tf.differentiable(math.exp, vjp=vjp, jvp=jvp)
    assert s4tf.gradient(0.5, of=fast_exp) == pytest.approx(math.exp(0.5))
    second = s4tf.derivative(0.5, of=s4tf.gradient(of=fast_exp))
    assert second == pytest.approx(math.exp(0.5))
    third = s4tf.gradient(0.5, of=s4tf.gradient(of=s4tf.gradient(of=fast_exp)))
    assert third == pytest.approx(math.exp(0.5))
    tensor_exp = s4tf.differentiable(
        lambda t: s4tf.Tensor(np.exp(t.numpy())),
        vjp=lambda t: (s4tf.exp(t), lambda v: v * s4tf.exp(t)),
    )
    assert_allclose(s4tf.gradient(s4tf.Tensor([0.0, 1.0]), of=lambda t: tensor_exp(t).sum()),
                    [1.0, math.e], rtol=1e-6)


def test_zero_derivative_warning_suggests_without_derivative():
    with pytest.warns(s4tf.ZeroDerivativeWarning, match="without_derivative"):
        grad = s4tf.gradient(2.0, of=lambda x: 5.0)
    assert grad == 0.0
    with pytest.warns(s4tf.ZeroDerivativeWarning):
        s4tf.derivative(2.0, of=lambda x: s4tf.without_derivative(x) * 3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s4tf.gradient(2.0, of=lambda x: x * 3.0)  # a real dependence: no warning


_THIS_FILE = pathlib.Path(__file__).name


@pytest.mark.parametrize("operation,fn", [
    ("int", lambda x: int(x) * x),
    ("float", lambda x: float(x) * x),
    ("math.sin", lambda x: math.sin(x)),
    ("numpy", lambda x: x.numpy().sum() * x),
    ("np.sin", lambda x: np.sin(x)),
    ("round", lambda x: round(x)),
    ("item", lambda x: x.item() * x),
])
def test_non_differentiable_operations_raise_naming_the_user_line(operation, fn):
    point = s4tf.Tensor(1.5) if operation in ("numpy", "np.sin", "item") else 1.5
    for operator in (s4tf.gradient, s4tf.derivative):
        with pytest.raises(s4tf.NonDifferentiableError) as info:
            operator(point, of=fn)
        message = str(info.value)
        assert _THIS_FILE in message and "without_derivative" in message
        assert "s4tf.differentiable" in message


def test_comparisons_and_bool_of_traced_values_are_allowed():
    def relu_ish(x):
        if x > 0.0:
            return x * 2.0
        return x * 0.5

    assert s4tf.gradient(1.0, of=relu_ish) == 2.0
    assert s4tf.gradient(-1.0, of=relu_ish) == 0.5
    t = s4tf.Tensor([1.0, -2.0])
    assert s4tf.gradient(t, of=lambda v: v.sum() * 2.0 if bool((v > 0).max()) else v.sum()).tolist() == [2.0, 2.0]
