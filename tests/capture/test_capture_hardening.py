"""Captured steps never give silently stale numbers: mutated arguments are refused, and the
calls right after a capture check it (``s4tf.xla.compile``, ``s4tf/capture/mutation.py``)."""

from __future__ import annotations

import dataclasses
import random
import warnings

import numpy as np
import pytest

import s4tf
from s4tf import layers

pytest.importorskip("jax")


@pytest.fixture(autouse=True)
def fresh_state():
    s4tf.barrier()
    s4tf.xla.reset_metrics()
    state = s4tf.random.get_state()
    yield
    s4tf.random.set_state(state)


def ones(*shape):
    with s4tf.backend("xla"):
        return s4tf.ones(list(shape))


class Box:
    """A plain Python object (not frozen)."""

    def __init__(self, value):
        self.value = value


@dataclasses.dataclass
class Settings:
    """A dataclass that is not frozen."""

    scale: float
    history: list


def set_item(d, x):
    d["x"] = d["x"] + x
    return d["x"]


def set_attribute(obj, x):
    obj.value = obj.value + x
    return obj.value


def append(lst, x):
    lst.append(x)
    return x * len(lst)


def replace_item(lst, x):
    lst[0] = lst[0] + x
    return lst[0]


def nested_dict_in_list(batches, x):
    batches[1]["seen"] = batches[1]["seen"] + 1
    return x * 2


def dataclass_setattr(settings, x):
    settings.scale = settings.scale * 2
    return x * 3


def add_key(d, x):
    d["count"] = 1
    return x + 1


def delete_key(d, x):
    del d["old"]
    return x + 1


