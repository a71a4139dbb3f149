"""Weights from torchvision: a ``state_dict`` saved as safetensors, loaded into the matching s4tf model.

A model family is one row of :data:`MODULE_TABLES`: a function from the s4tf
model to ``{torchvision module name: s4tf layer path}`` (``"layer1.0.conv1":
"blocks.0.conv1"``). How a module's tensors become the layer's fields depends
only on the s4tf layer's type (:data:`PARAMETERS`): convolution filters go from
PyTorch's OIHW to HWIO, dense weights from ``(out, in)`` to ``(in, out)``,
BatchNorm's ``weight``/``bias``/``running_mean``/``running_var`` to
``scale``/``offset``/``running_mean``/``running_variance``, and
``num_batches_tracked`` is ignored. A dense layer fed by ``torch.flatten`` of a
``(channels, h, w)`` map (VGG's first classifier layer) is marked
:class:`Flattened`: its input rows are reordered to NHWC's ``(h, w, channels)``.
Adding a family is one more table function, and a layer type not seen before
one more row of :data:`PARAMETERS`.
"""

from __future__ import annotations

import dataclasses
import os
import typing

import numpy as np

from .. import layers
from ..checkpoint.files import read_arrays, restore
from ..checkpoint.key_report import as_float_weights, mismatch_lines
from ..checkpoint.structure import CheckpointError, encode
from ..tensor import Tensor
from .densenet import DenseNet
from .mobilenet_v2 import MobileNetV2
from .resnet import ResNet
from .vgg import VGG

__all__ = ["Flattened", "load_torchvision"]


@dataclasses.dataclass(frozen=True)
class Flattened:
    """A table entry for a Dense layer that follows ``torch.flatten`` of ``(channels, h, w)``."""

    path: str
    channels: int


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How one PyTorch tensor becomes one s4tf field, and the PyTorch shape a field's shape implies."""

    to_s4tf: typing.Callable[[np.ndarray], np.ndarray]
    torch_shape: typing.Callable[[tuple], tuple]


_SAME = _Layout(lambda a: a, lambda shape: shape)
_OIHW_TO_HWIO = _Layout(lambda a: a.transpose(2, 3, 1, 0),
                        lambda shape: (shape[3], shape[2], shape[0], shape[1]))
_TRANSPOSED = _Layout(lambda a: a.T, lambda shape: shape[::-1])
# A depthwise filter: PyTorch (channels, 1, h, w) with groups=channels -> (h, w, channels, 1).
_DEPTHWISE = _Layout(lambda a: a.transpose(2, 3, 0, 1),
                     lambda shape: (shape[2], shape[3], shape[0], shape[1]))

# s4tf layer type -> (PyTorch parameter, s4tf field, layout).
PARAMETERS = {
    layers.Conv2D: (("weight", "filter", _OIHW_TO_HWIO), ("bias", "bias", _SAME)),
    layers.DepthwiseConv2D: (("weight", "filter", _DEPTHWISE), ("bias", "bias", _SAME)),
    layers.Dense: (("weight", "weight", _TRANSPOSED), ("bias", "bias", _SAME)),
    layers.BatchNorm: (("weight", "scale", _SAME), ("bias", "offset", _SAME),
                       ("running_mean", "running_mean", _SAME),
                       ("running_var", "running_variance", _SAME)),
}


