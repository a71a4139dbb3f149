"""Gradient validation, state_dict round trips, schedules and clipping."""

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import s4tf
from s4tf import optimizers
from s4tf.optimizers import schedules


class Line(s4tf.Differentiable):
    w: s4tf.Tensor
    b: float


def line():
    return Line(s4tf.Tensor([1.0, 2.0]), 0.5)


def test_bad_gradients_are_rejected_before_any_write():
    model = line()
    opt = optimizers.Adam(model)
    before = np.array(model.w)
    with pytest.raises(ValueError, match=r"'w' has shape \(3,\)"):
        opt.update(model, Line.TangentVector(w=s4tf.ones([3]), b=1.0))
    with pytest.raises(TypeError, match="dtype float64"):
        opt.update(model, Line.TangentVector(w=s4tf.ones([2], dtype=s4tf.float64), b=1.0))
    with pytest.raises(TypeError, match="Line.TangentVector"):
        opt.update(model, [s4tf.ones([2])])
    np.testing.assert_array_equal(np.array(model.w), before)  # still usable, unchanged
    assert opt.step == 0


def test_a_model_of_another_structure_is_rejected():
    opt = optimizers.SGD(line())
    with pytest.raises(ValueError, match="made for a model with 2 parameters"):
        opt.update([s4tf.ones([2])], [s4tf.ones([2])])


def test_zero_gradients_none_fields():
    model = line()
    model = optimizers.SGD(model, learning_rate=1.0).update(model, Line.TangentVector(w=None, b=1.0))
    assert model.w.tolist() == [1.0, 2.0] and model.b == -0.5


def test_state_dict_round_trip_through_safetensors(tmp_path):
    rng = np.random.default_rng(0)
    grads = [Line.TangentVector(w=s4tf.Tensor(rng.normal(size=2).astype(np.float32)),
                                b=float(rng.normal())) for _ in range(4)]
    a = line()
    opt_a = optimizers.Adam(a, learning_rate=0.1)
    for g in grads[:2]:
        a = opt_a.update(a, g)
    save_file(opt_a.state_dict(), str(tmp_path / "opt.safetensors"))
    b = s4tf.replace(a, w=s4tf.Tensor(a.w))
    opt_b = optimizers.Adam(b, learning_rate=0.5)
    opt_b.load_state_dict(load_file(str(tmp_path / "opt.safetensors")))
    assert opt_b.step == 2 and opt_b.learning_rate == pytest.approx(0.1)
    for g in grads[2:]:
        a, b = opt_a.update(a, g), opt_b.update(b, g)
    np.testing.assert_array_equal(np.array(a.w), np.array(b.w))
    assert a.b == b.b


def test_load_state_dict_names_missing_and_unexpected_keys():
    opt = optimizers.SGD(line(), momentum=0.9)
    state = opt.state_dict()
    del state["slot.velocity.w"]
    state["slot.other.w"] = np.zeros(2)
    with pytest.raises(KeyError, match=r"missing: \['slot.velocity.w'\].*unexpected: \['slot.other.w'\]"):
        opt.load_state_dict(state)


def test_optimizer_keeps_no_reference_to_the_model():
    model = line()
    opt = optimizers.Adam(model)
    held = [v for v in vars(opt).values() if v is model or v is model.w]
    assert not held
    import sys
    before = sys.getrefcount(model.w)
    optimizers.Adam(model)
    after = sys.getrefcount(model.w)  # outside the assert: pytest's rewriting holds temporaries
    assert after == before


def test_hyperparameters_are_checked():
    with pytest.raises(ValueError, match="learning_rate must be >= 0"):
        optimizers.SGD(line(), learning_rate=-1.0)
    with pytest.raises(ValueError, match="beta1 must be between 0 and 1"):
        optimizers.Adam(line(), beta1=1.5)