ATTACKS = {
    # The attacks: an item, an attribute, an append, a list item.
    "set_item": (set_item, lambda x: {"x": x}, "argument 'd': key 'x' was replaced"),
    "set_attribute": (set_attribute, lambda x: Box(x),
                      "argument 'obj': attribute 'value' was set to a new value"),
    "append": (append, lambda x: [], "argument 'lst': it grew from 0 to 1 items"),
    "replace_item": (replace_item, lambda x: [x], "argument 'lst': item 0 was replaced"),
    # And a few more.
    "nested_dict_in_list": (nested_dict_in_list, lambda x: [{"seen": 0}, {"seen": 0}],
                            "argument 'batches', item 1: key 'seen' was replaced"),
    "dataclass_setattr": (dataclass_setattr, lambda x: Settings(1.0, []),
                          "argument 'settings': attribute 'scale' was set to a new value"),
    "add_key": (add_key, lambda x: {}, "argument 'd': key 'count' was added"),
    "delete_key": (delete_key, lambda x: {"old": 1}, "argument 'd': key 'old' was removed"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_body_that_changes_an_argument_in_place_is_refused_naming_it(attack):
    fn, make, where = ATTACKS[attack]
    x = ones(2)
    step = s4tf.xla.compile(fn)
    message = f"{fn.__name__} changed its {where.replace(':', ' in place:')}"
    for _ in range(2):  # refused on every call: nothing is captured
        with pytest.raises(s4tf.xla.CaptureError) as error:
            step(make(x), x)
        assert message in str(error.value)
        assert "Return the new value" in str(error.value)
    assert step.body_runs == 2 and s4tf.xla.metrics()["replays"] == 0


def test_the_error_names_keyword_and_star_arguments_and_self():
    x = ones(2)
    step = s4tf.xla.compile(lambda x, *rest, log: log.append(1) or x)
    with pytest.raises(s4tf.xla.CaptureError, match="argument 'log' in place: it grew"):
        step(x, log=[])
    step = s4tf.xla.compile(lambda x, *rest: rest[1].update(a=x) or x)
    with pytest.raises(s4tf.xla.CaptureError, match=r"argument 'rest\[1\]' in place: key 'a' was added"):
        step(x, 1, {})

    class Trainer:
        def __init__(self):
            self.calls = 0

        @s4tf.xla.compile
        def step(self, x):
            self.calls += 1
            return x * 2

    with pytest.raises(s4tf.xla.CaptureError, match="argument 'self' in place: attribute 'calls'"):
        Trainer().step(x)


def test_what_a_step_may_change_is_not_refused_and_stays_bit_exact():
    # Optimizer slots and step count, BatchNorm's State cells, a dropout mask from
    # s4tf.random, an optimizer setting the body assigns, in a model held by a plain
    # object and a dict: all carried by the capture, none refused.
    class Holder:
        def __init__(self, opt):
            self.opt = opt
            self.loss_fn = lambda out, y: ((out - y) ** 2).mean()

    def run(captured):
        s4tf.random.seed(0)
        with s4tf.backend("xla"):
            model = layers.Sequential(layers.Dense(6, 8), layers.BatchNorm(8),
                                      layers.Dropout(0.3), layers.Dense(8, 2))
            x, y = s4tf.random.normal([16, 6]), s4tf.random.normal([16, 2])
        holder = Holder(s4tf.optimizers.Adam(model, learning_rate=0.01))

        def train_step(model, batch, holder, lr):
            with s4tf.training():
                loss, grads = s4tf.value_with_gradient(
                    model, of=lambda m: holder.loss_fn(m(batch["x"]), batch["y"]))
            holder.opt.learning_rate = lr
            return holder.opt.update(model, grads), loss

        step = s4tf.xla.compile(train_step) if captured else train_step
        losses, batch = [], {"x": x, "y": y}
        for i in range(6):
            model, loss = step(model, batch, holder, 0.01 / (1 + i))
            losses.append(float(loss))
        leaves = [np.array(t.numpy()) for t in s4tf.tree_leaves(model)
                  if isinstance(t, s4tf.Tensor)]
        return losses, leaves, holder.opt.step, s4tf.random.get_state(), step

    losses, leaves, steps, stream, _ = run(False)
    c_losses, c_leaves, c_steps, c_stream, step = run(True)
    assert c_losses == losses and len(set(losses)) == len(losses)
    for a, b in zip(c_leaves, leaves, strict=True):
        np.testing.assert_array_equal(a, b)
    assert c_steps == steps == 6 and c_stream == stream
    # The capture and its checks on calls 2 and 3 ran the body; calls 4-6 replayed.
    assert step.body_runs == 3 and s4tf.xla.metrics()["replays"] == 3


@pytest.mark.parametrize("changes_at", [2, 3])
def test_a_number_made_with_str_is_found_by_call_3(changes_at):
    def step(x, lr):
        return x * len(str(lr))

    # len(str(lr)): 3 until the call `changes_at`, then other lengths.
    rates = [0.1, 0.2, 0.3][: changes_at - 1] + [0.25, 0.125, 0.5, 0.0625, 0.3]
    captured = s4tf.xla.compile(step)
    x = ones(1)
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="a number"):
        results = [captured(x, lr).tolist() for lr in rates]
    assert results == [step(x, lr).tolist() for lr in rates]


def test_a_python_random_draw_is_found_by_call_2():
    def step(x):
        return x + random.random()

    def run(fn):
        random.seed(0)
        return [fn(x).tolist() for _ in range(5)]

    x = ones(1)
    captured = s4tf.xla.compile(step)
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="a number"):
        results = run(captured)
    assert results == run(step) and len({r[0] for r in results}) == 5


def test_a_global_counter_in_the_numbers_is_found_by_call_2():
    counter = {"n": 0}

    def step(x):
        counter["n"] += 1  # a global: not an argument, so not refused
        return x * counter["n"]

    captured = s4tf.xla.compile(step)
    x = ones(1)
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="a number"):
        assert [captured(x).tolist() for _ in range(4)] == [[1.0], [2.0], [3.0], [4.0]]


