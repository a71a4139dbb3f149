"""s4tf.models.load_torchvision: torchvision state_dicts (safetensors) into ResNet, VGG, DenseNet."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file
from zoo_checks import import_torchvision

import s4tf
from s4tf.models import VGG, DenseNet, ResNet, load_torchvision

RNG = np.random.default_rng(0)


def _random(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _bn(prefix, channels):
    return {f"{prefix}.weight": _random(channels), f"{prefix}.bias": _random(channels),
            f"{prefix}.running_mean": _random(channels),
            f"{prefix}.running_var": RNG.uniform(0.5, 1.5, channels).astype(np.float32),
            f"{prefix}.num_batches_tracked": np.array(7, dtype=np.int64)}


def tiny_vgg11_state_dict(width=1, hidden=4, classes=3):
    """Keys and shapes of torchvision's vgg11 at 1/64 of the width, written out by hand.

    torchvision's ``features`` interleave Conv2d (weight OIHW, bias) and ReLU, with
    a MaxPool2d after stages: indices 0, 3, 6, 8, 11, 13, 16, 18 are convolutions.
    ``classifier`` is Linear(512*7*7, 4096), ReLU, Dropout, Linear, ReLU, Dropout, Linear.
    """
    convs = {0: (3, 1), 3: (1, 2), 6: (2, 4), 8: (4, 4), 11: (4, 8), 13: (8, 8), 16: (8, 8),
             18: (8, 8)}
    state = {}
    for index, (cin, cout) in convs.items():
        state[f"features.{index}.weight"] = _random(cout * width, cin if index == 0 else cin * width, 3, 3)
        state[f"features.{index}.bias"] = _random(cout * width)
    features = 8 * width
    for index, (fin, fout) in {0: (features * 49, hidden), 3: (hidden, hidden), 6: (hidden, classes)}.items():
        state[f"classifier.{index}.weight"] = _random(fout, fin)
        state[f"classifier.{index}.bias"] = _random(fout)
    return state


def test_vgg_keys_map_to_fields_with_pytorch_layouts_converted(tmp_path):
    state = tiny_vgg11_state_dict()
    save_file(state, tmp_path / "vgg11.safetensors")
    model = load_torchvision(VGG(depth=11, width=1, hidden=4, classes=3), tmp_path / "vgg11.safetensors")
    torch_conv = state["features.11.weight"]  # the sixth convolution: s4tf features[7]
    np.testing.assert_array_equal(model.features[7].filter.numpy(), torch_conv.transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(model.features[7].bias.numpy(), state["features.11.bias"])
    np.testing.assert_array_equal(model.fc3.weight.numpy(), state["classifier.6.weight"].T)
    # classifier.0 reads torch.flatten of (channels=8, 7, 7); fc1 reads NHWC's (7, 7, channels).
    torch_fc1, fc1 = state["classifier.0.weight"], model.fc1.weight.numpy()
    for h, w, c, o in [(0, 0, 0, 0), (3, 5, 2, 1), (6, 6, 7, 3), (1, 0, 4, 2)]:
        assert fc1[(h * 7 + w) * 8 + c, o] == torch_fc1[o, c * 49 + h * 7 + w]


def test_resnet_keys_include_projections_and_batchnorm_statistics(tmp_path):
    model = ResNet(depth=18, width=2, classes=3)
    state = {"conv1.weight": _random(2, 3, 7, 7), **_bn("bn1", 2),
             "fc.weight": _random(3, 16), "fc.bias": _random(3)}
    channels = 2
    for stage, width in enumerate([2, 4, 8, 16]):
        for i in range(2):
            prefix = f"layer{stage + 1}.{i}"
            state[f"{prefix}.conv1.weight"] = _random(width, channels, 3, 3)
            state[f"{prefix}.conv2.weight"] = _random(width, width, 3, 3)
            state.update(_bn(f"{prefix}.bn1", width) | _bn(f"{prefix}.bn2", width))
            if stage > 0 and i == 0:
                state[f"{prefix}.downsample.0.weight"] = _random(width, channels, 1, 1)
                state.update(_bn(f"{prefix}.downsample.1", width))
            channels = width
    save_file(state, tmp_path / "resnet.safetensors")
    loaded = load_torchvision(model, tmp_path / "resnet.safetensors")
    block = loaded.blocks[4]  # layer3.0
    np.testing.assert_array_equal(block.downsample.conv.filter.numpy(),
                                  state["layer3.0.downsample.0.weight"].transpose(2, 3, 1, 0))
    np.testing.assert_array_equal(block.downsample.bn.scale.numpy(), state["layer3.0.downsample.1.weight"])
    np.testing.assert_array_equal(block.bn2.offset.numpy(), state["layer3.0.bn2.bias"])
    np.testing.assert_array_equal(block.bn2.running_variance.value.numpy(), state["layer3.0.bn2.running_var"])
    np.testing.assert_array_equal(loaded.bn1.running_mean.value.numpy(), state["bn1.running_mean"])
    # The given model is unchanged (value semantics).
    assert not np.array_equal(model.fc.weight.numpy(), loaded.fc.weight.numpy())


def test_mismatches_are_listed_with_the_fields_they_map_to(tmp_path):
    state = tiny_vgg11_state_dict()
    del state["features.13.bias"]
    state["features.3.weight"] = _random(2, 1, 5, 5)
    state["classifier.9.weight"] = _random(3, 3)
    save_file(state, tmp_path / "bad.safetensors")
    with pytest.raises(s4tf.checkpoint.CheckpointError) as info:
        load_torchvision(VGG(depth=11, width=1, hidden=4, classes=3), tmp_path / "bad.safetensors")
    message = str(info.value)
    assert "do not fit the VGG" in message
    assert "missing keys (the model needs them, the file lacks them): features.13.bias (-> features.8.bias)" in message
    assert "unexpected keys (in the file, no place in the model): classifier.9.weight" in message
    assert "features.3.weight: file has (2, 1, 5, 5), features.2.filter needs (2, 1, 3, 3)" in message


def test_weights_that_are_not_floating_point_or_overflow_are_refused(tmp_path):
    state = tiny_vgg11_state_dict()
    state["features.0.weight"] = np.ones((1, 3, 3, 3), np.int8)  # a quantized export
    state["classifier.6.bias"] = np.array([True, False, True])
    state["features.3.weight"] = np.full((2, 1, 3, 3), 1e300)  # float64, inf in float32
    state["features.3.bias"] = np.full(2, 1e30)  # float64 that float32 holds: loads
    path = tmp_path / "vgg11.safetensors"
    save_file(state, path)
    with pytest.raises(s4tf.checkpoint.CheckpointError) as info:
        load_torchvision(VGG(depth=11, width=1, hidden=4, classes=3), path)
    message = str(info.value)
    assert str(path) in message
    assert ("keys that are not floating point: classifier.6.bias: bool (-> fc3.bias), "
            "features.0.weight: int8 (-> features.0.filter)") in message
    assert ("values too large for the model's dtype (they would become inf): features.3.weight: "
            "float64 up to 1e+300, float32 holds up to 3.4e+38 (-> features.2.filter)") in message
    assert "features.3.bias" not in message
    assert "model.float()" in message and "export it again" in message  # the fixes


def test_a_model_of_another_architecture_is_refused(tmp_path):
    save_file(tiny_vgg11_state_dict(), tmp_path / "vgg11.safetensors")
    with pytest.raises(ValueError, match=r"missing keys .*: features\.2\.bias \(-> features\.1\.bias\), "
                                         r"features\.2\.weight \(-> features\.1\.filter\), features\.5\.bias"):
        load_torchvision(VGG(depth=13, width=1, hidden=4, classes=3), tmp_path / "vgg11.safetensors")
    with pytest.raises(TypeError, match=r"no torchvision table for LeNet; models with one: .*ResNet"):
        load_torchvision(s4tf.models.LeNet(), tmp_path / "vgg11.safetensors")


def test_pickle_files_are_refused_with_the_way_to_convert(tmp_path):
    path = tmp_path / "resnet18.pth"
    path.write_bytes(b"\x80\x04\x95 not a safetensors file")
    with pytest.raises(s4tf.checkpoint.CheckpointError, match=r"safetensors\.torch\.save_file.*never loaded"):
        load_torchvision(ResNet(depth=18, width=2), path)
    with pytest.raises(FileNotFoundError, match="No checkpoint at"):
        load_torchvision(ResNet(depth=18, width=2), tmp_path / "absent.safetensors")


def _randomize_batchnorm(torch, module):
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, torch.nn.BatchNorm2d):
                layer.running_mean.uniform_(-0.5, 0.5)
                layer.running_var.uniform_(0.5, 1.5)
                layer.weight.uniform_(0.5, 1.5)
                layer.bias.uniform_(-0.5, 0.5)


def _assert_same_logits(torch, reference, model, path, spatial):
    """Save ``reference``'s state_dict, load it into ``model`` and compare logits on NHWC input."""
    from safetensors.torch import save_file as save_torch

    reference.eval()
    save_torch(reference.state_dict(), str(path))
    loaded = load_torchvision(model, path)
    x = torch.randn(2, 3, spatial, spatial, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = reference(x).numpy()
    got = loaded(s4tf.Tensor(x.numpy().transpose(0, 2, 3, 1))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


def test_resnet18_gives_torchvisions_logits(tmp_path):
    torch, torchvision = import_torchvision()
    torch.manual_seed(0)
    reference = torchvision.models.resnet18(weights=None, num_classes=10)
    _randomize_batchnorm(torch, reference)
    # 33 pixels: odd and even sizes meet the stride-2 windows, where padding must be PyTorch's.
    _assert_same_logits(torch, reference, ResNet(depth=18, classes=10), tmp_path / "r.safetensors", 33)


@pytest.mark.slow
def test_resnet50_gives_torchvisions_logits(tmp_path):
    torch, torchvision = import_torchvision()
    torch.manual_seed(1)
    reference = torchvision.models.resnet50(weights=None, num_classes=10)
    _randomize_batchnorm(torch, reference)
    _assert_same_logits(torch, reference, ResNet(depth=50, classes=10), tmp_path / "r.safetensors", 32)


def test_vgg_gives_torchvisions_logits(tmp_path):
    torch, torchvision = import_torchvision()
    torch.manual_seed(2)
    from torchvision.models.vgg import VGG as TorchVGG
    from torchvision.models.vgg import make_layers

    # torchvision's VGG class and layer builder at 1/16 of vgg11's width; its classifier
    # (same module indices) with 32 hidden units instead of 4096.
    config = [4, "M", 8, "M", 16, 16, "M", 32, 32, "M", 32, 32, "M"]
    reference = TorchVGG(make_layers(config), num_classes=5)
    reference.classifier = torch.nn.Sequential(
        torch.nn.Linear(32 * 7 * 7, 32), torch.nn.ReLU(True), torch.nn.Dropout(),
        torch.nn.Linear(32, 32), torch.nn.ReLU(True), torch.nn.Dropout(), torch.nn.Linear(32, 5))
    model = VGG(depth=11, width=4, hidden=32, classes=5)
    # 64 pixels leave a 2x2 map, which the adaptive pool spreads over 7x7 unevenly.
    _assert_same_logits(torch, reference, model, tmp_path / "v.safetensors", 64)


def test_densenet_gives_torchvisions_logits(tmp_path):
    torch, torchvision = import_torchvision()
    torch.manual_seed(3)
    reference = torchvision.models.DenseNet(growth_rate=4, block_config=(2, 3), num_init_features=8,
                                            bn_size=2, num_classes=5)
    _randomize_batchnorm(torch, reference)
    model = DenseNet(block_sizes=(2, 3), growth_rate=4, initial_features=8, bottleneck_size=2,
                     classes=5)
    _assert_same_logits(torch, reference, model, tmp_path / "d.safetensors", 35)


def test_mobilenet_v2_keys_map_with_depthwise_filters_converted(tmp_path):
    model = s4tf.models.MobileNetV2(width_multiplier=0.25, classes=3)
    state = {}
    for name, value in _mobilenet_v2_shapes(model).items():
        state[name] = np.random.default_rng(len(state)).normal(size=value).astype(np.float32)
    save_file(state, tmp_path / "m.safetensors")
    loaded = load_torchvision(model, tmp_path / "m.safetensors")
    # Block 1 (expansion 6): conv.0 expands, conv.1 is depthwise, conv.2/conv.3 project.
    depthwise = state["features.2.conv.1.0.weight"]            # (C, 1, 3, 3)
    np.testing.assert_array_equal(loaded.blocks[1].depthwise.conv.filter.numpy(),
                                  depthwise.transpose(2, 3, 0, 1))
    np.testing.assert_array_equal(loaded.blocks[0].project.bn.scale.numpy(),
                                  state["features.1.conv.2.weight"])   # block 0 has no expand
    np.testing.assert_array_equal(loaded.classifier.weight.numpy(), state["classifier.1.weight"].T)


def _mobilenet_v2_shapes(model) -> dict:
    """torchvision mobilenet_v2's state_dict shapes for ``model``'s channel counts."""
    shapes = {}

    def conv_norm(name, conv):
        filt = conv.conv.filter.shape
        if isinstance(conv.conv, s4tf.layers.DepthwiseConv2D):
            shapes[f"{name}.0.weight"] = (filt[2], 1, filt[0], filt[1])
        else:
            shapes[f"{name}.0.weight"] = (filt[3], filt[2], filt[0], filt[1])
        channels = conv.bn.scale.shape[0]
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{name}.1.{part}"] = (channels,)

    conv_norm("features.0", model.stem)
    for i, block in enumerate(model.blocks):
        k = 0
        if block.expand is not None:
            conv_norm(f"features.{i + 1}.conv.0", block.expand)
            k = 1
        conv_norm(f"features.{i + 1}.conv.{k}", block.depthwise)
        filt = block.project.conv.filter.shape
        shapes[f"features.{i + 1}.conv.{k + 1}.weight"] = (filt[3], filt[2], 1, 1)
        for part in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"features.{i + 1}.conv.{k + 2}.{part}"] = (filt[3],)
    conv_norm(f"features.{len(model.blocks) + 1}", model.head)
    shapes["classifier.1.weight"] = tuple(model.classifier.weight.shape[::-1])
    shapes["classifier.1.bias"] = tuple(model.classifier.bias.shape)
    return shapes


def test_mobilenet_v2_gives_torchvisions_logits(tmp_path):
    torch, torchvision = import_torchvision()
    torch.manual_seed(4)
    reference = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25, num_classes=5)
    _randomize_batchnorm(torch, reference)
    model = s4tf.models.MobileNetV2(width_multiplier=0.25, classes=5)
    _assert_same_logits(torch, reference, model, tmp_path / "m.safetensors", 37)
