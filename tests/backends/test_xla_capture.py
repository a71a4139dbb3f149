"""Captured steps (``s4tf.xla.compile``): replays without Python, equal to uncaptured steps."""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import s4tf
from s4tf import layers

pytest.importorskip("jax")


@pytest.fixture(autouse=True)
def fresh_metrics():
    s4tf.barrier()
    s4tf.xla.reset_metrics()
    state = s4tf.random.get_state()
    yield
    s4tf.random.set_state(state)  # these tests seed the global stream: leave it as found


class Net(s4tf.Layer):
    """Conv + BatchNorm (State updates in training) + Dense."""

    conv: layers.Conv2D
    norm: layers.BatchNorm
    dense: layers.Dense

    def __init__(self):
        self.conv = layers.Conv2D(filter_shape=(3, 3, 2, 4), padding="same")
        self.norm = layers.BatchNorm(4)
        self.dense = layers.Dense(4, 3)

    def __call__(self, x):
        h = s4tf.relu(self.norm(self.conv(x)))
        return self.dense(h.mean(axis=(1, 2)))


def problem(optimizer="sgd", batch=5):
    s4tf.random.seed(0)
    with s4tf.backend("xla"):
        model = Net()
        x = s4tf.random.normal([batch, 6, 6, 2])
        y = s4tf.random.normal([batch, 3])
    if optimizer == "sgd":
        opt = s4tf.optimizers.SGD(model, learning_rate=0.05, momentum=0.9)
    else:
        opt = s4tf.optimizers.Adam(model, learning_rate=0.01)
    return model, x, y, opt


def train_step_for(opt, counter=None):
    def train_step(model, x, y, learning_rate):
        if counter is not None:
            counter.append(1)
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(model, of=lambda m: ((m(x) - y) ** 2).mean())
        opt.learning_rate = learning_rate
        return opt.update(model, grads), loss

    return train_step


def host(value):
    return [np.array(leaf.numpy()) if isinstance(leaf, s4tf.Tensor) else leaf
            for leaf in s4tf.tree_leaves(value)]


def slots(opt):
    return [np.array(t.numpy()) for state in opt._state for t in state.values()]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def train(optimizer, captured, steps=7, verify_every=3):
    model, x, y, opt = problem(optimizer)
    step = train_step_for(opt)
    if captured:
        step = s4tf.xla.compile(step, verify_every=verify_every)
    losses = []
    for i in range(steps):
        model, loss = step(model, x, y, 0.05 / (1 + i))  # a decayed learning rate
        losses.append(float(loss))
    return losses, host(model), slots(opt), opt.step, step


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_captured_training_equals_uncaptured_training(optimizer):
    # Momentum / Adam slots, the step count (Adam's bias correction), BatchNorm's
    # State cells and a learning rate that changes every call, through replays
    # and two verification runs: the same bits as the uncaptured lazy steps.
    losses, params, opt_slots, step_count, _ = train(optimizer, captured=False)
    c_losses, c_params, c_slots, c_step_count, step = train(optimizer, captured=True)
    assert c_losses == losses and len(set(losses)) == len(losses)
    assert_same(c_params, params)
    assert_same(c_slots, opt_slots)
    assert c_step_count == step_count == 7
    assert step.body_runs == 4  # the capture, the checks at calls 2 and 3, call 6


def test_a_replay_runs_no_python_and_traces_no_op():
    model, x, y, opt = problem()
    counter = []
    step = s4tf.xla.compile(train_step_for(opt, counter), verify_first=0)
    model, loss = step(model, x, y, 0.1)
    float(loss)
    traced = s4tf.xla.metrics()["traced_ops"]
    assert len(counter) == 1 and traced > 50
    for i in range(4):
        model, loss = step(model, x, y, 0.1 / (2 + i))
    float(loss)
    metrics = s4tf.xla.metrics()
    assert len(counter) == 1  # the body did not run again
    assert metrics["traced_ops"] == traced  # nothing was recorded
    assert metrics["replays"] == 4 and step.calls == 5 and opt.step == 5


