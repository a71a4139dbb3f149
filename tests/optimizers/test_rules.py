"""Each optimizer against a NumPy reference of S4TF's update rule, over several steps."""

import math

import numpy as np
import pytest

import s4tf
from s4tf import optimizers


class Inner(s4tf.Differentiable):
    w: s4tf.Tensor
    scale: float


class Model(s4tf.Differentiable):
    a: s4tf.Tensor
    inner: Inner
    items: list
    table: dict
    name: str = s4tf.no_derivative(default="m")


def make_model(rng, small=False):
    # small: two tensor leaves, since an XLA compile costs ~0.1 s per leaf's update here.
    return Model(
        a=s4tf.Tensor(rng.normal(size=(3, 2))),
        inner=Inner(s4tf.Tensor(rng.normal(size=(4,))), 0.5),
        items=[1.5] if small else [s4tf.Tensor(rng.normal(size=(2,))), 1.5],
        table={} if small else {"b": s4tf.Tensor(rng.normal(size=(2, 2)))},
    )


def grads_like(rng, small=False):
    return Model.TangentVector(
        a=s4tf.Tensor(rng.normal(size=(3, 2))),
        inner=Inner.TangentVector(w=s4tf.Tensor(rng.normal(size=(4,))), scale=float(rng.normal())),
        items=[float(rng.normal())] if small else [s4tf.Tensor(rng.normal(size=(2,))),
                                                   float(rng.normal())],
        table={} if small else {"b": s4tf.Tensor(rng.normal(size=(2, 2)))},
    )


def leaves(value):
    return [np.asarray(x, np.float64) for x in s4tf.tree_leaves(value, differentiable=True)]


def sgd_ref(lr=0.01, momentum=0.0, nesterov=False, decay=0.0):
    def rule(p, g, s, t):
        lr_t = lr / (1 + decay * t)
        v = s.get("v", 0.0) * momentum - lr_t * g
        s["v"] = v
        return p + (v * momentum - lr_t * g if nesterov else v)
    return rule


def rmsprop_ref(lr=1e-3, rho=0.9, epsilon=1e-8, decay=0.0):
    def rule(p, g, s, t):
        s["a"] = s.get("a", 0.0) * rho + g * g * (1 - rho)
        return p - lr / (1 + decay * t) * g / (np.sqrt(s["a"]) + epsilon)
    return rule


def adagrad_ref(lr=1e-3, init=0.1, epsilon=1e-8):
    def rule(p, g, s, t):
        s["acc"] = s.get("acc", init) + g * g
        return p - lr * g / (np.sqrt(s["acc"]) + epsilon)
    return rule


def adadelta_ref(lr=1.0, rho=0.95, epsilon=1e-6, decay=0.0):
    def rule(p, g, s, t):
        s["avg"] = rho * s.get("avg", 0.0) + (1 - rho) * g * g
        step = g * np.sqrt(s.get("delta", 0.0) + epsilon) / np.sqrt(s["avg"] + epsilon)
        s["delta"] = rho * s.get("delta", 0.0) + (1 - rho) * step * step
        return p - lr / (1 + decay * t) * step
    return rule


def adam_ref(lr=1e-3, b1=0.9, b2=0.999, epsilon=1e-8, decay=0.0, amsgrad=False, wd=0.0):
    def rule(p, g, s, t):
        lr_t = lr / (1 + decay * t)
        p = p * (1 - lr_t * wd)
        step = lr_t * math.sqrt(1 - b2**t) / (1 - b1**t)
        s["m"] = s.get("m", 0.0) * b1 + g * (1 - b1)
        s["v"] = s.get("v", 0.0) * b2 + g * g * (1 - b2)
        v = s["v"]
        if amsgrad:
            s["vmax"] = v = np.maximum(s.get("vmax", 0.0), s["v"])
        return p - step * s["m"] / (np.sqrt(v) + epsilon)
    return rule


def adamax_ref(lr=0.002, b1=0.9, b2=0.999, epsilon=1e-8, decay=0.0):
    def rule(p, g, s, t):
        step = lr / (1 + decay * t) / (1 - b1**t)
        s["m"] = s.get("m", 0.0) * b1 + g * (1 - b1)
        s["u"] = np.maximum(s.get("u", 0.0) * b2, np.abs(g))
        return p - step * s["m"] / (s["u"] + epsilon)
    return rule


def radam_ref(lr=1e-3, b1=0.9, b2=0.999, epsilon=1e-8):
    def rule(p, g, s, t):
        s["v"] = b2 * s.get("v", 0.0) + g * g * (1 - b2)
        s["m"] = b1 * s.get("m", 0.0) + g * (1 - b1)
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * t * b2**t / (1 - b2**t)
        if rho_t >= 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            step = r * lr / (1 - b1**t)
            return p - step * math.sqrt(1 - b2**t) * s["m"] / (np.sqrt(s["v"]) + epsilon)
        return p - lr / (1 - b1**t) * s["m"]
    return rule