def _after_flatten(channels: int) -> _Layout:
    """Dense weight ``(out, channels*h*w)`` in NCHW flattening order -> ``(h*w*channels, out)``."""

    def to_s4tf(a):
        out, features = a.shape
        grid = a.reshape(out, channels, features // channels)
        return grid.transpose(2, 1, 0).reshape(features, out)

    return _Layout(to_s4tf, lambda shape: shape[::-1])


def _resnet_modules(model: ResNet) -> dict:
    table = {"conv1": "conv1", "bn1": "bn1", "fc": "fc"}
    index = 0
    for stage, count in enumerate(model.stage_sizes):
        for i in range(count):
            block, torch_name, path = model.blocks[index], f"layer{stage + 1}.{i}", f"blocks.{index}"
            for name in ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3"):
                if hasattr(block, name):
                    table[f"{torch_name}.{name}"] = f"{path}.{name}"
            if block.downsample is not None:
                table[f"{torch_name}.downsample.0"] = f"{path}.downsample.conv"
                table[f"{torch_name}.downsample.1"] = f"{path}.downsample.bn"
            index += 1
    return table


def _vgg_modules(model: VGG) -> dict:
    table, torch_index = {}, 0
    for index, layer in enumerate(model.features):
        if isinstance(layer, layers.Conv2D):
            table[f"features.{torch_index}"] = f"features.{index}"
            torch_index += 2  # torchvision's features hold Conv2d, ReLU pairs
        else:
            torch_index += 1
    height, width = model.avgpool.output_size
    table["classifier.0"] = Flattened("fc1", channels=model.fc1.weight.shape[0] // (height * width))
    table["classifier.3"] = "fc2"
    table["classifier.6"] = "fc3"
    return table


def _densenet_modules(model: DenseNet) -> dict:
    table = {"features.conv0": "conv0", "features.norm0": "norm0", "features.norm5": "norm5",
             "classifier": "classifier"}
    for b, block in enumerate(model.dense_blocks):
        for i in range(len(block.layers)):
            torch_name, path = f"features.denseblock{b + 1}.denselayer{i + 1}", f"dense_blocks.{b}.layers.{i}"
            for name in ("norm1", "conv1", "norm2", "conv2"):
                table[f"{torch_name}.{name}"] = f"{path}.{name}"
    for t in range(len(model.transitions)):
        for name in ("norm", "conv"):
            table[f"features.transition{t + 1}.{name}"] = f"transitions.{t}.{name}"
    return table


def _mobilenet_v2_modules(model: MobileNetV2) -> dict:
    def conv_norm(torch_name: str, path: str) -> dict:   # torchvision's Conv2dNormActivation
        return {f"{torch_name}.0": f"{path}.conv", f"{torch_name}.1": f"{path}.bn"}

    table = {**conv_norm("features.0", "stem"), "classifier.1": "classifier",
             **conv_norm(f"features.{len(model.blocks) + 1}", "head")}
    for i, block in enumerate(model.blocks):
        # torchvision's InvertedResidual.conv: [expand CNA,] depthwise CNA, Conv2d, BatchNorm.
        torch_name, path, k = f"features.{i + 1}.conv", f"blocks.{i}", 0
        if block.expand is not None:
            table.update(conv_norm(f"{torch_name}.0", f"{path}.expand"))
            k = 1
        table.update(conv_norm(f"{torch_name}.{k}", f"{path}.depthwise"))
        table[f"{torch_name}.{k + 1}"] = f"{path}.project.conv"
        table[f"{torch_name}.{k + 2}"] = f"{path}.project.bn"
    return table


# s4tf model class -> its table: {torchvision module name: s4tf layer path or Flattened}.
MODULE_TABLES = {DenseNet: _densenet_modules, MobileNetV2: _mobilenet_v2_modules,
                 ResNet: _resnet_modules, VGG: _vgg_modules}


def _layer_at(model, path: str):
    value = model
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list | tuple) else getattr(value, part)
    return value


def _expected(model, table, fields: dict) -> dict:
    """``{torch key: (s4tf key, layout)}`` for every tensor ``table`` says ``model`` takes."""
    expected = {}
    for module, target in table(model).items():
        path = target.path if isinstance(target, Flattened) else target
        layer = _layer_at(model, path)
        for torch_name, field, layout in PARAMETERS[type(layer)]:
            key = f"{path}.{field}"
            if key not in fields:
                continue  # e.g. a convolution without bias
            if isinstance(target, Flattened) and field == "weight":
                layout = _after_flatten(target.channels)
            expected[f"{module}.{torch_name}"] = (key, layout)
    return expected


def load_torchvision(model, path):
    """A copy of ``model`` holding the torchvision weights saved in the safetensors file ``path``.

    Save the weights on the PyTorch side with ``safetensors.torch.save_file(
    torch_model.state_dict(), path)`` (safetensors, never pickle: nothing in the
    file can run code). The s4tf model must have the torchvision model's
    architecture: ``models.ResNet(depth=50)`` for ``resnet50``,
    ``models.VGG(depth=16)`` for ``vgg16``, ``models.DenseNet121()`` for
    ``densenet121``, ``models.MobileNetV2(width_multiplier=w)`` for
    ``mobilenet_v2(width_mult=w)`` (with ``classes=`` the torchvision model's
    ``num_classes``). Layouts are converted (OIHW filters to HWIO, dense
    weights transposed, VGG's flattened features reordered for NHWC) and
    floating-point values cast to the model's dtypes, so the loaded model gives
    torchvision's logits on the same images in NHWC layout (``x.permute(0,
    2, 3, 1)``). Nothing is downloaded.

    Parameters
    ----------
    model : ResNet, VGG, DenseNet or MobileNetV2
        A model of the torchvision model's architecture (its weights are replaced).
    path : str or os.PathLike
        The safetensors file.

    Returns
    -------
    The new model; ``model`` is unchanged.

    Raises
    ------
    CheckpointError
        (a ``ValueError``) listing the torchvision keys the model needs that
        the file lacks, the file's keys the model has no place for, and the
        keys whose shape does not fit, each with the s4tf field it maps to,
        and the keys that are not floating point (integer or bool tensors, as
        a quantized model saves) or hold values the model's dtype cannot
        (float64 beyond float32's range).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from safetensors.numpy import save_file
    >>> import s4tf
    >>> model = s4tf.models.VGG(depth=11, width=2, hidden=4, classes=3)
    >>> weights = {"features.0.weight": np.ones((2, 3, 3, 3), np.float32)}
    >>> path = os.path.join(tempfile.mkdtemp(), "vgg11.safetensors")
    >>> save_file(weights, path)
    >>> try:
    ...     s4tf.models.load_torchvision(model, path)
    ... except ValueError as error:
    ...     print("features.3.weight (-> features.2.filter)" in str(error))
    True
    """
    table = next((t for cls, t in MODULE_TABLES.items() if isinstance(model, cls)), None)
    if table is None:
        known = ", ".join(cls.__name__ for cls in MODULE_TABLES)
        raise TypeError(f"load_torchvision: no torchvision table for {type(model).__name__}; "
                        f"models with one: {known}.")
    fields: dict = {}
    encode(model, fields)
    expected = _expected(model, table, fields)
    arrays, _ = read_arrays(path, written_by="safetensors.torch.save_file(model.state_dict(), "
                                             "path) on the PyTorch side")
    arrays = {key: array for key, array in arrays.items()
              if not key.endswith(".num_batches_tracked")}
    present = [torch_key for torch_key in _in_order(expected) if torch_key in arrays]
    cast, dtype_lines = as_float_weights(
        {torch_key: arrays[torch_key] for torch_key in present},
        {torch_key: _numpy_dtype(fields[expected[torch_key][0]]) for torch_key in present},
        {torch_key: expected[torch_key][0] for torch_key in present})
    _check(model, path, expected, arrays, fields, dtype_lines)
    converted = {key: np.ascontiguousarray(layout.to_s4tf(cast[torch_key]))
                 for torch_key, (key, layout) in expected.items()}
    return restore(None, converted, model, path)


def _numpy_dtype(value) -> np.dtype:
    return np.dtype(value.dtype.numpy if isinstance(value, Tensor) else value.dtype)


def _in_order(keys) -> list:
    """Keys sorted as a person reads them: ``layer1.2`` before ``layer1.10``."""
    return sorted(keys, key=lambda key: [(0, int(p), "") if p.isdigit() else (1, 0, p)
                                         for p in key.split(".")])


def _shape(value) -> tuple:
    return tuple(value.shape)


def _check(model, path, expected: dict, arrays: dict, fields: dict, dtype_lines: list) -> None:
    missing = [f"{k} (-> {expected[k][0]})" for k in _in_order(set(expected) - set(arrays))]
    unexpected = _in_order(set(arrays) - set(expected))
    misshaped = []
    for torch_key in _in_order(set(expected) & set(arrays)):
        key, layout = expected[torch_key]
        want = tuple(layout.torch_shape(_shape(fields[key])))
        got = _shape(arrays[torch_key])
        if got != want:
            misshaped.append(f"{torch_key}: file has {got}, {key} needs {want}")
    unfilled = _in_order(set(fields) - {key for key, _ in expected.values()})
    if not (missing or unexpected or misshaped or unfilled or dtype_lines):
        return
    lines = [f"The torchvision weights in {os.fspath(path)!r} do not fit the "
             f"{type(model).__name__} given:"]
    lines += mismatch_lines(missing, unexpected, misshaped, misshaped_means="PyTorch layout")
    if unfilled:
        lines.append(f"  model fields no torchvision key fills: {', '.join(unfilled)}")
    lines += dtype_lines
    if missing or unexpected or misshaped or unfilled:
        lines.append("Build the s4tf model with the torchvision model's architecture (e.g. "
                     "models.ResNet(depth=50, classes=1000) for resnet50) and save its full "
                     "state_dict.")
    raise CheckpointError("\n".join(lines))
