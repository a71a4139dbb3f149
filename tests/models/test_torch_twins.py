"""The zoo against hand-written PyTorch twins: logits, every gradient, optimizer steps.

``torch_twins`` writes ResNet (CIFAR), MobileNetV2, DenseNet and GPT-2 in
plain ``torch.nn``, without s4tf. Each test builds a small zoo model, gives its
BatchNorm / LayerNorm parameters and running statistics values away from
their initial ones (so a swapped scale and offset, or a wrong epsilon, shows),
copies every weight into the twin (NHWC / HWIO here, NCHW / OIHW there) and
compares: inference logits on naive and on xla; in the training phase, the
loss, the gradient of every parameter and the running statistics; and two
steps of SGD with momentum and of Adam. Float32 throughout.
"""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch twins need torch "
                                            "(pip install -e '.[reference]')")
import torch_twins  # noqa: E402  (needs torch)
from torch import nn  # noqa: E402

import s4tf  # noqa: E402
from s4tf import layers, models, optimizers  # noqa: E402

# s4tf layer kind -> (the twin's module kind, the axes that take the twin's weight to ours).
_CONVERSIONS = {
    layers.Conv2D: (nn.Conv2d, (2, 3, 1, 0)),           # OIHW -> HWIO
    layers.DepthwiseConv2D: (nn.Conv2d, (2, 3, 0, 1)),  # (C, 1, h, w) -> (h, w, C, 1)
    layers.Dense: (nn.Linear, (1, 0)),                  # (out, in) -> (in, out)
    layers.BatchNorm: (nn.BatchNorm2d, None),
    layers.LayerNorm: (nn.LayerNorm, None),
    layers.Embedding: (nn.Embedding, None),
}


@dataclasses.dataclass
class Case:
    build: typing.Callable           # the zoo model
    twin: typing.Callable            # its torch twin
    input_shape: tuple               # NHWC images, or (batch, length) tokens
    classes: int                     # classes, or the vocabulary


CASES = {
    "resnet": Case(lambda: models.ResNet(depth=8, classes=5, stem="cifar", width=4),
                   lambda: torch_twins.CifarResNet(blocks_per_stage=1, width=4, classes=5),
                   (4, 8, 8, 3), 5),
    # Width 0.5 of a short block table: stem 16, blocks to 8, 16 (twice, the second
    # residual) and 16 channels; the head keeps MobileNetV2's 1280.
    "mobilenet_v2": Case(
        lambda: models.MobileNetV2(width_multiplier=0.5, classes=5, dropout=0.0,
                                   block_settings=((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 1, 2))),
        lambda: torch_twins.MobileNetV2(stem=16, blocks=((1, 8, 1, 1), (6, 16, 2, 2),
                                                         (6, 16, 1, 2)), head=1280, classes=5),
        (4, 16, 16, 3), 5),
    "densenet": Case(
        lambda: models.DenseNet(block_sizes=(2, 2), growth_rate=4, initial_features=8,
                                bottleneck_size=2, classes=5),
        lambda: torch_twins.DenseNet(block_sizes=(2, 2), growth_rate=4, initial_features=8,
                                     bottleneck_size=2, classes=5),
        (4, 16, 16, 3), 5),
    "gpt2": Case(lambda: models.TransformerLM(vocab_size=13, context=8, width=16, depth=2,
                                              heads=4),
                 lambda: torch_twins.GPT2(vocab_size=13, context=8, width=16, depth=2, heads=4),
                 (3, 7), 13),
}


def zoo_layers(value, found):
    """The zoo model's layers of the kinds in ``_CONVERSIONS``, in field order."""
    if type(value) in _CONVERSIONS:
        found.append(value)
    elif isinstance(value, s4tf.Differentiable):
        for name in type(value)._s4tf_all_fields:
            zoo_layers(value.__dict__.get(name), found)
    elif isinstance(value, list | tuple):
        for item in value:
            zoo_layers(item, found)
    return found


def pair_up(model, twin):
    """``(zoo layers, [(twin parameter, axes)] in the order of the model's parameters)``."""
    zoo = zoo_layers(model, [])
    theirs = [m for m in twin.modules() if isinstance(m, tuple(k for k, _ in _CONVERSIONS.values()))]
    assert len(zoo) == len(theirs), (len(zoo), len(theirs))
    parameters = []
    for mine, their in zip(zoo, theirs, strict=True):
        kind, axes = _CONVERSIONS[type(mine)]
        assert isinstance(their, kind), (type(mine).__name__, their)
        if isinstance(mine, layers.BatchNorm | layers.LayerNorm):
            parameters += [(their.bias, None), (their.weight, None)]       # offset, scale
        else:
            parameters.append((their.weight, axes))
            if getattr(their, "bias", None) is not None:
                parameters.append((their.bias, None))
    leaves, _ = s4tf.tree_flatten(model, differentiable=True)
    assert [tuple(leaf.shape) for leaf in leaves] == [
        tuple(p.permute(axes).shape if axes else p.shape) for p, axes in parameters]
    return zoo, parameters


