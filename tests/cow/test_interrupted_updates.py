"""Interrupted and failing updates: never a half-written model, never a half-advanced optimizer."""

import signal
import threading

import numpy as np
import pytest
from aliasing_models import grad_of, make_net, snapshot, storage_ids

import s4tf
from s4tf import optimizers

# Every test here runs on the main thread, where Python delivers SIGINT.
pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signals are delivered to the main thread only")


@pytest.fixture(autouse=True)
def python_handles_sigint():
    # A shell starts background jobs with SIGINT ignored; Ctrl-C here means Python's handler.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def failing(cls, fail_at=1, how="raise"):
    """``cls`` with a rule that fails once, after parameter ``fail_at``, when ``armed``.

    ``how``: "raise" (an exception from the rule) or "interrupt" (a SIGINT, as Ctrl-C).
    """

    class Failing(cls):
        armed = True
        calls = 0

        def update_parameter(self, param, grad, state, constants):
            Failing.calls += 1
            super().update_parameter(param, grad, state, constants)
            if Failing.armed and Failing.calls == fail_at + 1:
                Failing.armed = False
                if how == "raise":
                    raise RuntimeError("the rule failed")
                signal.raise_signal(signal.SIGINT)

    return Failing


def make_optimizer(cls, model):
    if issubclass(cls, optimizers.Adam):
        return cls(model, learning_rate=0.1)
    return cls(model, learning_rate=0.5, momentum=0.9)


def assert_states_equal(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)


def clean_twin(cls, steps):
    """A model and optimizer after ``steps`` clean updates (the reference numbers)."""
    model = make_net()
    opt = make_optimizer(cls, model)
    for _ in range(steps):
        model = opt.update(model, grad_of(model))
    return model, opt


@pytest.mark.parametrize("base", [optimizers.SGD, optimizers.Adam], ids=["sgd-momentum", "adam"])
@pytest.mark.parametrize("how", ["raise", "interrupt"])
def test_a_failed_copying_update_changes_nothing_and_a_retry_gives_one_clean_update(
        base, how, backend):
    models = [make_net()]
    cls = failing(base, fail_at=2, how=how)
    cls.armed = False
    opt = make_optimizer(cls, models[0])
    models[0] = opt.update(models[0], grad_of(models[0]))  # a first step: slots exist
    before, state = snapshot(models[0]), opt.state_dict()
    cls.armed, cls.calls = True, 0
    error = RuntimeError if how == "raise" else KeyboardInterrupt
    with pytest.raises(error):
        m = opt.update(models[0], grad_of(models[0]))  # copies: the list keeps its model
    for got, want in zip(snapshot(models[0]), before, strict=True):
        np.testing.assert_array_equal(got, want)
    assert_states_equal(opt, _with_state(opt, state))
    m = opt.update(models[0], grad_of(models[0]))
    twin, twin_opt = clean_twin(base, 2)
    for got, want in zip(snapshot(m), snapshot(twin), strict=True):
        np.testing.assert_array_equal(got, want)
    assert_states_equal(opt, twin_opt)


def _with_state(opt, state):
    copy = make_optimizer(type(opt), make_net())
    copy.load_state_dict(state)
    return copy


@pytest.mark.parametrize("base", [optimizers.SGD, optimizers.Adam], ids=["sgd-momentum", "adam"])
def test_a_failing_first_update_creates_no_slots_and_keeps_the_step(base, backend):
    model = make_net()
    opt = make_optimizer(failing(base, fail_at=3), model)
    with pytest.raises(RuntimeError):
        opt.update(model, grad_of(model), consume=False)
    assert opt.step == 0
    assert all(slots is None for slots in opt._state)
    model = opt.update(model, grad_of(model))
    twin, twin_opt = clean_twin(base, 1)
    for got, want in zip(snapshot(model), snapshot(twin), strict=True):
        np.testing.assert_array_equal(got, want)
    assert_states_equal(opt, twin_opt)


@pytest.mark.parametrize("base", [optimizers.SGD, optimizers.Adam], ids=["sgd-momentum", "adam"])
def test_ctrl_c_during_an_in_place_update_finishes_it_then_raises(base, backend):
    cls = failing(base, fail_at=1, how="interrupt")
    model = make_net()
    opt = make_optimizer(cls, model)
    ids = storage_ids(model) if backend == "naive" else None
    with pytest.raises(KeyboardInterrupt):
        model = opt.update(model, grad_of(model))
    # Every parameter was updated before the interrupt was raised, and the name
    # the interrupted assignment never rebound holds the finished update.
    assert cls.calls == len(s4tf.tree_leaves(model, differentiable=True))
    assert not s4tf.cow.consumed.is_consumed(model)
    assert ids is None or storage_ids(model) == ids
    twin, twin_opt = clean_twin(base, 1)
    for got, want in zip(snapshot(model), snapshot(twin), strict=True):
        np.testing.assert_array_equal(got, want)
    assert_states_equal(opt, twin_opt)
    model = opt.update(model, grad_of(model))  # and training goes on from there
    assert ids is None or storage_ids(model) == ids


def test_ctrl_c_during_moved_finishes_the_move_then_raises(monkeypatch):
    net = make_net()
    g = grad_of(net)
    want = [x + 1 for x in snapshot(net)]
    tensors = sum(isinstance(x, s4tf.Tensor) for x in s4tf.tree_leaves(net, differentiable=True))
    original = s4tf.Tensor.__add__
    calls = []

    def add(self, other):  # the copying path's leaf rule: leaf + tangent
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)
        return original(self, other)

    monkeypatch.setattr(s4tf.Tensor, "__add__", add)
    models = [net]
    with pytest.raises(KeyboardInterrupt):
        m = models[0].moved(along=g)  # copies: abandoned, models[0] kept
    monkeypatch.setattr(s4tf.Tensor, "__add__", original)
    assert len(calls) == tensors  # the move ran to its end before the interrupt
    m = models[0].moved(along=g)
    for got, expected in zip(snapshot(m), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_the_handler_in_place_before_the_update_is_back_afterwards():
    before = signal.getsignal(signal.SIGINT)
    model = make_net()
    opt = optimizers.SGD(model)
    model = opt.update(model, grad_of(model))
    assert signal.getsignal(signal.SIGINT) is before


def test_a_second_ctrl_c_is_not_held_back():
    from s4tf.cow.interrupts import InterruptsDeferred

    reached = []
    with pytest.raises(KeyboardInterrupt), InterruptsDeferred():
        signal.raise_signal(signal.SIGINT)
        reached.append("first held back")
        signal.raise_signal(signal.SIGINT)
        reached.append("never")
    assert reached == ["first held back"]


def test_updates_off_the_main_thread_run_without_deferring():
    done = []

    def work():
        model = make_net()
        opt = optimizers.SGD(model)
        model = opt.update(model, grad_of(model))
        done.append(model.first.w.shape)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert done == [(3, 2)]


@pytest.mark.parametrize("holder", ["name", "list"])
def test_a_users_own_sigint_handler_runs_once_and_the_update_stands(holder):
    seen = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    cls = failing(optimizers.SGD, fail_at=1, how="interrupt")
    model = make_net()
    opt = cls(model, learning_rate=0.5, momentum=0.9)
    if holder == "name":
        model = opt.update(model, grad_of(model))
    else:
        models = [model]
        model = opt.update(models[0], grad_of(models[0]))
    assert seen == [signal.SIGINT]
    twin, twin_opt = clean_twin(optimizers.SGD, 1)
    for got, want in zip(snapshot(model), snapshot(twin), strict=True):
        np.testing.assert_array_equal(got, want)
    assert_states_equal(opt, twin_opt)