def test_schedules():
    assert [schedules.StepDecay(1.0, 2, 0.5)(s) for s in (1, 2, 4)] == [1.0, 0.5, 0.25]
    assert schedules.ExponentialDecay(1.0, 0.5, 10, staircase=True)(15) == 0.5
    assert schedules.CosineDecay(2.0, 10, alpha=0.1)(10) == pytest.approx(0.2)
    warm = schedules.LinearWarmup(schedules.CosineDecay(1.0, 10), warmup_steps=5)
    assert warm(0) == 0.0 and warm(5) == pytest.approx(schedules.CosineDecay(1.0, 10)(5))
    with pytest.raises(ValueError, match="step_size must be > 0"):
        schedules.StepDecay(1.0, 0)


def test_clip_by_global_norm():
    grads = Line.TangentVector(w=s4tf.Tensor([3.0, 0.0]), b=4.0)
    clipped = optimizers.clip_by_global_norm(grads, max_norm=2.5)
    assert optimizers.global_norm(clipped) == pytest.approx(2.5, rel=1e-6)
    assert clipped.b == pytest.approx(2.0)
    assert optimizers.clip_by_global_norm(grads, max_norm=10.0) is grads


@pytest.mark.filterwarnings("ignore::s4tf.optimizers.CopiedUpdateWarning")  # a list model, on purpose
def test_sgd_without_momentum_keeps_no_velocity_until_momentum_is_set():
    model = [s4tf.Tensor([1.0, 2.0])]
    opt = optimizers.SGD(model, learning_rate=0.5)
    model = opt.update(model, [s4tf.Tensor([1.0, 1.0])])
    assert not [k for k in opt.state_dict() if k.startswith("slot.")]
    assert model[0].tolist() == [0.5, 1.5]
    opt.momentum = 0.5
    model = opt.update(model, [s4tf.Tensor([1.0, 1.0])])  # velocity starts at zero
    model = opt.update(model, [s4tf.Tensor([1.0, 1.0])])  # v = 0.5 * -0.5 - 0.5 = -0.75
    assert model[0].tolist() == [-0.75, 0.25]
    assert opt.state_dict()["slot.velocity.0"].tolist() == [-0.75, -0.75]


def test_gradients_of_the_wrong_container_kind_are_rejected_not_treated_as_zero():
    model = [s4tf.Tensor([1.0, 2.0])]
    opt = optimizers.SGD(model)
    with pytest.raises(TypeError, match=r"SGD.update: the gradients of this list .* got dict\)"):
        opt.update(model, {"a": s4tf.ones([2])})
    with pytest.raises(TypeError, match="must be a dict"):
        optimizers.SGD({"w": s4tf.ones([2])}).update({"w": s4tf.ones([2])}, [s4tf.ones([2])])
    assert model[0].tolist() == [1.0, 2.0]  # nothing was consumed or written


# Issue 10, item 6: non-numeric hyperparameters fail at construction, naming the argument
# (one check in the optimizer base, over each class's `hyperparameters`).
OPTIMIZER_CLASSES = [getattr(optimizers, name) for name in optimizers.__all__
                     if isinstance(getattr(optimizers, name), type)
                     and issubclass(getattr(optimizers, name), optimizers.Optimizer)
                     and name not in ("Optimizer", "Optax")]  # Optax's settings are optax's


def _hyperparameter_cases():
    for cls in OPTIMIZER_CLASSES:
        for name in cls.hyperparameters:
            for bad in ("0.1", None, True, [0.1], s4tf.Tensor([0.1, 0.2])):
                yield pytest.param(cls, name, bad, id=f"{cls.__name__}-{name}-{type(bad).__name__}")


@pytest.mark.parametrize("cls, name, bad", list(_hyperparameter_cases()))
def test_non_numeric_hyperparameters_are_refused_at_construction(cls, name, bad):
    assert len(OPTIMIZER_CLASSES) == 9
    with pytest.raises(TypeError, match=rf"{cls.__name__}: {name} must be a number, got"):
        cls([s4tf.ones([2])], **{name: bad})


def test_a_numeric_string_hyperparameter_error_shows_the_fix():
    with pytest.raises(TypeError, match=r"learning_rate must be a number, got '0.1' \(a str\)\. "
                                        r"Pass learning_rate=0.1\."):
        optimizers.SGD([s4tf.ones([2])], learning_rate="0.1")
    # NumPy numbers are numbers.
    assert optimizers.SGD([s4tf.ones([2])], learning_rate=np.float32(0.5)).learning_rate == 0.5