def in_zoo_layout(parameter, axes) -> np.ndarray:
    """A twin's tensor (a parameter or its gradient) in the zoo's layout."""
    array = parameter.detach().numpy()
    return array.transpose(axes) if axes else array


def prepared(name: str):
    """``(zoo model, twin, parameters)``: seeded, varied, the twin holding the model's weights."""
    case = CASES[name]
    s4tf.random.seed(0)
    torch.manual_seed(0)
    model, twin = case.build(), case.twin()
    rng = np.random.default_rng(1)
    leaves, treedef = s4tf.tree_flatten(model, differentiable=True)
    if name == "gpt2":   # the zoo starts at 0.02: larger weights make attention matter
        arrays = [rng.normal(0.0, 0.3, leaf.shape) for leaf in leaves]
    else:                # He-initialised filters; BatchNorm's scales and offsets varied
        arrays = [leaf.numpy() for leaf in leaves]
        index = 0
        for layer in zoo_layers(model, []):
            count = len(s4tf.tree_flatten(layer, differentiable=True)[0])
            if isinstance(layer, layers.BatchNorm):
                arrays[index] = rng.normal(0.0, 0.2, layer.offset.shape)
                arrays[index + 1] = rng.uniform(0.5, 1.5, layer.scale.shape)
            index += count
    model = s4tf.tree_unflatten(treedef, [s4tf.Tensor(a.astype(np.float32)) for a in arrays])
    zoo, parameters = pair_up(model, twin)
    with torch.no_grad():
        for leaf, (parameter, axes) in zip(s4tf.tree_flatten(model, differentiable=True)[0],
                                           parameters, strict=True):
            array = leaf.numpy().transpose(np.argsort(axes)) if axes else leaf.numpy()
            parameter.copy_(torch.tensor(array))
        norms = [m for m in twin.modules() if isinstance(m, nn.BatchNorm2d)]
        for mine, their in zip([layer for layer in zoo if isinstance(layer, layers.BatchNorm)],
                               norms, strict=True):
            mine.running_mean.value = s4tf.Tensor(
                rng.normal(0.0, 0.2, mine.offset.shape).astype(np.float32))
            mine.running_variance.value = s4tf.Tensor(
                rng.uniform(0.5, 1.5, mine.offset.shape).astype(np.float32))
            their.running_mean.copy_(torch.tensor(mine.running_mean.value.numpy()))
            their.running_var.copy_(torch.tensor(mine.running_variance.value.numpy()))
    return model, twin, parameters


def batch(name: str):
    """``(zoo input, twin input, zoo labels, twin labels)``, seeded."""
    case = CASES[name]
    rng = np.random.default_rng(2)
    if name == "gpt2":
        tokens = rng.integers(0, case.classes, size=(case.input_shape[0], case.input_shape[1] + 1))
        inputs, labels = tokens[:, :-1].astype(np.int32), tokens[:, 1:].astype(np.int32)
        return (s4tf.Tensor(inputs), torch.from_numpy(inputs).long(),
                s4tf.Tensor(labels), torch.from_numpy(labels).long())
    images = rng.standard_normal(case.input_shape).astype(np.float32)
    labels = rng.integers(0, case.classes, size=case.input_shape[0]).astype(np.int32)
    return (s4tf.Tensor(images), torch.from_numpy(images.transpose(0, 3, 1, 2).copy()),
            s4tf.Tensor(labels), torch.from_numpy(labels).long())


def zoo_loss(model, x, y):
    return s4tf.softmax_cross_entropy(logits=model(x), labels=y)


def twin_loss(twin, x, y):
    logits = twin(x)
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def twin_logits(twin, x) -> np.ndarray:
    twin.eval()
    with torch.no_grad():
        return twin(x).numpy()


def assert_close(got, want, what: str, rtol: float = 1e-4, scale: float = 0.0):
    """Equal to float32 accuracy: within ``rtol`` of each value, or of the largest of the tensor.

    ``scale``, when larger, is the largest value of the whole model: a gradient that is
    zero in exact arithmetic (a BatchNorm offset another BatchNorm cancels) is rounding
    noise in both frameworks, equal only to the precision of the others.
    """
    want = np.asarray(want)
    atol = rtol * max(np.abs(want).max(), scale, 1e-6)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def assert_running_statistics_agree(model, twin):
    norms = [m for m in twin.modules() if isinstance(m, nn.BatchNorm2d)]
    zoo = [layer for layer in zoo_layers(model, []) if isinstance(layer, layers.BatchNorm)]
    for i, (mine, their) in enumerate(zip(zoo, norms, strict=True)):
        assert_close(mine.running_mean.value.numpy(), their.running_mean.numpy(), f"mean {i}")
        assert_close(mine.running_variance.value.numpy(), their.running_var.numpy(),
                     f"variance {i}")


