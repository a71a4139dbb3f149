"""Optimizers on every backend: state where the parameters are, the lazy update in the step graph."""

import numpy as np
import pytest

import s4tf
from s4tf import optimizers

RNG = np.random.default_rng(0)
X = RNG.normal(size=(8, 4)).astype(np.float32)
Y = RNG.normal(size=(8, 3)).astype(np.float32)
W = RNG.normal(size=(4, 3)).astype(np.float32)


class Linear(s4tf.Differentiable):
    w: s4tf.Tensor
    b: s4tf.Tensor


def linear():
    return Linear(s4tf.Tensor(W), s4tf.zeros([3]))


def linear_with_adam():
    """A fresh model and the Adam optimizer every test here trains it with."""
    model = linear()
    return model, optimizers.Adam(model, learning_rate=0.05)


def loss_of(x, y):
    return lambda m: ((x @ m.w + m.b - y) ** 2).mean()


def train(model, opt, steps):
    x, y = s4tf.Tensor(X), s4tf.Tensor(Y)
    for _ in range(steps):
        _, grads = s4tf.value_with_gradient(model, of=loss_of(x, y))
        model = opt.update(model, grads)
    return model


def assert_trained_like_naive(model, steps, bias=True):
    """``model``'s weights are those ``steps`` Adam steps give on the naive backend."""
    with s4tf.backend("naive"):
        want = linear()
        want = train(want, optimizers.Adam(want, learning_rate=0.05), steps)
    np.testing.assert_allclose(model.w.numpy(), want.w.numpy(), rtol=1e-5, atol=1e-6)
    if bias:
        np.testing.assert_allclose(model.b.numpy(), want.b.numpy(), rtol=1e-5, atol=1e-6)


def test_state_lives_on_the_parameters_backend(backend):
    model, opt = linear_with_adam()
    model = train(model, opt, 3)
    assert {t.backend for slots in opt._state for t in slots.values()} == {backend}
    state = opt.state_dict()
    assert all(type(v) is np.ndarray for v in state.values())
    assert_trained_like_naive(model, 3)


@pytest.mark.parametrize("target", ["cupy", "xla"])
def test_model_moved_after_the_optimizer_was_made_keeps_training(target):
    if target == "xla":
        pytest.importorskip("jax")
    with s4tf.backend("naive"):
        model, opt = linear_with_adam()
        model = train(model, opt, 2)
    with s4tf.backend(target):
        model = train(s4tf.to_backend(model, target), opt, 2)
        assert model.w.backend == target
        assert {t.backend for slots in opt._state for t in slots.values()} == {target}
    assert_trained_like_naive(model, 4, bias=False)


def test_state_dict_from_one_backend_loads_on_another():
    pytest.importorskip("jax")
    with s4tf.backend("xla"):
        model, opt = linear_with_adam()
        model = train(model, opt, 2)
        saved = opt.state_dict()
        weights = s4tf.to_backend(model, "naive")
    with s4tf.backend("naive"):
        resumed = optimizers.Adam(weights, learning_rate=0.05)
        resumed.load_state_dict(saved)
        weights = train(weights, resumed, 2)
    assert_trained_like_naive(weights, 4, bias=False)


@pytest.mark.filterwarnings("ignore::s4tf.optimizers.CopiedUpdateWarning")  # a list model, on purpose
def test_a_gradient_on_another_backend_is_moved_to_the_parameters():
    pytest.importorskip("jax")
    with s4tf.backend("xla"):
        model = [s4tf.Tensor([1.0, 2.0])]
    grads = [s4tf.Tensor([1.0, 1.0])]  # naive
    model = optimizers.SGD(model, learning_rate=0.5).update(model, grads)
    assert model[0].backend == "xla" and model[0].tolist() == [0.5, 1.5]


@pytest.fixture
def xla_transfers(monkeypatch):
    """Shapes of every xla array copied to the host while the test runs."""
    jax_backend = pytest.importorskip("s4tf.backends.xla.backend")
    seen = []
    to_numpy = jax_backend.XLABackend.to_numpy

    def spy(self, data):
        seen.append(data.shape)
        return to_numpy(self, data)

    monkeypatch.setattr(jax_backend.XLABackend, "to_numpy", spy)
    return seen


def test_an_adam_step_on_xla_is_one_graph_with_donated_buffers(xla_transfers):
    with s4tf.backend("xla"):
        model, opt = linear_with_adam()
        x, y = s4tf.Tensor(X), s4tf.Tensor(Y)
        for step in range(4):
            s4tf.xla.reset_metrics()
            xla_transfers.clear()
            loss, grads = s4tf.value_with_gradient(model, of=loss_of(x, y))
            model = opt.update(model, grads)
            del grads
            float(loss)
            metrics = s4tf.xla.metrics()
            if step == 0:
                continue  # warm-up: the compile
            assert (metrics["executions"], metrics["compiles"], metrics["cache_hits"]) == (1, 0, 1)
            # Only the loss crossed to the host; the 2 old parameters and 4 old
            # moments went back to XLA for the new values.
            assert xla_transfers == [()]
            assert metrics["donated_buffers"] == 6
    assert_trained_like_naive(model, 4, bias=False)


def test_a_kept_reference_keeps_its_values_on_xla():
    pytest.importorskip("jax")
    with s4tf.backend("xla"):
        model, opt = linear_with_adam()
        x, y = s4tf.Tensor(X), s4tf.Tensor(Y)
        _, grads = s4tf.value_with_gradient(model, of=loss_of(x, y))
        old = model
        s4tf.xla.reset_metrics()
        model = opt.update(model, grads)
        del grads
        s4tf.barrier()
        assert s4tf.xla.metrics()["donated_buffers"] == 4  # the moments only
        np.testing.assert_array_equal(old.w.numpy(), W)
        np.testing.assert_array_equal(old.b.numpy(), np.zeros(3, np.float32))
        assert not np.allclose(model.w.numpy(), W)


@pytest.mark.parametrize("name", ["naive", "cupy"])
def test_sole_owner_is_updated_in_place_on_every_eager_backend(name):
    # HOW_IT_WORKS: eager backends run the rule in place on the parameter's storage
    # when nobody else can see it; on CuPy too, not only on NumPy arrays.
    with s4tf.backend(name):
        model, opt = linear_with_adam()
        x, y = s4tf.Tensor(X), s4tf.Tensor(Y)
    ids = [id(model.w._data), id(model.b._data)]
    for _ in range(3):
        _, grads = s4tf.value_with_gradient(model, of=loss_of(x, y))
        model = opt.update(model, grads)
        assert [id(model.w._data), id(model.b._data)] == ids
    assert_trained_like_naive(model, 3)
    _, grads = s4tf.value_with_gradient(model, of=loss_of(x, y))
    model = model.moved(along=grads * -0.1)
    assert [id(model.w._data), id(model.b._data)] == ids
