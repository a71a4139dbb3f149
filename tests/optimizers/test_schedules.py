"""Schedules given as ``learning_rate=`` to every optimizer, and the one-cycle schedule."""

import numpy as np
import pytest

import s4tf
from s4tf import optimizers
from s4tf.optimizers import schedules
from s4tf.optimizers.hyperparameters import schedule_of

OPTIMIZERS = [optimizers.SGD, optimizers.RMSProp, optimizers.AdaGrad, optimizers.AdaDelta,
              optimizers.Adam, optimizers.AdaMax, optimizers.AMSGrad, optimizers.RAdam,
              optimizers.AdamW]


def model():
    return [s4tf.Tensor(np.linspace(-1, 1, 6, dtype=np.float32))]


def gradient(t):
    return [s4tf.Tensor(np.cos(np.arange(6, dtype=np.float32) + t))]


@pytest.mark.parametrize("cls", OPTIMIZERS, ids=lambda c: c.__name__)
def test_update_t_uses_the_schedule_at_t(cls):
    schedule = schedules.StepDecay(0.1, step_size=2, gamma=0.5)
    scheduled, by_hand = cls(model(), learning_rate=schedule), cls(model())
    a, b = model(), model()
    for t in range(1, 6):
        assert scheduled.learning_rate == schedule(t)  # what the next update uses
        by_hand.learning_rate = schedule(t)
        a = scheduled.update(a, gradient(t), consume=False)
        b = by_hand.update(b, gradient(t), consume=False)
        np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
    assert schedule_of(scheduled) is schedule


def test_a_restored_state_keeps_the_schedule_and_continues_the_run():
    cycle = schedules.OneCycle(0.5, total_steps=8)
    first = optimizers.Adam(model(), learning_rate=cycle)
    a = model()
    for t in range(1, 4):
        a = first.update(a, gradient(t), consume=False)
    state = first.state_dict()
    assert state["hyper.learning_rate"] == cycle(4)
    resumed = optimizers.Adam(model(), learning_rate=cycle)
    resumed.load_state_dict(state)
    assert schedule_of(resumed) is cycle
    b = [s4tf.Tensor(a[0].numpy())]
    for t in range(4, 8):
        a = first.update(a, gradient(t), consume=False)
        b = resumed.update(b, gradient(t), consume=False)
    np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())


def test_assigning_a_number_replaces_the_schedule_and_a_function_sets_one():
    opt = optimizers.SGD(model(), learning_rate=lambda step: 0.1 / step)
    assert opt.learning_rate == 0.1
    opt.learning_rate = 0.3
    assert schedule_of(opt) is None and opt.learning_rate == 0.3
    opt.learning_rate = schedules.StepDecay(1.0, step_size=1)
    assert opt.learning_rate == pytest.approx(0.1)
    assert repr(opt).startswith("SGD(learning_rate=0.1")


def test_a_schedule_must_give_numbers():
    with pytest.raises(TypeError, match=r"returned '0\.1' \(a str\) for step 1"):
        optimizers.SGD(model(), learning_rate=lambda step: "0.1")
    with pytest.raises(ValueError, match="learning_rate must be >= 0"):
        optimizers.SGD(model(), learning_rate=lambda step: -1.0)


def test_one_cycle_rises_to_its_peak_then_falls_far_below():
    cycle = schedules.OneCycle(1.0, total_steps=100)
    rates = [cycle(t) for t in range(1, 101)]
    peak = int(np.argmax(rates)) + 1
    assert peak == 30 and rates[peak - 1] == 1.0
    assert rates[0] == pytest.approx(1 / 25) and rates[-1] == pytest.approx(1 / 25 / 1e4)
    assert all(np.diff(rates[:peak]) > 0) and all(np.diff(rates[peak - 1:]) < 0)
    assert cycle(500) == rates[-1]
    linear = schedules.OneCycle(1.0, total_steps=10, warmup_fraction=0.5, anneal="linear")
    assert linear(3) == pytest.approx((1 / 25 + 1.0) / 2)
    with pytest.raises(ValueError, match="warmup_fraction"):
        schedules.OneCycle(1.0, 10, warmup_fraction=1.0)


def test_a_captured_step_follows_the_schedule():
    pytest.importorskip("jax")

    class Line(s4tf.Differentiable):
        w: s4tf.Tensor

    def run(compiled):
        with s4tf.backend("xla"):
            line = Line(s4tf.Tensor(np.ones(4, np.float32)))
            opt = optimizers.SGD(line, learning_rate=schedules.StepDecay(1.0, 1, 0.5))

            def step(line):
                _, grads = s4tf.value_with_gradient(line, of=lambda m: m.w.sum())
                return opt.update(line, grads)

            step = s4tf.xla.compile(step) if compiled else step
            for _ in range(5):
                line = step(line)
            return line.w.numpy()

    np.testing.assert_array_equal(run(True), run(False))
    np.testing.assert_allclose(run(True), 1 - (0.5 + 0.25 + 0.125 + 0.0625 + 0.03125))