def test_float_arguments_are_parameters_with_the_right_numbers():
    step = s4tf.xla.compile(lambda x, scale, shift: x * scale + shift, verify_first=0)
    x = s4tf.Tensor([1.0, 2.0]).to("xla")
    results = [step(x, scale, shift).tolist() for scale, shift in ((2.0, 0.5), (3.0, -1.0),
                                                                  (0.1, 0.2))]
    assert results == [[2.5, 4.5], [2.0, 5.0],
                       (np.float32([1.0, 2.0]) * np.float32(0.1) + np.float32(0.2)).tolist()]
    # At most one compile for three values (none when an earlier test in this process
    # compiled the same program: the in-process cache then answers).
    assert step.body_runs == 1 and s4tf.xla.metrics()["compiles"] <= 1


def test_arithmetic_on_float_arguments_is_redone_on_replay():
    def step(x, lr):
        return x * (1 - lr * 0.5) ** 2

    captured = s4tf.xla.compile(step, verify_first=0)
    x = s4tf.Tensor([4.0]).to("xla")
    for lr in (0.1, 0.3, 0.7):
        assert captured(x, lr).tolist() == step(x, lr).tolist()
    assert captured.body_runs == 1


def test_a_python_decision_on_a_float_makes_it_part_of_the_signature():
    def step(x, lr):
        return x * 2 if lr > 0.5 else x - lr

    captured = s4tf.xla.compile(step, verify_first=0)
    x = s4tf.Tensor([1.0]).to("xla")
    for lr in (0.1, 0.9, 0.1, 0.2, 0.9):
        assert captured(x, lr).tolist() == step(x, lr).tolist()
    # 0.1 and 0.9 each captured once and replayed; 0.2 is a new value to decide on.
    assert captured.body_runs == 3


def test_ints_are_static():
    counter = []

    def step(x, n):
        counter.append(n)
        return x * n

    captured = s4tf.xla.compile(step, verify_first=0)
    x = s4tf.ones([2]).to("xla")
    assert [captured(x, n).tolist() for n in (2, 3, 2, 3)] == [[2.0] * 2, [3.0] * 2] * 2
    assert counter == [2, 3]


@pytest.mark.parametrize("change", ["shape", "dtype", "structure"])
def test_other_inputs_run_the_body_not_a_wrong_replay(change):
    counter = []

    def step(xs):
        counter.append(1)
        return [x.sum() * 2 for x in xs]

    captured = s4tf.xla.compile(step, verify_first=0)
    with s4tf.backend("xla"):
        first = [s4tf.ones([3])]
        other = {"shape": [s4tf.ones([4])],
                 "dtype": [s4tf.ones([3], dtype=s4tf.float64)],
                 "structure": [s4tf.ones([3]), s4tf.ones([3])]}[change]
    assert [t.tolist() for t in captured(first)] == [6.0]
    expected = [t.tolist() for t in step(other)]
    assert [t.tolist() for t in captured(other)] == expected
    assert len(counter) == 3  # captured(first), captured(other), step(other)
    assert [t.tolist() for t in captured(first)] == [6.0]  # the first capture still replays
    assert [t.dtype for t in captured(other)] == [t.dtype for t in step(other)]
    assert len(counter) == 4


@pytest.mark.parametrize("captured", [False, True])
def test_an_alias_kept_by_the_caller_keeps_its_numbers(captured):
    model, x, y, opt = problem()
    step = train_step_for(opt)
    if captured:
        step = s4tf.xla.compile(step)
    model, _ = step(model, x, y, 0.1)  # the capture
    old = model
    before = host(old)
    model, _ = step(model, x, y, 0.1)  # a replay, while `old` holds the model passed in
    model, _ = step(model, x, y, 0.1)
    s4tf.barrier()
    after = host(old)
    # BatchNorm's statistics are State cells, updated in place in the model passed
    # in (as uncaptured); every parameter keeps its old numbers.
    changed = [not np.array_equal(a, b) for a, b in zip(before, after, strict=True)]
    statistics = [isinstance(leaf, s4tf.Tensor) and leaf.shape == (4,) and i >= 2
                  for i, leaf in enumerate(s4tf.tree_leaves(old))]
    assert changed == [s and c for s, c in zip(statistics, changed, strict=True)]
    assert any(changed)
    assert old.dense.weight.shape == (4, 3)  # not consumed: still usable


