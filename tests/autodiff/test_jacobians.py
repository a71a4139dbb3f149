"""s4tf.jacobian and s4tf.hessian: values, result structures, one batched pass, composition."""

import numpy as np
import pytest

import s4tf
from s4tf import layers
from s4tf.testing import assert_allclose

# Every backend runs these; see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("backend")

MODES = ["reverse", "forward"]
RNG = np.random.default_rng(0)
W = RNG.standard_normal((2, 3))
A = RNG.standard_normal((3, 3))
X = RNG.standard_normal(3)


def _tanh_layer(x):
    return s4tf.tanh(s4tf.Tensor(W) @ x)


def _tanh_layer_jacobian(x):
    return (1 - np.tanh(W @ x) ** 2)[:, None] * W


def _model():
    s4tf.random.seed(0)
    return layers.Dense(3, 2, activation=s4tf.tanh, dtype=s4tf.float64)


def _loop_of_pullbacks(point, f):
    """The reference: one pullback call per result element, rows stacked."""
    y, pb = s4tf.value_with_pullback(point, of=f)
    rows = [pb(s4tf.Tensor(row.reshape(y.shape))) for row in np.eye(y.size)]
    return s4tf.tree_map(lambda *leaves: np.stack([leaf.numpy() for leaf in leaves]).reshape(
        y.shape + leaves[0].shape), *rows)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_tensor_function_has_shape_result_then_point(mode):
    got = s4tf.jacobian(s4tf.Tensor(X), of=_tanh_layer, mode=mode)
    assert got.shape == (2, 3)
    assert_allclose(got, _tanh_layer_jacobian(X), atol=1e-12)
    # Matrix point, matrix result: d(W @ m**2)[i, j] / dm[k, l] = W[i, k] 2 m[k, j] (j == l).
    m = RNG.standard_normal((3, 2))
    got = s4tf.jacobian(s4tf.Tensor(m), of=lambda m: s4tf.Tensor(W) @ (m * m), mode=mode)
    want = np.einsum("ik,kj,jl->ijkl", W, 2 * m, np.eye(2))
    assert got.shape == (2, 2, 3, 2)
    assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_of_a_model_is_its_tangent_vector_of_blocks(mode):
    model, x = _model(), s4tf.Tensor(RNG.standard_normal((4, 3)))
    got = s4tf.jacobian(model, of=lambda m: m(x), mode=mode)
    assert isinstance(got, type(model).TangentVector)
    assert got.weight.shape == (4, 2, 3, 2) and got.bias.shape == (4, 2, 2)
    assert_allclose(got, _loop_of_pullbacks(model, lambda m: m(x)), atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_several_points_and_a_structured_result(mode):
    x, y = s4tf.Tensor(X), s4tf.Tensor(RNG.standard_normal(3))

    def f(x, y):
        return {"product": x * y, "norm": (x * x).sum()}

    got = s4tf.jacobian(x, y, of=f, mode=mode)
    assert set(got) == {"product", "norm"}
    (dp_dx, dp_dy), (dn_dx, dn_dy) = got["product"], got["norm"]
    assert_allclose(dp_dx, np.diag(y.numpy()), atol=1e-12)
    assert_allclose(dp_dy, np.diag(X), atol=1e-12)
    assert_allclose(dn_dx, 2 * X, atol=1e-12)
    assert_allclose(dn_dy, np.zeros(3))  # the result does not depend on y: zeros, shaped


@pytest.mark.parametrize("mode", MODES)
def test_float_points_and_results(mode):
    assert s4tf.jacobian(2.0, of=lambda t: t ** 3, mode=mode) == 12.0
    along = s4tf.jacobian(2.0, of=lambda t: t * s4tf.Tensor([1.0, -3.0]), mode=mode)
    assert along.shape == (2,) and along.tolist() == [1.0, -3.0]
    assert_allclose(s4tf.jacobian(s4tf.Tensor(X), of=lambda x: (x * x).sum(), mode=mode), 2 * X,
                    atol=1e-12)


def test_hessian_of_a_quadratic_form_and_of_a_float():
    x = s4tf.Tensor(X)
    h = s4tf.hessian(x, of=lambda x: (x * (s4tf.Tensor(A) @ x)).sum())
    assert h.shape == (3, 3)
    assert_allclose(h, A + A.T, atol=1e-12)
    assert s4tf.hessian(3.0, of=lambda t: t ** 3) == 18.0


def test_hessian_of_two_points_is_a_tuple_of_tuples():
    x, y = s4tf.Tensor(X), 2.0
    (hxx, hxy), (hyx, hyy) = s4tf.hessian(x, y, of=lambda x, y: (x * x).sum() * y * y)
    assert_allclose(hxx, 2 * y * y * np.eye(3), atol=1e-12)
    assert_allclose(hxy, 4 * y * X, atol=1e-12)
    assert_allclose(hyx, 4 * y * X, atol=1e-12)
    assert hyy == pytest.approx(2 * float((X * X).sum()))


def test_hessian_of_a_model_is_blocks_by_field_pairs():
    model, x = _model(), s4tf.Tensor(RNG.standard_normal((4, 3)))

    def loss(m):
        return (m(x) ** 2).sum()

    h = s4tf.hessian(model, of=loss)
    assert h.weight.weight.shape == (3, 2, 3, 2) and h.weight.bias.shape == (3, 2, 2)
    assert h.bias.weight.shape == (2, 3, 2) and h.bias.bias.shape == (2, 2)
    # Each row of blocks is the Jacobian of one gradient field (reference: loops of pullbacks).
    by_rows = _loop_of_pullbacks(model, lambda m: s4tf.gradient(m, of=loss).weight)
    assert_allclose(h.weight, by_rows, atol=1e-10)
    assert_allclose(h.weight.bias, np.transpose(h.bias.weight.numpy(), (1, 2, 0)), atol=1e-10)


def test_one_batched_pass_not_one_per_element(monkeypatch):
    """Reverse: one backward pass for 6 rows. Forward: the function traced twice, not 7 times."""
    from s4tf.autodiff import operators

    passes = []
    backward = operators.backward
    monkeypatch.setattr(operators, "backward",
                        lambda *args: passes.append(1) or backward(*args))
    calls = []

    def f(x):
        calls.append(1)
        return s4tf.Tensor(RNG.standard_normal((6, 3))) @ s4tf.sin(x)

    s4tf.jacobian(s4tf.Tensor(X), of=f)
    assert len(passes) == 1 and len(calls) == 1
    calls.clear()
    s4tf.jacobian(s4tf.Tensor(X), of=f, mode="forward")
    assert len(calls) == 2  # the value, then one differential over a batch of 3 tangents
    calls.clear()
    s4tf.hessian(s4tf.Tensor(X), of=lambda x: f(x).sum())
    assert len(calls) == 2  # forward over reverse: the gradient, then one batched pass


def test_gradient_through_a_jacobian_and_a_jacobian_of_a_jacobian():
    # d/dx sum_ij J_ij with J = diag(cos x): -sin x.
    x = s4tf.Tensor(X)
    got = s4tf.gradient(x, of=lambda x: s4tf.jacobian(x, of=s4tf.sin).sum())
    assert_allclose(got, -np.sin(X), atol=1e-12)
    # The Jacobian of the Jacobian of sin is diag(-sin x) on the diagonal of a cube.
    cube = s4tf.jacobian(x, of=s4tf.jacobian(of=s4tf.sin, mode="forward"))
    want = np.zeros((3, 3, 3))
    want[np.arange(3), np.arange(3), np.arange(3)] = -np.sin(X)
    assert_allclose(cube, want, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_derivatives_of_jacobians_and_jacobians_of_derivatives(mode):
    # d/dt sum diag(cos(X t)) = sum(-sin(X t) X), forward mode over a Jacobian.
    d = s4tf.derivative(2.0, of=lambda t: s4tf.jacobian(s4tf.Tensor(X) * t, of=s4tf.sin,
                                                         mode=mode).sum())
    assert float(d) == pytest.approx(float((-np.sin(2 * X) * X).sum()))
    # The Jacobian of x -> d/dt sin(x t) at t = 1.5: diag(cos(1.5 x) - 1.5 x sin(1.5 x)).
    j = s4tf.jacobian(s4tf.Tensor(X), mode=mode,
                      of=lambda x: s4tf.derivative(1.5, of=lambda t: s4tf.sin(x * t)))
    assert_allclose(j, np.diag(np.cos(1.5 * X) - 1.5 * X * np.sin(1.5 * X)), atol=1e-12)
    # A pullback of the Jacobian diag(3 x^2), at the identity: 6 x.
    pb = s4tf.pullback(s4tf.Tensor(X), of=s4tf.jacobian(of=lambda x: x * x * x, mode=mode))
    assert_allclose(pb(s4tf.Tensor(np.eye(3))), 6 * X, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_jacobian_and_hessian_through_remat(mode):
    x = s4tf.Tensor(X)
    f = lambda x: s4tf.tanh(s4tf.sin(x) * 2.0)
    assert_allclose(s4tf.jacobian(x, of=s4tf.remat(f), mode=mode),
                    s4tf.jacobian(x, of=f, mode=mode), atol=1e-12)
    s4tf.random.seed(0)
    stack = [layers.Dense(3, 3, activation=s4tf.gelu, dtype=s4tf.float64) for _ in range(2)]
    batch = s4tf.Tensor(RNG.standard_normal((2, 3)))
    loss = lambda m: (m(batch) ** 2).sum()
    assert_allclose(s4tf.hessian(layers.Sequential(*stack, checkpoint=True), of=loss),
                    s4tf.hessian(layers.Sequential(*stack), of=loss), atol=1e-10)


@pytest.mark.parametrize("mode", MODES)
def test_vmap_of_jacobian_gives_per_example_jacobians(mode):
    xs = RNG.standard_normal((4, 3))
    got = s4tf.vmap(s4tf.jacobian(of=_tanh_layer, mode=mode))(s4tf.Tensor(xs))
    assert got.shape == (4, 2, 3)
    assert_allclose(got, np.stack([_tanh_layer_jacobian(x) for x in xs]), atol=1e-12)
    # Several points and result leaves: the flat axis is cut per leaf inside vmap too.
    ys = RNG.standard_normal((4, 3))

    def f(x, y):
        return {"product": x * y, "cube": (x[0] * x * x).sum()}

    got = s4tf.vmap(s4tf.jacobian(of=f, mode=mode))(s4tf.Tensor(xs), s4tf.Tensor(ys))
    assert got["product"][1].shape == (4, 3, 3) and got["cube"][0].shape == (4, 3)
    for i in range(4):
        one = s4tf.jacobian(s4tf.Tensor(xs[i]), s4tf.Tensor(ys[i]), of=f, mode=mode)
        assert_allclose(s4tf.tree_map(lambda t, i=i: t[i], got), one, atol=1e-12)


def test_errors_name_the_mistake():
    x = s4tf.Tensor(X)
    with pytest.raises(ValueError, match="mode must be 'reverse' or 'forward'.*'sideways'"):
        s4tf.jacobian(x, of=s4tf.sin, mode="sideways")
    with pytest.warns(s4tf.ZeroDerivativeWarning), \
            pytest.raises(TypeError, match="the function's result holds no floats"):
        s4tf.jacobian(x, of=lambda x: s4tf.argmax(x))
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['mood'\]"):
        s4tf.jacobian(x, of=s4tf.sin, mood="forward")
    with pytest.raises(TypeError, match="unexpected keyword"):
        s4tf.gradient(x, of=s4tf.sin, mode="forward")
    with pytest.raises(ValueError, match="one scalar"):
        s4tf.hessian(x, of=s4tf.sin)


def test_of_alone_returns_the_derived_function_keeping_the_mode():
    calls = []

    def f(x):
        calls.append(1)
        return _tanh_layer(x)

    jac = s4tf.jacobian(of=f, mode="forward")
    assert jac.__name__ == "f"
    assert_allclose(jac(s4tf.Tensor(X)), _tanh_layer_jacobian(X), atol=1e-12)
    assert len(calls) == 2  # forward mode's two runs (reverse runs f once)
    assert s4tf.hessian(of=lambda t: t ** 3)(1.0) == 6.0