CASES = [
    (optimizers.SGD, {}, sgd_ref()),
    (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9}, sgd_ref(0.1, 0.9)),
    (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True},
     sgd_ref(0.1, 0.9, nesterov=True)),
    (optimizers.SGD, {"learning_rate": 0.1, "momentum": 0.5, "decay": 0.3},
     sgd_ref(0.1, 0.5, decay=0.3)),
    (optimizers.RMSProp, {}, rmsprop_ref()),
    (optimizers.RMSProp, {"learning_rate": 0.05, "rho": 0.8, "decay": 0.1},
     rmsprop_ref(0.05, 0.8, decay=0.1)),
    (optimizers.AdaGrad, {}, adagrad_ref()),
    (optimizers.AdaGrad, {"learning_rate": 0.1, "initial_accumulator_value": 0.5},
     adagrad_ref(0.1, 0.5)),
    (optimizers.AdaDelta, {}, adadelta_ref()),
    (optimizers.AdaDelta, {"learning_rate": 0.5, "rho": 0.9, "decay": 0.2},
     adadelta_ref(0.5, 0.9, decay=0.2)),
    (optimizers.Adam, {}, adam_ref()),
    (optimizers.Adam, {"learning_rate": 0.01, "beta1": 0.5, "decay": 0.1},
     adam_ref(0.01, 0.5, decay=0.1)),
    (optimizers.AMSGrad, {"learning_rate": 0.01}, adam_ref(0.01, amsgrad=True)),
    (optimizers.AdamW, {"learning_rate": 0.01, "weight_decay": 0.1}, adam_ref(0.01, wd=0.1)),
    (optimizers.AdaMax, {}, adamax_ref()),
    (optimizers.AdaMax, {"learning_rate": 0.01, "decay": 0.5}, adamax_ref(0.01, decay=0.5)),
    (optimizers.RAdam, {"learning_rate": 0.01}, radam_ref(0.01)),
]


@pytest.mark.parametrize("cls, kwargs, reference", CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)])
@pytest.mark.parametrize("consume", [True, False])
def test_matches_numpy_reference(cls, kwargs, reference, consume, backend):
    rng = np.random.default_rng(0)
    small = backend == "xla"
    model = make_model(rng, small)
    expected = leaves(model)
    states = [{} for _ in expected]
    opt = cls(model, **kwargs)
    # RAdam switches to its rectified branch after 5 steps with beta2=0.999.
    for t in range(1, 8):
        grads = grads_like(rng, small)
        g_leaves = leaves(grads)
        expected = [reference(p, g, s, t) for p, g, s in zip(expected, g_leaves, states, strict=True)]
        model = opt.update(model, grads, consume=consume)
        s4tf.barrier()  # one step per graph on xla, as a training loop runs it (compiles once)
    for got, want in zip(leaves(model), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert model.name == "m" and opt.step == 7
    tensors = [x for x in s4tf.tree_leaves(model, differentiable=True) if isinstance(x, s4tf.Tensor)]
    assert all(x.backend == backend for x in tensors)
    # The state stays on the parameters' backend; state_dict gives host arrays.
    assert all(isinstance(v, np.ndarray) for v in opt.state_dict().values())


def test_defaults_are_s4tf_defaults():
    m = [s4tf.ones([2])]
    assert (optimizers.SGD(m).learning_rate, optimizers.SGD(m).momentum) == (0.01, 0.0)
    adam = optimizers.Adam(m)
    assert (adam.learning_rate, adam.beta1, adam.beta2, adam.epsilon, adam.decay) == (
        1e-3, 0.9, 0.999, 1e-8, 0.0)
    assert optimizers.AdaMax(m).learning_rate == 0.002
    assert (optimizers.AdaDelta(m).learning_rate, optimizers.AdaDelta(m).rho) == (1.0, 0.95)
    assert optimizers.AdaGrad(m).initial_accumulator_value == 0.1
    assert optimizers.RMSProp(m).rho == 0.9


def test_learning_rate_can_change_between_steps():
    opt = optimizers.SGD([1.0], learning_rate=0.1)
    x = opt.update([1.0], [1.0])
    opt.learning_rate = 0.5
    assert opt.update(x, [1.0])[0] == pytest.approx(1.0 - 0.1 - 0.5)


@pytest.mark.filterwarnings("ignore::s4tf.optimizers.CopiedUpdateWarning")  # a list model, on purpose
def test_float32_parameters_stay_float32():
    model = [s4tf.ones([3])]
    out = optimizers.Adam(model).update(model, [s4tf.ones([3])])
    assert out[0].dtype == s4tf.float32
