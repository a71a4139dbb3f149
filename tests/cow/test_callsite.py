"""The call-site reader: which call shapes may consume the model they pass.

Run on every CPython here (tools/run_on_pythons.py): the bytecode differs per
version (LOAD_METHOD, PRECALL, KW_NAMES, CALL_KW, LOAD_FAST_LOAD_FAST, ...).
"""

import sys

import pytest

from s4tf.cow import bytecode, callsite


class Recorder:
    """Stand-ins for the entry points that record the call site's verdict."""

    def __init__(self):
        self.seen = []

    def update(self, model, grads=None, *, consume=True):
        self.seen.append(callsite.verdict(sys._getframe(1).f_code, sys._getframe(1).f_lasti,
                                          callsite.UPDATE))
        return model


class Model:
    seen = []

    def moved(self, along=None, *, consume=True):
        Model.seen.append(callsite.verdict(sys._getframe(1).f_code, sys._getframe(1).f_lasti,
                                           callsite.MOVED_METHOD))
        return self


def moved(value, along=None, *, consume=True):
    Model.seen.append(callsite.verdict(sys._getframe(1).f_code, sys._getframe(1).f_lasti,
                                       callsite.MOVED))
    return value


class Namespace:
    pass


CONSUME = [
    "model = opt.update(model, g)",
    "new = opt.update(model, g)",
    "opt.update(model, g)",
    "m = opt.update(model=model, grads=g)",
    "m = opt.update(model, g, consume=True)",
    "self.model = opt.update(self.model, g)",
    "self.model = self.opt.update(self.model, g)",
    "self.model = opt.update(model=self.model, grads=g)",
    "models[i] = opt.update(models[i], g)",
    "models[0] = opt.update(models[0], g)",
    "table['m'] = opt.update(table['m'], g)",
    "self.models[i] = opt.update(self.models[i], g)",
    "m = opt.update(make(), g)",
    "model = model.moved(along=g)",
    "model = model.moved(g)",
    "self.model = self.model.moved(g)",
    "models[0] = models[0].moved(along=g)",
    "m = s4tf.moved(model, along=g)",
    "m = moved(model, g)",
    "models[0] = moved(models[0], g)",
]
COPY = [
    "m = opt.update(models[0], g)",
    "m = opt.update(table['m'], g)",
    "m = opt.update(self.model, g)",
    "models[1] = opt.update(models[0], g)",
    "other.model = opt.update(self.model, g)",
    "m = opt.update(model=models[0], grads=g)",
    "m = opt.update(grads=g, model=models[0])",
    "m = opt.update(models[0], g, consume=True)",
    "models[i + 0] = opt.update(models[i + 0], g)",
    "m = opt.update(models[0] if g else model, g)",
    "up = opt.update\nm = up(model, g)",
    "m = Recorder.update(opt, model, g)",
    "m = opt.update(*[model, g])",
    "a = b = opt.update(models[0], g)",
    "x = [opt.update(models[0], g)]",
    "models[i], x = opt.update(models[i], g), 1",
    "m = models[0].moved(g)",
    "m = models[0].moved(along=g)",
    "m = self.model.moved(g)",
    "m = Model.moved(models[0], g)",
    "m = s4tf.moved(models[0], along=g)",
    "m = moved(models[0], g)",
]
SET_UP = ("model = Model(); models = [Model(), Model()]; table = {'m': Model()}; "
          "self = Namespace(); self.model = Model(); self.opt = opt; self.models = models; "
          "other = Namespace()\n")


def verdict_of(statement, scope):
    opt = Recorder()
    Model.seen.clear()
    names = {"opt": opt, "Model": Model, "Recorder": Recorder, "moved": moved, "g": 1, "i": 0,
             "make": Model, "Namespace": Namespace, "s4tf": Namespace()}
    names["s4tf"].moved = moved
    code = SET_UP + statement
    if scope == "function":
        body = "\n".join("    " + line for line in code.splitlines())
        exec(f"def probe():\n{body}\nprobe()", names)
    else:
        exec(code, names)
    seen = opt.seen + Model.seen
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("scope", ["function", "module"])
@pytest.mark.parametrize("statement", CONSUME)
def test_names_temporaries_and_stores_back_into_the_same_place_may_consume(statement, scope):
    assert verdict_of(statement, scope).consume


@pytest.mark.parametrize("scope", ["function", "module"])
@pytest.mark.parametrize("statement", COPY)
def test_items_and_attributes_kept_by_their_holder_and_unknown_shapes_copy(statement, scope):
    assert not verdict_of(statement, scope).consume


def test_the_verdict_names_how_the_model_was_passed():
    assert "models[0]" in verdict_of("m = opt.update(models[0], g)", "function").passed
    assert "'model'" in verdict_of("model = opt.update(model, g)", "function").passed


def test_bytecode_the_reader_cannot_read_copies(monkeypatch):
    def broken(*args):
        raise ValueError("an instruction from a future interpreter")

    monkeypatch.setattr(callsite, "_read", broken)
    monkeypatch.setattr(callsite, "_cache", {})
    found = verdict_of("model = opt.update(model, g)", "function")
    assert not found.consume and "does not understand" in found.passed


def test_the_verdict_is_cached_per_instruction():
    def site(opt, model):
        return opt.update(model, None)

    opt = Recorder()
    site(opt, Model())
    site(opt, Model())
    assert opt.seen[0] is opt.seen[1]


def test_the_training_loop_hands_its_model_to_the_optimizer_in_a_consuming_shape():
    import dis

    from s4tf.training_loop.loop import TrainingLoop

    code = TrainingLoop._step.__code__  # one training step; the model lives in loop.model
    calls = [ins for ins in dis.get_instructions(code) if ins.opname in bytecode.CALLS]
    passed = [callsite.verdict(code, ins.offset, callsite.UPDATE).passed for ins in calls]
    assert "as self.model, with the result stored back there" in passed
