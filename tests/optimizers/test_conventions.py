"""Every optimizer's conventions, with hyperparameters large enough to see each one.

Defaults hide conventions: with ``epsilon=1e-8`` it makes no difference whether
epsilon is added inside or outside a square root. Here every hyperparameter is
large (epsilon 0.1, betas near 0.5, decay 0.5) and the gradients shrink over the
steps, so each convention changes the result far beyond the tolerance:
epsilon placement, bias correction, the decay's step count, the Nesterov form,
initial accumulator values, running maxima, where weight decay goes.

The references are plain NumPy transcriptions of Swift for TensorFlow's
``Sources/TensorFlow/Optimizers/{SGD,MomentumBased}.swift`` (swift-apis), one
step at a time. Each also knows the plausible wrong conventions (``bug=``);
:func:`test_each_wrong_convention_is_visible` checks that every one of them
moves the result by far more than the tolerance of
:func:`test_rule_matches_swift_reference`, so an optimizer that adopted any of
them would fail there.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import s4tf
from s4tf import optimizers

TOLERANCE = 1e-9  # float64 throughout; the rules are a few dozen flops per step
VISIBLE = 1e-3  # a wrong convention must move some parameter by at least this

P0 = np.array([1.0, -0.5, 2.0, 0.3])
F0 = 0.7  # a float leaf: its rule runs on the host, the tensor's on the backend
# Large first, then smaller: running maxima (AMSGrad, AdaMax) stay above the
# current values, so using the current value instead is visible.
G_TENSOR = np.array([[3.0, -2.0, 1.5, -0.4], [-0.5, 0.3, -1.0, 0.2], [0.2, -0.1, 0.5, -0.05]])
G_FLOAT = np.array([2.0, -0.6, 0.25])


def _gradients(steps):
    """``steps`` gradients: the three above, repeated and slowly growing."""
    return [(G_TENSOR[t % 3] * (1 + 0.1 * (t // 3)), G_FLOAT[t % 3] * (1 + 0.1 * (t // 3)))
            for t in range(steps)]


def _run_reference(rule, steps, bug, **hyper):
    params = [P0.copy(), np.array(F0)]
    states = [{}, {}]
    for t, grads in enumerate(_gradients(steps), start=1):
        params = [rule(p, np.asarray(g, np.float64), s, t, bug=bug, **hyper)
                  for p, g, s in zip(params, grads, states, strict=True)]
    return params


def _lr_at(lr, decay, t, bug):
    # S4TF: learning_rate / (1 + decay * step), with step counted from 1.
    return lr / (1 + decay * (t - 1 if bug == "decay counts steps from 0" else t))


# References (Swift for TensorFlow's rules) ----------------------------------

def sgd(p, g, s, t, *, lr, momentum=0.0, decay=0.0, nesterov=False, bug=None):
    lr_t = _lr_at(lr, decay, t, bug)
    if bug == "velocity holds raw gradients":  # PyTorch: v = m v + g; p -= lr v
        s["v"] = momentum * s.get("v", 0.0) + g
        return p - lr_t * (g + momentum * s["v"] if nesterov else s["v"])
    s["v"] = momentum * s.get("v", 0.0) - lr_t * g
    if nesterov and bug != "nesterov ignored":
        return p + momentum * s["v"] - lr_t * g
    return p + s["v"]


def rmsprop(p, g, s, t, *, lr, rho, epsilon, decay, bug=None):
    lr_t = _lr_at(lr, decay, t, bug)
    start = 1.0 if bug == "alpha starts at one" else 0.0
    if bug == "rho weights the new gradient":
        s["alpha"] = (1 - rho) * s.get("alpha", start) + rho * g * g
    else:
        s["alpha"] = rho * s.get("alpha", start) + (1 - rho) * g * g
    if bug == "epsilon inside the square root":
        return p - lr_t * g / np.sqrt(s["alpha"] + epsilon)
    return p - lr_t * g / (np.sqrt(s["alpha"]) + epsilon)


def adagrad(p, g, s, t, *, lr, initial_accumulator_value, epsilon, bug=None):
    start = 0.0 if bug == "accumulator starts at zero" else initial_accumulator_value
    before = s.get("acc", start)
    s["acc"] = before + g * g
    acc = before if bug == "accumulator added after the step" else s["acc"]
    if bug == "epsilon inside the square root":
        return p - lr * g / np.sqrt(acc + epsilon)
    return p - lr * g / (np.sqrt(acc) + epsilon)


def adadelta(p, g, s, t, *, lr, rho, epsilon, decay, bug=None):
    lr_t = _lr_at(lr, decay, t, bug)
    s["avg"] = rho * s.get("avg", 0.0) + (1 - rho) * g * g
    delta = s.get("delta", 0.0)
    if bug == "epsilon outside the square roots":
        step = g * (np.sqrt(delta) + epsilon) / (np.sqrt(s["avg"]) + epsilon)
    else:
        step = g * np.sqrt(delta + epsilon) / np.sqrt(s["avg"] + epsilon)
    kept = lr_t * step if bug == "delta accumulates the scaled step" else step
    s["delta"] = rho * delta + (1 - rho) * kept * kept
    return p - lr_t * step


def adam(p, g, s, t, *, lr, beta1, beta2, epsilon, decay, weight_decay=None, amsgrad=False,
         bug=None):
    lr_t = _lr_at(lr, decay, t, bug)
    if weight_decay is not None:
        # AdamW (not in swift-apis; s4tf's documented rule): decoupled decay by lr_t first.
        if bug == "weight decay as an L2 term in the gradient":
            g = g + weight_decay * p
        elif bug == "weight decay without the learning rate":
            p = p * (1 - weight_decay)
        elif bug == "weight decay with the undecayed rate":
            p = p * (1 - lr * weight_decay)
        elif bug != "weight decay after the step":
            p = p * (1 - lr_t * weight_decay)
    s["m"] = beta1 * s.get("m", 0.0) + (1 - beta1) * g
    s["v"] = beta2 * s.get("v", 0.0) + (1 - beta2) * g * g
    v = s["v"]
    if amsgrad and bug != "no running maximum":
        s["vmax"] = v = np.maximum(s.get("vmax", 0.0), s["v"])
    if bug == "no bias correction":
        step = lr_t * s["m"] / (np.sqrt(v) + epsilon)
    elif bug == "epsilon added after the bias correction":  # the paper's Algorithm 1
        m_hat, v_hat = s["m"] / (1 - beta1**t), v / (1 - beta2**t)
        step = lr_t * m_hat / (np.sqrt(v_hat) + epsilon)
    else:
        step_size = lr_t * math.sqrt(1 - beta2**t) / (1 - beta1**t)
        root = np.sqrt(v + epsilon) if bug == "epsilon inside the square root" else np.sqrt(v) + epsilon
        step = step_size * s["m"] / root
    p = p - step
    if weight_decay is not None and bug == "weight decay after the step":
        p = p * (1 - lr_t * weight_decay)
    return p


def adamax(p, g, s, t, *, lr, beta1, beta2, epsilon, decay, bug=None):
    lr_t = _lr_at(lr, decay, t, bug)
    step_size = lr_t if bug == "no bias correction" else lr_t / (1 - beta1**t)
    s["m"] = beta1 * s.get("m", 0.0) + (1 - beta1) * g
    kept = s.get("u", 0.0) if bug == "infinity norm not decayed" else beta2 * s.get("u", 0.0)
    s["u"] = np.maximum(kept, np.abs(g))
    denominator = s["u"] if bug == "no epsilon" else s["u"] + epsilon
    return p - step_size * s["m"] / denominator


def radam(p, g, s, t, *, lr, beta1, beta2, epsilon, decay, bug=None):
    # swift-apis' RAdam stores `decay` but never applies it; s4tf applies it as
    # every other optimizer does (documented in RAdam's docstring).
    lr_t = _lr_at(lr, decay, t, bug)
    s["v"] = beta2 * s.get("v", 0.0) + (1 - beta2) * g * g
    s["m"] = beta1 * s.get("m", 0.0) + (1 - beta1) * g
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * beta2**t / (1 - beta2**t)
    threshold = 4 if bug == "rectifies from rho_t > 4" else 5
    if rho_t >= threshold:
        r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        step_size = r * lr_t / (1 - beta1**t)
        if bug != "rectified step without sqrt(1 - beta2**t)":
            step_size *= math.sqrt(1 - beta2**t)
        root = np.sqrt(s["v"] + epsilon) if bug == "epsilon inside the square root" else np.sqrt(s["v"]) + epsilon
        return p - step_size * s["m"] / root
    if bug == "momentum step without bias correction":
        return p - lr_t * s["m"]
    return p - lr_t / (1 - beta1**t) * s["m"]


# Cases: optimizer, its keywords, the reference, steps, the wrong conventions ----

BIG = {"learning_rate": 0.5, "decay": 0.5}
ADAM = {**BIG, "beta1": 0.5, "beta2": 0.6, "epsilon": 0.1}


def _ref_names(kwargs):
    rename = {"learning_rate": "lr"}
    return {rename.get(k, k): v for k, v in kwargs.items()}


CASES = {
    "SGD": (optimizers.SGD, BIG, sgd, 3,
            ["decay counts steps from 0"]),
    "SGD-momentum": (optimizers.SGD, {**BIG, "momentum": 0.9}, sgd, 3,
                     ["decay counts steps from 0", "velocity holds raw gradients"]),
    "SGD-nesterov": (optimizers.SGD, {**BIG, "momentum": 0.9, "nesterov": True}, sgd, 3,
                     ["decay counts steps from 0", "velocity holds raw gradients",
                      "nesterov ignored"]),
    "RMSProp": (optimizers.RMSProp, {**BIG, "rho": 0.7, "epsilon": 0.1}, rmsprop, 3,
                ["decay counts steps from 0", "epsilon inside the square root",
                 "rho weights the new gradient", "alpha starts at one"]),
    "AdaGrad": (optimizers.AdaGrad,
                {"learning_rate": 0.5, "initial_accumulator_value": 2.0, "epsilon": 0.1},
                adagrad, 3,
                ["epsilon inside the square root", "accumulator starts at zero",
                 "accumulator added after the step"]),
    "AdaDelta": (optimizers.AdaDelta, {**BIG, "rho": 0.5, "epsilon": 0.1}, adadelta, 3,
                 ["decay counts steps from 0", "epsilon outside the square roots",
                  "delta accumulates the scaled step"]),
    "Adam": (optimizers.Adam, ADAM, adam, 3,
             ["decay counts steps from 0", "epsilon inside the square root",
              "epsilon added after the bias correction", "no bias correction"]),
    "AMSGrad": (optimizers.AMSGrad, ADAM, adam, 3,
                ["decay counts steps from 0", "epsilon inside the square root",
                 "epsilon added after the bias correction", "no bias correction",
                 "no running maximum"]),
    "AdamW": (optimizers.AdamW, {**ADAM, "weight_decay": 0.5}, adam, 3,
              ["decay counts steps from 0", "epsilon inside the square root",
               "weight decay after the step", "weight decay without the learning rate",
               "weight decay with the undecayed rate",
               "weight decay as an L2 term in the gradient"]),
    "AdaMax": (optimizers.AdaMax, ADAM, adamax, 3,
               ["decay counts steps from 0", "no bias correction", "infinity norm not decayed",
                "no epsilon"]),
    # RAdam rectifies only once rho_t >= 5: step 6 with beta2 = 0.9, so 8 steps.
    "RAdam": (optimizers.RAdam, {**ADAM, "beta2": 0.9}, radam, 8,
              ["decay counts steps from 0", "epsilon inside the square root",
               "rectified step without sqrt(1 - beta2**t)", "momentum step without bias correction",
               "rectifies from rho_t > 4"]),
}


def _reference(name, bug=None):
    cls, kwargs, rule, steps, _ = CASES[name]
    hyper = _ref_names(kwargs)
    if name == "AMSGrad":
        hyper["amsgrad"] = True
    return _run_reference(rule, steps, bug, **hyper)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.filterwarnings("ignore::s4tf.optimizers.CopiedUpdateWarning")  # a list model, on purpose
def test_rule_matches_swift_reference(name, backend):
    cls, kwargs, _, steps, _ = CASES[name]
    model = [s4tf.Tensor(P0, dtype=s4tf.float64), F0]
    opt = cls(model, **kwargs)
    for g_tensor, g_float in _gradients(steps):
        model = opt.update(model, [s4tf.Tensor(g_tensor, dtype=s4tf.float64), float(g_float)])
        s4tf.barrier()
    want = _reference(name)
    np.testing.assert_allclose(model[0].numpy(), want[0], rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(model[1], want[1], rtol=TOLERANCE, atol=TOLERANCE)
    assert model[0].backend == backend and opt.step == steps


@pytest.mark.parametrize("name, bug", [(name, bug) for name, case in CASES.items() for bug in case[4]])
def test_each_wrong_convention_is_visible(name, bug):
    right, wrong = _reference(name), _reference(name, bug)
    moved = max(float(np.max(np.abs(w - r))) for w, r in zip(wrong, right, strict=True))
    assert moved > VISIBLE, f"{name} with {bug!r} moves the parameters by only {moved:.3g}"
