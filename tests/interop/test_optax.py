"""optimizers.Optax (s4tf/optimizers/optax_adapter.py) and optax used directly on s4tf models."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import s4tf
from s4tf import layers

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")


def test_optax_adam_matches_optax_on_plain_arrays_and_keeps_the_old_model():
    s4tf.random.seed(0)
    model = layers.Sequential(layers.Dense(3, 4), layers.BatchNorm(4))
    x = s4tf.random.normal([5, 3], seed=1)
    opt = s4tf.optimizers.Optax(model, optax.adam(0.1))
    params = [np.array(p.numpy()) for p in s4tf.tree_leaves(model, differentiable=True)]
    state = optax.adam(0.1).init(params)
    first = model
    for _ in range(3):
        with s4tf.training():
            grads = s4tf.gradient(model, of=lambda m: (m(x) ** 2).mean())
        g = [np.array(t.numpy()) for t in s4tf.tree_leaves(grads)]
        updates, state = optax.adam(0.1).update(g, state, params)
        params = optax.apply_updates(params, updates)
        model = opt.update(model, grads)
    for got, want in zip(s4tf.tree_leaves(model, differentiable=True), params, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    assert opt.step == 3 and first.layers[0].weight.shape == (3, 4)  # never consumed
    assert model.layers[1].running_mean is not first.layers[1].running_mean  # cells copied


def test_state_dict_round_trip():
    model = [s4tf.ones([2])]
    opt = s4tf.optimizers.Optax(model, optax.adam(0.1))
    model = opt.update(model, [s4tf.ones([2])])
    saved = opt.state_dict()
    other = s4tf.optimizers.Optax(model, optax.adam(0.1))
    other.load_state_dict(saved)
    a = opt.update(model, [s4tf.ones([2])], consume=False)
    b = other.update(model, [s4tf.ones([2])], consume=False)
    assert a[0].tolist() == b[0].tolist() and other.step == 2


def test_optax_directly_on_an_s4tf_model():
    s4tf.random.seed(2)
    model = layers.Dense(3, 2)
    x = s4tf.random.normal([4, 3], seed=3)
    tx = optax.adam(1e-2)
    state = tx.init(model)
    grads = jax.grad(lambda m: s4tf.to_jax((m(x) ** 2).sum()))(model)
    updates, state = tx.update(grads, state, model)
    new = optax.apply_updates(model, updates)
    assert type(new) is layers.Dense and new.weight.backend == "naive"
    assert float(abs(new.weight - model.weight).max()) == pytest.approx(1e-2, rel=1e-3)


def test_xla_parameters_go_to_optax_without_a_copy():
    with s4tf.backend("xla"):
        model = [s4tf.ones([3])]
    opt = s4tf.optimizers.Optax(model, optax.sgd(1.0))
    model = opt.update(model, [s4tf.to_backend(s4tf.ones([3]), "xla")])
    assert model[0].backend == "xla" and model[0].tolist() == [0.0, 0.0, 0.0]


def test_without_optax_the_error_names_the_extra(monkeypatch):
    real = importlib.import_module

    def no_optax(name, *args):
        if name == "optax":
            raise ModuleNotFoundError("No module named 'optax'", name="optax")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_optax)
    with pytest.raises(ImportError, match=r"pip install 's4tf\[optax\]'"):
        s4tf.optimizers.Optax([s4tf.ones([2])], None)


def test_a_training_state_with_an_optax_optimizer_round_trips(tmp_path):
    model = layers.Dense(2, 2)
    opt = s4tf.optimizers.Optax(model, optax.adam(0.1))
    grads = s4tf.gradient(model, of=lambda m: m(s4tf.ones([1, 2])).sum())
    model = opt.update(model, grads)
    s4tf.save_training_state(tmp_path / "state.safetensors", model, opt)
    restored = s4tf.optimizers.Optax(model, optax.adam(0.1))
    state = s4tf.load_training_state(tmp_path / "state.safetensors", like=model,
                                     optimizer=restored)
    assert restored.step == 1
    a = opt.update(model, grads, consume=False)
    b = restored.update(state.model, grads, consume=False)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())


class Line(s4tf.Differentiable):
    w: s4tf.Tensor


def test_optax_updates_in_place_and_consumes_a_model_nobody_else_holds():
    model = Line(s4tf.Tensor([1.0, 2.0]))
    opt = s4tf.optimizers.Optax(model, optax.sgd(0.5))
    pointer = model.w._data.__array_interface__["data"][0]
    model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert model.w.tolist() == [0.5, 1.5]
    assert model.w._data.__array_interface__["data"][0] == pointer  # written in place
    new = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert new.w.tolist() == [0.0, 1.0]
    with pytest.raises(s4tf.ConsumedValueError):
        model.w  # noqa: B018  (the use is the test)


def test_optax_copies_what_someone_else_can_see():
    model = Line(s4tf.Tensor([1.0, 2.0]))
    kept = model.w
    opt = s4tf.optimizers.Optax(model, optax.sgd(0.5))
    model = opt.update(model, Line.TangentVector(w=s4tf.Tensor([1.0, 1.0])))
    assert model.w.tolist() == [0.5, 1.5] and kept.tolist() == [1.0, 2.0]