def test_state_cells_of_the_argument_are_updated_like_uncaptured():
    def run(captured):
        model, x, y, opt = problem()
        step = train_step_for(opt)
        if captured:
            step = s4tf.xla.compile(step)
        passed = []
        for _ in range(3):
            passed.append(model)
            model, _ = step(model, x, y, 0.1)
        return [host(m.norm.running_mean) + host(m.norm.running_variance) for m in passed]

    assert_same(sum(run(True), []), sum(run(False), []))


def test_verification_warns_when_python_takes_another_path():
    flags = {"double": False}

    def step(x):
        y = x + 1
        return y * 2 if flags["double"] else y

    captured = s4tf.xla.compile(step, verify_every=3, verify_first=0)
    x = s4tf.ones([2]).to("xla")
    assert captured(x).tolist() == [2.0, 2.0]
    flags["double"] = True
    assert captured(x).tolist() == [2.0, 2.0]  # a replay cannot see the flag...
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match=r"another path.*ops changed.*mul"):
        assert captured(x).tolist() == [4.0, 4.0]  # ...the verification (call 3) does
    assert captured(x).tolist() == [4.0, 4.0]  # and the new trace is replayed
    assert captured.body_runs == 2


def test_verification_of_an_unchanged_trace_is_silent():
    step = s4tf.xla.compile(lambda x, lr: x * lr, verify_every=2)
    x = s4tf.ones([2]).to("xla")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [step(x, float(i)).tolist() for i in range(1, 6)][-1] == [5.0, 5.0]
    assert step.body_runs == 4  # the capture, the checks at calls 2 and 3, call 4


def test_a_number_the_capture_cannot_follow_is_found_by_verification():
    def step(x, lr):
        return x * math.sqrt(lr)  # math functions do not keep the number followed

    captured = s4tf.xla.compile(step, verify_every=2)
    x = s4tf.ones([1]).to("xla")
    assert captured(x, 4.0).tolist() == [2.0]
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="a number"):
        assert captured(x, 9.0).tolist() == [3.0]  # call 2 verifies
    assert captured(x, 16.0).tolist() == [4.0]  # from now on: the body runs every call
    assert captured.body_runs == 3


def test_numpy_conversion_of_a_float_argument_makes_it_static():
    def step(x, lr):
        return x * s4tf.Tensor(np.float32(lr)).to("xla")

    captured = s4tf.xla.compile(step, verify_first=0)
    x = s4tf.ones([1]).to("xla")
    assert [captured(x, lr).tolist() for lr in (2.0, 3.0, 2.0)] == [[2.0], [3.0], [2.0]]
    assert captured.body_runs == 2


def test_random_draws_are_drawn_again_on_replay():
    def step(x):
        keep = s4tf.random.uniform(x.shape) < 0.5  # a dropout mask
        return s4tf.where(keep, x * 2, s4tf.zeros_like(x))

    def run(fn):
        s4tf.random.seed(3)
        with s4tf.backend("xla"):
            x = s4tf.ones([64])
            return [fn(x).tolist() for _ in range(4)], s4tf.random.get_state()

    captured = s4tf.xla.compile(step, verify_first=0)
    assert run(captured) == run(step)
    assert captured.body_runs == 1
    masks = run(captured)[0]
    assert masks[0] != masks[1]


def test_replacing_a_tensor_the_step_reads_from_outside_captures_again():
    scale = {"value": s4tf.Tensor([2.0, 2.0]).to("xla")}
    captured = s4tf.xla.compile(lambda x: x * scale["value"], verify_first=0)
    x = s4tf.ones([2]).to("xla")
    assert captured(x).tolist() == [2.0, 2.0]
    assert captured(x).tolist() == [2.0, 2.0]
    scale["value"] = s4tf.Tensor([5.0, 5.0]).to("xla")
    assert captured(x).tolist() == [5.0, 5.0]
    assert captured.body_runs == 2