@pytest.mark.parametrize("name", CASES)
def test_inference_logits_match_the_twin(name):
    model, twin, _ = prepared(name)
    x, twin_x, _, _ = batch(name)
    assert_close(model(x).numpy(), twin_logits(twin, twin_x), "logits")


@pytest.mark.parametrize("name", CASES)
def test_inference_logits_match_the_twin_on_xla(name):
    pytest.importorskip("jax", reason="the xla backend needs jax (pip install -e '.[xla]')")
    model, twin, _ = prepared(name)
    x, twin_x, _, _ = batch(name)
    lazy = s4tf.to_backend(model, "xla")
    with s4tf.backend("xla"):
        logits = lazy(s4tf.Tensor(x.numpy())).numpy()
    assert_close(logits, twin_logits(twin, twin_x), "logits on xla")


@pytest.mark.parametrize("name", CASES)
def test_training_loss_gradients_and_running_statistics_match_the_twin(name):
    model, twin, parameters = prepared(name)
    x, twin_x, y, twin_y = batch(name)
    with s4tf.training():
        loss, grads = s4tf.value_with_gradient(model, of=lambda m: zoo_loss(m, x, y))
    twin.train()
    expected = twin_loss(twin, twin_x, twin_y)
    expected.backward()
    assert_close(float(loss.numpy()), expected.item(), "loss")
    leaves = s4tf.tree_leaves(grads)
    assert len(leaves) == len(parameters)
    scale = max(np.abs(p.grad.numpy()).max() for p, _ in parameters)
    for i, (grad, (parameter, axes)) in enumerate(zip(leaves, parameters, strict=True)):
        assert_close(grad.numpy(), in_zoo_layout(parameter.grad, axes), f"gradient {i} {grad.shape}",
                     scale=1e-2 * scale)
    assert_running_statistics_agree(model, twin)


# (zoo optimizer, twin optimizer, the twin's epsilon at step t or None, noise floor). S4TF's
# Adam adds epsilon outside the bias correction: lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v)
# + eps); torch divides by sqrt(v) / sqrt(1 - b2^t) + eps', equal when eps' = eps /
# sqrt(1 - b2^t). An epsilon of 1e-4 is comparable to sqrt(v) at the first steps, so its
# placement shows. Adam scales a rounding-noise gradient (one that is zero in exact
# arithmetic) up towards the size of every other step, so its changes are compared to
# the precision of the largest one; SGD's to 1 % of it.
OPTIMIZERS = {
    "sgd_momentum": (lambda m: optimizers.SGD(m, learning_rate=0.1, momentum=0.9),
                     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), None, 1e-2),
    "adam": (lambda m: optimizers.Adam(m, learning_rate=0.01, epsilon=1e-4),
             lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-4),
             lambda t: 1e-4 / np.sqrt(1 - 0.999 ** t), 1.0),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("name", CASES)
def test_two_optimizer_steps_match_the_twin(name, optimizer):
    make_ours, make_theirs, twin_epsilon, noise_floor = OPTIMIZERS[optimizer]
    model, twin, parameters = prepared(name)
    x, twin_x, y, twin_y = batch(name)
    before = [leaf.numpy().copy() for leaf in s4tf.tree_flatten(model, differentiable=True)[0]]
    opt, twin_opt = make_ours(model), make_theirs(twin.parameters())
    twin.train()
    for step in (1, 2):   # the second step uses the momentum / moments of the first
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(model, of=lambda m: zoo_loss(m, x, y))
        model = opt.update(model, grads)
        twin_opt.zero_grad()
        expected = twin_loss(twin, twin_x, twin_y)
        expected.backward()
        if twin_epsilon is not None:
            twin_opt.param_groups[0]["eps"] = twin_epsilon(step)
        twin_opt.step()
        assert_close(float(loss.numpy()), expected.item(), f"loss before step {step}")
    after = s4tf.tree_flatten(model, differentiable=True)[0]
    theirs = [in_zoo_layout(parameter, axes) - old
              for old, (parameter, axes) in zip(before, parameters, strict=True)]
    scale = max(np.abs(change).max() for change in theirs)
    for i, (old, new, change) in enumerate(zip(before, after, theirs, strict=True)):
        assert_close(new.numpy() - old, change, f"parameter {i}'s change", rtol=5e-4,
                     scale=noise_floor * scale)
    assert_running_statistics_agree(model, twin)