def test_a_flag_read_from_a_global_is_found_by_the_first_checks():
    flags = {"double": False}

    def step(x):
        return x * 2 if flags["double"] else x

    captured = s4tf.xla.compile(step)
    x = ones(2)
    assert captured(x).tolist() == [1.0, 1.0]
    flags["double"] = True
    with pytest.warns(s4tf.xla.CaptureMismatchWarning, match="another path"):
        assert captured(x).tolist() == [2.0, 2.0]  # call 2 checks: the new path
    # The new path is a new capture: checked on its own next two calls, then replayed.
    assert [captured(x).tolist() for _ in range(3)] == [[2.0, 2.0]] * 3
    assert captured.body_runs == 4 and s4tf.xla.metrics()["replays"] == 1


def test_checks_after_each_capture_then_every_verify_every():
    counter = []

    def step(x, n):
        counter.append(n)
        return x * n

    captured = s4tf.xla.compile(step, verify_every=6)
    x = ones(2)
    for n in (2, 2, 2, 2, 2, 3, 3, 3, 3):
        assert captured(x, n).tolist() == [float(n)] * 2
    # n=2: its capture, calls 2 and 3; call 6 (every 6th) is n=3's capture; n=3: calls 7, 8.
    assert counter == [2, 2, 2, 3, 3, 3]
    unchecked = s4tf.xla.compile(step, verify_first=0)
    counter.clear()
    for _ in range(4):
        unchecked(x, 2)
    assert counter == [2]


@pytest.mark.parametrize("verify_first", [-1, 1.5, True, "2", None])
def test_verify_first_must_be_a_non_negative_int(verify_first):
    with pytest.raises(ValueError, match="verify_first must be an int >= 0"):
        s4tf.xla.compile(lambda x: x, verify_first=verify_first)


def test_what_the_check_leaves_alone():
    # Private attributes of objects inside an argument (a cache), a cached_property
    # filling itself in, a frozen dataclass: not changes of what the step computes.
    import functools

    class Helper:
        def __init__(self):
            self._cache = {}

        def scale(self, n):
            self._cache[n] = n
            return n

    class Config:
        def __init__(self):
            self.helper = Helper()

        @functools.cached_property
        def factor(self):
            return 3

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        items: list

    def step(x, config, frozen):
        return x * config.helper.scale(2) * config.factor * len(frozen.items)

    captured = s4tf.xla.compile(step)
    x = ones(2)
    assert captured(x, Config(), Frozen([1])).tolist() == [6.0, 6.0]
    # ...but what a frozen dataclass holds is looked at.
    with pytest.raises(s4tf.xla.CaptureError, match="argument 'frozen', attribute 'items' in "
                                                    "place: it grew from 0 to 1 items"):
        s4tf.xla.compile(lambda x, frozen: frozen.items.append(1) or x)(x, Frozen([]))


def test_small_numpy_arguments_written_in_place_are_refused():
    def step(x, table):
        table[0] = table[0] + 1
        return x * float(table[0])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(s4tf.xla.CaptureError, match="argument 'table' in place: its "
                                                        "contents were written"):
            s4tf.xla.compile(step)(ones(1), np.zeros(3))


@pytest.mark.parametrize("kind", ["dict", "list"])
def test_an_argument_that_contains_itself_is_refused_by_name(kind):
    cyclic = {"scale": 2.0} if kind == "dict" else [2.0]
    if kind == "dict":
        cyclic["self"] = cyclic
    else:
        cyclic.append(cyclic)

    @s4tf.xla.compile
    def step(x, extra):
        return x * 2.0

    with pytest.raises(TypeError, match=f"holds a {kind} that contains itself"):
        step(ones(2), cyclic)


def test_a_value_shared_twice_without_a_cycle_still_captures():
    shared = {"scale": 3.0}

    @s4tf.xla.compile
    def step(x, pair):
        return x * pair[0]["scale"] + pair[1]["scale"]

    for _ in range(3):
        out = step(ones(2), (shared, shared))
    np.testing.assert_allclose(np.asarray(out), [6.0, 6.0])
