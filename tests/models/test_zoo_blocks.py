"""s4tf.models.blocks: the pieces the zoo's convolutional networks share."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

import s4tf
from s4tf.models import blocks, resnet

MODELS = Path(blocks.__file__).parent


def test_models_take_shared_pieces_from_blocks_not_from_another_model():
    # Issue 19, item 4: resnet.py holds ResNet; what other models reuse lives in blocks.py.
    borrowed = []
    for path in sorted(MODELS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "resnet"
                    and path.name != "__init__.py"):
                borrowed += [f"{path.name}:{node.lineno} {alias.name}" for alias in node.names
                             if alias.name != "ResNet"]
    assert not borrowed, f"import these from s4tf.models.blocks instead: {borrowed}"


def test_resnet_still_publishes_padded_and_torch_padding():
    assert resnet.padded is blocks.padded and resnet.torch_padding is blocks.torch_padding
    assert {"padded", "torch_padding"} <= set(resnet.__all__)


def test_padded_pads_as_pytorch_inside_the_call_and_keeps_the_layer_valid():
    s4tf.random.seed(0)
    layer = blocks.conv(3, 2, 3, strides=2)
    x = s4tf.random.normal([1, 6, 6, 2], seed=1)
    want = layer(s4tf.nn.zero_padding2d(x, 1))
    np.testing.assert_allclose(blocks.padded(layer, x).numpy(), want.numpy(), atol=1e-6)
    assert layer.padding == "valid" and layer.bias is None