def test_reading_a_value_inside_the_step_is_refused_with_the_fix():
    def step(x):
        if float(x.sum()) > 0:
            return x
        return -x

    captured = s4tf.xla.compile(step)
    with pytest.raises(RuntimeError, match=r"read a tensor's value.*read it after the call"):
        captured(s4tf.ones([2]).to("xla"))


def test_an_input_on_another_backend_is_refused_with_the_fix():
    captured = s4tf.xla.compile(lambda x: x * 2)
    with pytest.raises(TypeError, match=r"naive tensor.*s4tf.backend\(\"xla\"\).*\.to\(\"xla\"\)"):
        captured(s4tf.ones([2]))


@pytest.mark.parametrize("result, message", [
    (lambda x: np.ones(2), "returned a ndarray"),
    (lambda x: s4tf.ones([2], dtype=s4tf.float32).to("naive"), "on the naive backend"),
    (lambda x: (x, object()), "returned a object"),
])
def test_results_a_replay_cannot_carry_are_refused(result, message):
    captured = s4tf.xla.compile(result)
    with pytest.raises(TypeError, match=message):
        captured(s4tf.ones([2]).to("xla"))


@pytest.mark.parametrize("verify_every", [0, -3, 2.5, True, "10", None])
def test_verify_every_must_be_a_positive_int(verify_every):
    with pytest.raises(ValueError, match="verify_every must be an int >= 1"):
        s4tf.xla.compile(lambda x: x, verify_every=verify_every)


def test_decorator_forms_and_results_of_every_kind():
    @s4tf.xla.compile(verify_every=4, verify_first=0)
    def step(x, lr):
        return {"y": x * lr, "lr": lr * 2, "n": 3, "none": None, "pair": (x, lr)}

    x = s4tf.ones([2]).to("xla")
    for lr in (1.0, 2.0):
        out = step(x, lr)
        assert out["y"].tolist() == [lr, lr] and out["lr"] == 2 * lr and out["n"] == 3
        assert out["none"] is None and out["pair"][0] is x and out["pair"][1] == lr
        assert type(out["lr"]) is float  # not the recording's number type
    assert step.body_runs == 1 and step.__name__ == "step"


def test_a_step_that_keeps_capturing_says_why():
    captured = s4tf.xla.compile(lambda x, n: x * n)
    x = s4tf.ones([1]).to("xla")
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="ran its Python body.*differ"):
        for n in range(12):
            captured(x, n)


def test_a_captured_step_inside_another_is_part_of_its_trace():
    inner = s4tf.xla.compile(lambda x: x * 3, verify_first=0)
    outer = s4tf.xla.compile(lambda x: inner(x) + 1, verify_first=0)
    x = s4tf.ones([2]).to("xla")
    assert [outer(x).tolist() for _ in range(3)] == [[4.0, 4.0]] * 3
    assert outer.body_runs == 1 and inner.calls == 0


def test_old_optimizer_slots_are_donated_on_replay():
    model, x, y, opt = problem()
    step = s4tf.xla.compile(train_step_for(opt))
    model, _ = step(model, x, y, 0.1)
    s4tf.xla.reset_metrics()
    model, loss = step(model, x, y, 0.1)
    float(loss)
    metrics = s4tf.xla.metrics()
    # SGD's velocity slots are dropped after the step: XLA reuses their buffers.
    assert metrics["donated_buffers"] == len(slots(opt)) and metrics["compiles"] == 0


