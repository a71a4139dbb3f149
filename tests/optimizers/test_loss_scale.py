"""LossScale (dynamic loss scaling), low-precision optimizer constants, and mixed precision training."""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers

pytestmark = [pytest.mark.filterwarnings("ignore::s4tf.xla.RecompilationWarning"),
              # the poisoned gradients (inf * 0 inside the backward pass)
              pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")]

HAVE_JAX = importlib.util.find_spec("jax") is not None
BACKENDS = ["naive"] + (["xla"] if HAVE_JAX else [])


@pytest.fixture(params=BACKENDS)
def on(request):
    previous = s4tf.get_backend()
    s4tf.set_backend(request.param)
    yield request.param
    s4tf.barrier()
    s4tf.set_backend(previous)


def _model():
    s4tf.random.seed(0)
    return layers.Dense(3, 2)


X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10


def _grads(model, opt, poison=False):
    x = s4tf.Tensor(X)

    def loss(m):
        out = m(x).sum()
        return opt.scale_loss(out * math.inf if poison else out)

    return s4tf.gradient(model, of=loss)


def _numbers(model):
    return [np.array(t.numpy(), copy=True) for t in (model.weight, model.bias)]


def test_finite_step_matches_the_unscaled_update(on):
    plain_model, scaled_model = _model(), _model()
    plain = optimizers.Adam(plain_model, learning_rate=0.1)
    scaled = optimizers.LossScale(optimizers.Adam(scaled_model, learning_rate=0.1), initial=2.0**10)
    x = s4tf.Tensor(X)
    for _ in range(3):
        plain_model = plain.update(plain_model, s4tf.gradient(plain_model, of=lambda m: m(x).sum()))
        scaled_model = scaled.update(scaled_model, _grads(scaled_model, scaled))
    for a, b in zip(_numbers(plain_model), _numbers(scaled_model), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert scaled.step == 3 and scaled.skipped == 0 and scaled.scale == 2.0**10


def test_skipped_step_leaves_model_and_slots_untouched(on):
    model = _model()
    opt = optimizers.LossScale(optimizers.Adam(model, learning_rate=0.1), initial=2.0**8)
    model = opt.update(model, _grads(model, opt))  # slots exist now
    before = _numbers(model)
    slots = {k: np.array(v, copy=True) for k, v in opt.state_dict().items()}
    grads = _grads(model, opt, poison=True)
    kept = model
    model = opt.update(model, grads)
    assert model is kept  # nothing written, nothing consumed
    for a, b in zip(before, _numbers(model), strict=True):
        np.testing.assert_array_equal(a, b)
    after = opt.state_dict()
    for key, value in slots.items():
        if key.startswith("slot.") or key == "step":
            np.testing.assert_array_equal(value, after[key], err_msg=key)
    assert opt.step == 1 and opt.skipped == 1 and opt.scale == 2.0**7
    # The next finite step is applied as usual.
    model = opt.update(model, _grads(model, opt))
    assert opt.step == 2
    assert not np.array_equal(before[0], _numbers(model)[0])


def test_dynamic_scale_grows_after_the_interval(on):
    model = _model()
    opt = optimizers.LossScale(optimizers.SGD(model, learning_rate=0.01), initial=4.0,
                               growth_interval=2)
    for expected in (4.0, 8.0, 8.0, 16.0):
        model = opt.update(model, _grads(model, opt))
        assert opt.scale == expected
    static = optimizers.LossScale(optimizers.SGD(model, learning_rate=0.01), initial=4.0,
                                  dynamic=False)
    model = static.update(model, _grads(model, static, poison=True))
    assert static.scale == 4.0 and static.skipped == 1


def test_update_is_in_place_when_the_caller_alone_holds_the_model():
    s4tf.set_backend("naive")
    model = _model()
    opt = optimizers.LossScale(optimizers.SGD(model, learning_rate=0.1))
    grads = _grads(model, opt)
    weight = model.weight
    address = weight.numpy().__array_interface__["data"][0]
    del weight
    model = opt.update(model, grads)
    assert model.weight.numpy().__array_interface__["data"][0] == address
    old = model
    new = opt.update(model, _grads(model, opt))  # `old` still sees it: copied, old unchanged
    assert new is not old and sys.getrefcount(old) > 1
    assert not np.array_equal(old.weight.numpy(), new.weight.numpy())


def test_rejects_bad_arguments():
    with pytest.raises(TypeError, match="wraps an s4tf optimizer"):
        optimizers.LossScale("adam")
    with pytest.raises(ValueError, match="initial must be a positive"):
        optimizers.LossScale(optimizers.SGD([s4tf.ones([1])]), initial=0)


def test_state_dict_round_trip():
    opt = optimizers.LossScale(optimizers.SGD([s4tf.ones([1])], momentum=0.9), initial=64.0)
    opt.update([s4tf.ones([1])], [s4tf.Tensor([math.nan])], consume=False)
    saved = opt.state_dict()
    other = optimizers.LossScale(optimizers.SGD([s4tf.ones([1])], momentum=0.9))
    other.load_state_dict(saved)
    assert (other.scale, other.skipped) == (32.0, 1)


@pytest.mark.parametrize("rule", [optimizers.Adam, optimizers.AdamW, optimizers.AMSGrad,
                                  optimizers.RMSProp, optimizers.AdaGrad, optimizers.AdaMax,
                                  optimizers.RAdam, optimizers.AdaDelta])
def test_float16_parameters_stay_finite_with_small_gradients(on, rule):
    """epsilon 1e-8 rounds to 0 in float16 and g*g underflows: the step must stay finite."""
    model = layers.Dense(3, 2, dtype=s4tf.float16)
    opt = rule(model)
    grads = type(model).TangentVector(weight=s4tf.full([3, 2], 1e-4).astype(s4tf.float16),
                                      bias=s4tf.zeros([2]).astype(s4tf.float16))
    with np.errstate(divide="raise", invalid="raise"):  # naive: 1/0 or 0/0 raises
        for _ in range(3):
            model = opt.update(model, grads)
    for t in (model.weight, model.bias):
        assert np.isfinite(np.asarray(t.numpy(), np.float32)).all(), rule.__name__


@pytest.mark.parametrize("name", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_training_keeps_float32_master_weights(on, name):
    if name == "mixed_bfloat16":
        pytest.importorskip("ml_dtypes")  # NumPy's bfloat16 (comes with JAX)
    s4tf.random.seed(0)
    model = layers.Sequential(layers.Dense(3, 8, activation=s4tf.relu), layers.Dense(8, 2))
    inner = optimizers.Adam(model, learning_rate=0.05)
    opt = optimizers.LossScale(inner) if name == "mixed_float16" else inner
    x, y = s4tf.Tensor(X), s4tf.Tensor(np.array([0, 0, 1, 1], np.int32))
    losses = []
    with s4tf.precision.policy(name):
        for _ in range(30):
            def objective(m):
                logits = m(x)
                assert logits.dtype == name.removeprefix("mixed_")
                loss = s4tf.softmax_cross_entropy(logits=logits, labels=y)
                losses.append(s4tf.without_derivative(loss))
                return opt.scale_loss(loss) if opt is not inner else loss

            grads = s4tf.gradient(model, of=objective)
            assert grads.layers[0].weight.dtype == s4tf.float32
            model = opt.update(model, grads)
    assert model.layers[0].weight.dtype == s4tf.float32
    assert inner.slots(0)["first_moments"].dtype == s4tf.float32
    assert losses[0].dtype == s4tf.float32  # losses compute in float32
    assert float(losses[-1]) < 0.5 * float(losses[0])
