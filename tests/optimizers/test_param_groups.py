"""trainable= and param_groups= on every optimizer: frozen parameters untouched, groups' settings."""

import warnings

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers

pytestmark = pytest.mark.usefixtures("backend")


class Net(s4tf.Layer):
    body: layers.Dense
    head: layers.Dense

    def __call__(self, x):
        return self.head(self.body(x))


def make_net():
    s4tf.random.seed(0)
    return Net(layers.Dense(3, 4), layers.Dense(4, 2))


def gradient_of(model):
    x = s4tf.Tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    return s4tf.value_with_gradient(model, of=lambda m: (m(x) ** 2).sum())[1]


def arrays(model):
    return {path: leaf.numpy().copy() for path, leaf in
            zip(s4tf.tree.tree_leaf_paths(model, True), s4tf.tree_leaves(model, True), strict=True)}


@pytest.mark.parametrize("trainable", [["head"], ["head."], lambda path: path.startswith("head")])
def test_frozen_parameters_get_no_update_no_weight_decay_and_no_slots(trainable):
    model = make_net()
    opt = optimizers.AdamW(model, learning_rate=0.1, weight_decay=0.5, trainable=trainable)
    before = arrays(model)
    for _ in range(2):
        model = opt.update(model, gradient_of(model))
    after = arrays(model)
    for path in ("body.weight", "body.bias"):
        np.testing.assert_array_equal(after[path], before[path])  # AdamW would decay them
    for path in ("head.weight", "head.bias"):
        assert not np.allclose(after[path], before[path])
    slots = sorted(k for k in opt.state_dict() if k.startswith("slot."))
    assert slots == ["slot.first_moments.head.bias", "slot.first_moments.head.weight",
                     "slot.second_moments.head.bias", "slot.second_moments.head.weight"]
    assert [opt.slots(i) is None for i in range(4)] == [True, True, False, False]


def test_trained_parameters_match_an_optimizer_of_the_head_alone():
    model = make_net()
    head = model.head
    opt = optimizers.Adam(model, learning_rate=0.05, trainable=["head"])
    alone = optimizers.Adam(head, learning_rate=0.05)
    for _ in range(3):
        grads = gradient_of(model)
        head = alone.update(head, grads.head, consume=False)
        model = opt.update(model, grads, consume=False)
    np.testing.assert_allclose(model.head.weight.numpy(), head.weight.numpy(), rtol=1e-6)


def test_an_unshared_model_is_still_updated_in_place(backend):
    model = make_net()
    opt = optimizers.SGD(model, learning_rate=0.1, trainable=["head"])
    body, head_storage = model.body.weight, id(model.head.weight._data)
    grads = gradient_of(model)
    model = opt.update(model, grads)
    assert model.body.weight is body  # frozen: handed back as it was, on every backend
    if model.head.weight._backend.supports_inplace:  # xla records new values, jax's are immutable
        assert id(model.head.weight._data) == head_storage


def test_param_groups_give_their_parameters_their_own_settings():
    model = make_net()
    grads = gradient_of(model)
    opt = optimizers.SGD(model, learning_rate=0.0,
                         param_groups=[{"params": "head.", "learning_rate": 1.0}])
    before = arrays(model)
    model = opt.update(model, grads)
    after = arrays(model)
    np.testing.assert_array_equal(after["body.weight"], before["body.weight"])
    np.testing.assert_allclose(after["head.bias"], before["head.bias"] - grads.head.bias.numpy(),
                               rtol=1e-6)
    # A rule reading an attribute (AdamW's weight_decay) sees its group's value too.
    model = make_net()
    opt = optimizers.AdamW(model, learning_rate=0.1, weight_decay=0.0,
                           param_groups=[{"params": ["body"], "weight_decay": 0.5}])
    zero = Net.TangentVector(body=None, head=None)
    before = arrays(model)
    after = arrays(opt.update(model, zero))
    np.testing.assert_allclose(after["body.weight"], before["body.weight"] * (1 - 0.1 * 0.5),
                               rtol=1e-6)
    np.testing.assert_array_equal(after["head.weight"], before["head.weight"])


def test_groups_take_schedules_and_are_saved_and_restored():
    model = make_net()
    opt = optimizers.SGD(model, learning_rate=0.1,
                         param_groups=[{"params": "head", "learning_rate": 0.01}])
    model = opt.update(model, gradient_of(model))
    state = opt.state_dict()
    assert state["group.0.learning_rate"] == 0.01
    opt.param_groups[0]["learning_rate"] = 0.5
    opt.load_state_dict(state)
    assert opt.param_groups[0]["learning_rate"] == 0.01
    warm = optimizers.schedules.LinearWarmup(1.0, warmup_steps=4)
    opt = optimizers.SGD(model, learning_rate=0.0,
                         param_groups=[{"params": "head.bias", "learning_rate": warm}])
    grads = Net.TangentVector(body=None, head=layers.Dense.TangentVector(
        weight=None, bias=s4tf.ones([2])))
    before = model.head.bias.numpy().copy()
    model = opt.update(model, grads)
    np.testing.assert_allclose(model.head.bias.numpy(), before - 0.25, rtol=1e-6)


def test_selections_that_cannot_be_meant_are_refused():
    model = make_net()
    with pytest.raises(ValueError, match=r"trainable names 'haed'.*start with: body, head"):
        optimizers.SGD(model, trainable=["haed"])
    with pytest.raises(ValueError, match="selects none of the model's 4 parameters"):
        optimizers.SGD(model, trainable=lambda path: False)
    with pytest.raises(TypeError, match="must return a bool"):
        optimizers.SGD(model, trainable=lambda path: "yes")
    with pytest.raises(ValueError, match=r"'head.bias' is in param_groups\[0\] and param_groups\[1\]"):
        optimizers.SGD(model, param_groups=[{"params": "head"}, {"params": "head.bias"}])
    with pytest.raises(ValueError, match="sets 'lr', which is not one of its hyperparameters"):
        optimizers.SGD(model, param_groups=[{"params": "head", "lr": 0.1}])
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['learning_rate'\] must be >= 0"):
        optimizers.SGD(model, param_groups=[{"params": "head", "learning_rate": -1.0}])
    with pytest.raises(TypeError, match="a dict with a 'params' entry"):
        optimizers.SGD(model, param_groups=[{"learning_rate": 0.1}])


def test_one_layer_object_in_two_fields_warns_naming_both_paths_and_the_fix():
    dense = layers.Dense(2, 2)
    with pytest.warns(s4tf.UntiedParameterWarning, match=r"both 'body' and 'head'.*s4tf.tie"):
        optimizers.SGD(Net(dense, dense))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizers.SGD(make_net())  # distinct layers: no warning