OPTIMIZERS = {
    "sgd_nesterov": lambda m: s4tf.optimizers.SGD(m, learning_rate=0.05, momentum=0.9,
                                                  nesterov=True, decay=0.01),
    "adamw": lambda m: s4tf.optimizers.AdamW(m, learning_rate=0.01, decay=0.05),
    "amsgrad": lambda m: s4tf.optimizers.AMSGrad(m, learning_rate=0.01),
    "radam": lambda m: s4tf.optimizers.RAdam(m, learning_rate=0.01),  # rectifies from step 6
    "adamax": lambda m: s4tf.optimizers.AdaMax(m),
    "rmsprop": lambda m: s4tf.optimizers.RMSProp(m, decay=0.1),
    "adagrad": lambda m: s4tf.optimizers.AdaGrad(m, learning_rate=0.05),
    "adadelta": lambda m: s4tf.optimizers.AdaDelta(m),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_with_a_schedule_set_outside_the_step(name):
    schedule = s4tf.optimizers.schedules.ExponentialDecay(0.05, decay_rate=0.5, decay_steps=3)

    def run(captured):
        model, x, y, _ = problem()
        opt = OPTIMIZERS[name](model)

        def step(model):
            with s4tf.training():
                loss, grads = s4tf.value_with_gradient(model, of=lambda m: ((m(x) - y) ** 2).mean())
            return opt.update(model, grads), loss

        if captured:
            step = s4tf.xla.compile(step, verify_every=4, verify_first=0)
        losses = []
        for i in range(1, 9):
            opt.learning_rate = schedule(i)  # read when the step is called
            model, loss = step(model)
            losses.append(float(loss))
        return losses, host(model), slots(opt), opt.step, step

    losses, params, opt_slots, count, _ = run(captured=False)
    c_losses, c_params, c_slots, c_count, step = run(captured=True)
    assert c_losses == losses and c_count == count == 8
    assert_same(c_params, params)
    assert_same(c_slots, opt_slots)
    # The capture and the verifications at calls 4 and 8; RAdam captures once more when
    # it starts rectifying (a value its rule decides on).
    assert step.body_runs == (4 if name == "radam" else 3)


def test_an_optimizer_setting_the_rule_decides_on_captures_again():
    def run(captured):
        model, x, y, opt = problem()  # SGD with momentum 0.9: a velocity slot

        def step(model):
            with s4tf.training():
                loss, grads = s4tf.value_with_gradient(model, of=lambda m: ((m(x) - y) ** 2).mean())
            return opt.update(model, grads), loss

        if captured:
            step = s4tf.xla.compile(step, verify_first=0)
        losses = []
        for momentum in (0.9, 0.9, 0.0, 0.0, 0.5):
            opt.momentum = momentum  # 0 means no velocity slot at all
            model, loss = step(model)
            losses.append(float(loss))  # one step per graph, as the captured steps run
        return host(model), losses, step

    params, loss, _ = run(False)
    c_params, c_loss, step = run(True)
    assert c_loss == loss
    assert_same(c_params, params)
    assert step.body_runs == 3


def test_unhashable_static_arguments_are_compared_by_identity():
    counter = []

    def step(x, table):
        counter.append(1)
        return x * float(table.sum())

    captured = s4tf.xla.compile(step, verify_first=0)
    x, table = s4tf.ones([2]).to("xla"), np.array([1.0, 2.0])
    assert [captured(x, table).tolist() for _ in range(3)] == [[3.0, 3.0]] * 3
    assert captured(x, np.array([1.0, 4.0])).tolist() == [5.0, 5.0]
    assert len(counter) == 2


def test_keyword_arguments_and_a_step_that_computes_nothing():
    captured = s4tf.xla.compile(lambda x, *, scale=1.0, keep=None: (x * scale, keep), verify_first=0)
    x = s4tf.ones([2]).to("xla")
    assert captured(x, scale=2.0, keep="a")[0].tolist() == [2.0, 2.0]
    assert captured(x, scale=3.0, keep="a")[0].tolist() == [3.0, 3.0]
    assert captured.body_runs == 1
    same = s4tf.xla.compile(lambda x: x, verify_first=0)
    assert same(x) is x and same(x) is x and same.body_runs == 1


def test_a_step_whose_optimizer_is_replaced_captures_again():
    model, x, y, opt = problem()
    holder = {"opt": opt}

    def step(model):
        loss, grads = s4tf.value_with_gradient(model, of=lambda m: ((m(x) - y) ** 2).mean())
        return holder["opt"].update(model, grads)

    captured = s4tf.xla.compile(step, verify_first=0)
    with s4tf.inference():
        model = captured(captured(model))
        holder["opt"] = fresh = s4tf.optimizers.SGD(model, learning_rate=0.5)
        del opt
        model = captured(model)
    assert fresh.step == 1 and captured.body_runs == 2


def test_a_nan_constant_of_the_program_is_not_a_change():
    step = s4tf.xla.compile(lambda x, lr: s4tf.where(x > 0, x * lr, x * float("nan")),
                            verify_every=2)
    x = s4tf.ones([2]).to("xla")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [step(x, float(i)).tolist() for i in (1, 2, 3, 4)][-1] == [4.0, 4.0]
    assert step.body_runs == 4  # the capture, the checks at calls 2 and 3, call 4


DATA_PARALLEL = """
import numpy as np, s4tf
from s4tf import distributed, layers, optimizers

rng = np.random.default_rng(0)
data = [(rng.normal(size=(32, 12)).astype(np.float32),
         rng.integers(0, 5, size=32).astype(np.int32)) for _ in range(5)]

def run(captured):
    strategy = distributed.DataParallel()
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        model = strategy.replicate(layers.Sequential(
            layers.Dense(12, 16), layers.BatchNorm(16), layers.Dense(16, 5)))
        opt = optimizers.Adam(model, learning_rate=0.01)

        def step(model, x, y):
            with s4tf.training():
                loss, g = s4tf.value_with_gradient(
                    model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
            return opt.update(model, g), loss

        if captured:
            step = s4tf.xla.compile(step, verify_first=0)
        losses = []
        for x, y in data:
            model, loss = step(model, *strategy.shard((s4tf.Tensor(x), s4tf.Tensor(y))))
            losses.append(float(loss))
        leaves = [t for t in s4tf.tree_leaves(model) if isinstance(t, s4tf.Tensor)]
        assert all(t.devices == strategy.devices for t in leaves)  # still replicated
        return losses, [t.numpy() for t in leaves], step

losses, params, _ = run(False)
c_losses, c_params, step = run(True)
assert c_losses == losses, (c_losses, losses)
assert all(np.array_equal(a, b) for a, b in zip(c_params, params))
# The first call makes Adam's slots on one device, the second sees them replicated.
assert step.body_runs == 2, step
assert s4tf.xla.metrics()["devices"] == 8 and s4tf.xla.metrics()["replays"] == 3
print("ok")
"""


def test_data_parallel_steps_replay_on_eight_devices():
    root = pathlib.Path(__file__).resolve().parents[2]
    environment = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
                       PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", DATA_PARALLEL], capture_output=True,
                            text=True, env=environment, timeout=600)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_a_verification_names_a_changed_dtype():
    settings = {"dtype": s4tf.float32}
    captured = s4tf.xla.compile(lambda x: x.astype(settings["dtype"]) * 2, verify_every=2)
    # float16 in: both traces cast (a cast to the dtype a value has records no node).
    x = s4tf.ones([2], dtype=s4tf.float16).to("xla")
    assert captured(x).dtype == s4tf.float32
    settings["dtype"] = s4tf.float64
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match=r"cast\(dtype=.*float32.*became "
                                                             r"cast\(dtype=.*float64"):
        assert captured(x).dtype == s4tf.float64


def test_replays_reuse_host_buffers_only_for_the_same_bits(monkeypatch):
    # A replay whose numbers did not change converts none of its host values again;
    # a float with other bits (only the sign of a zero) is converted, never stale.
    from s4tf.backends.xla import capture as program_module

    converted = []
    real = program_module.device_buffers

    def counting(values):
        converted.append(len(values))
        return real(values)

    monkeypatch.setattr(program_module, "device_buffers", counting)
    step = s4tf.xla.compile(lambda x, scale: x * scale, verify_first=0)
    x = s4tf.Tensor([1.0, 2.0]).to("xla")
    step(x, 2.0)  # the capture (its barrier is not a replay)
    scales = (2.0, 2.0, 0.0, -0.0, -0.0, 0.0)
    results = [np.asarray(step(x, scale)) for scale in scales]
    assert step.body_runs == 1
    assert converted == [1, 0, 1, 1, 0, 1]  # only where the bits changed
    for scale, result in zip(scales, results, strict=True):
        assert result.tolist() == [scale, 2 * scale]
        assert np.signbit(result).all() == (math.copysign(1.0, scale) < 0)
