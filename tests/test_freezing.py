"""s4tf.freeze / unfreeze: frozen parameters are constants to differentiation and optimizers."""

import io

import numpy as np
import pytest

import s4tf
from s4tf import layers, optimizers


class Net(s4tf.Layer):
    backbone: layers.Sequential
    head: layers.Dense

    def __call__(self, x):
        return self.head(self.backbone(x))


def make_net():
    s4tf.random.seed(0)
    return Net(layers.Sequential(layers.Dense(3, 4, activation=s4tf.relu), layers.BatchNorm(4)),
               layers.Dense(4, 2))


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def loss(model):
    with s4tf.inference():
        return (model(s4tf.Tensor(X)) ** 2).mean()


@pytest.mark.usefixtures("backend")
def test_a_frozen_backbone_is_a_constant_that_optimizers_never_write():
    model = s4tf.freeze(make_net(), "backbone")
    assert s4tf.frozen_paths(model) == ["backbone.layers"]
    _, grads = s4tf.value_with_gradient(model, of=loss)
    assert grads.backbone.layers is None  # not computed at all
    full = s4tf.value_with_gradient(s4tf.unfreeze(model), of=loss)[1]
    np.testing.assert_allclose(grads.head.weight.numpy(), full.head.weight.numpy(), rtol=1e-5)
    opt = optimizers.AdamW(model, learning_rate=0.1, weight_decay=0.5)
    weight = model.backbone.layers[0].weight.numpy().copy()
    model = opt.update(model, grads)
    np.testing.assert_array_equal(model.backbone.layers[0].weight.numpy(), weight)
    assert sorted({key.split(".")[2] for key in opt.state_dict() if key.startswith("slot.")}) == [
        "head"]
    assert isinstance(model.backbone, layers.Sequential)  # the mark survives the update
    with pytest.raises(ValueError, match="also after s4tf.freeze or s4tf.unfreeze"):
        opt.update(s4tf.unfreeze(model), full, consume=False)
    assert s4tf.frozen_paths(model) == ["backbone.layers"]


def test_parameter_count_and_summary_count_frozen_parameters_as_non_trainable():
    model = make_net()
    assert s4tf.parameter_count(model) == 16 + 8 + 10
    frozen = s4tf.freeze(model, "backbone.layers.0", "head.bias")
    assert s4tf.parameter_count(frozen) == 8 + 8
    out = io.StringIO()
    s4tf.summary(frozen, (1, 3), file=out)
    text = out.getvalue()
    assert "Trainable parameters: 16" in text and "Non-trainable parameters: 26" in text
    assert "Total parameters: 42" in text
    assert s4tf.frozen_paths(frozen) == ["backbone.layers.0.weight", "backbone.layers.0.bias",
                                         "head.bias"]


def test_the_mark_survives_rebuilds_save_and_load_and_unfreeze_undoes_it(tmp_path):
    frozen = s4tf.freeze(make_net(), "head")
    assert s4tf.frozen_paths(s4tf.replace(frozen, backbone=frozen.backbone)) == [
        "head.weight", "head.bias"]
    assert s4tf.frozen_paths(s4tf.tree.at(frozen, "head.bias", s4tf.ones([2]))) == [
        "head.weight", "head.bias"]
    assert s4tf.frozen_paths(s4tf.to_backend(frozen, "cupy")) == ["head.weight", "head.bias"]
    moved = frozen.moved(along=s4tf.value_with_gradient(frozen, of=loss)[1], consume=False)
    assert s4tf.frozen_paths(moved) == ["head.weight", "head.bias"]
    path = tmp_path / "frozen.safetensors"
    s4tf.save(frozen, path)
    assert s4tf.frozen_paths(s4tf.load(path)) == ["head.weight", "head.bias"]
    plain = s4tf.load(path, like=make_net())  # same keys: the unfrozen model loads the weights
    assert s4tf.frozen_paths(plain) == []
    np.testing.assert_array_equal(plain.head.weight.numpy(), frozen.head.weight.numpy())
    thawed = s4tf.unfreeze(frozen)
    assert type(thawed.head) is layers.Dense and s4tf.parameter_count(thawed) == 34
    assert s4tf.frozen_paths(s4tf.unfreeze(frozen, "head.bias")) == ["head.weight"]
    # Unfreezing a part of what was frozen whole keeps the rest frozen.
    partly = s4tf.unfreeze(s4tf.freeze(make_net()), "backbone.layers.0")
    assert s4tf.parameter_count(partly) == 16
    assert sorted(s4tf.frozen_paths(partly)) == ["backbone.layers.1.offset",
                                                 "backbone.layers.1.scale", "head"]


def test_freezing_what_cannot_be_frozen_is_refused_by_name():
    model = make_net()
    with pytest.raises(KeyError, match="backbone has no 'body'"):
        s4tf.freeze(model, "backbone.body")
    with pytest.raises(KeyError, match="has no 'haed'"):
        s4tf.unfreeze(model, "haed")
    holder = Holder([s4tf.ones([2])])
    with pytest.raises(ValueError, match=r"'weights.0' is a parameter inside a list.*"
                                         r"freeze the layer that holds it \('weights'\)"):
        s4tf.freeze(holder, "weights.0")
    assert s4tf.parameter_count(s4tf.freeze(holder, "weights")) == 0
    with pytest.raises(TypeError, match="takes a model"):
        s4tf.freeze([1.0], "0")


class Holder(s4tf.Differentiable):
    weights: list
