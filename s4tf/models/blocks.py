"""Pieces the zoo's convolutional networks share: torchvision's BatchNorm, bias-free
convolutions run with PyTorch's padding, and the ResNet family's stage plans.

ResNet (:mod:`s4tf.models.resnet`), ResNetV2, WideResNet and DenseNet build
their layers with these, so that each model file holds its model only. The
layers they make are the library's own (``layers.Conv2D``, ``layers.BatchNorm``),
so the field names and parameter counts of saved models do not depend on this
module.
"""

from __future__ import annotations

from .. import layers
from ..initializers import he_normal

__all__ = ["IMAGENET_DEPTHS", "STEMS", "batch_norm", "build_blocks", "conv", "padded",
           "stage_plan", "torch_padding"]

# depth -> (block, blocks per stage): torchvision's table.
IMAGENET_DEPTHS = {18: ("basic", (2, 2, 2, 2)), 34: ("basic", (3, 4, 6, 3)),
                   50: ("bottleneck", (3, 4, 6, 3)), 101: ("bottleneck", (3, 4, 23, 3)),
                   152: ("bottleneck", (3, 8, 36, 3))}
STEMS = ("imagenet", "cifar")


def stage_plan(model: str, depth, stem: str) -> tuple[str, tuple[int, ...]]:
    """``(block kind, blocks per stage)`` for ``depth``, or a ValueError naming the valid depths.

    ImageNet: torchvision's five depths. CIFAR: ``6n + 2`` (three stages of
    ``n`` basic blocks, two 3x3 convolutions each, plus the first convolution
    and the classifier), as in He et al. 2016, section 4.2.

    Examples
    --------
    >>> stage_plan("ResNet", 50, "imagenet"), stage_plan("ResNet", 20, "cifar")
    (('bottleneck', (3, 4, 6, 3)), ('basic', (3, 3, 3)))
    """
    if stem not in STEMS:
        raise ValueError(f"{model}: stem must be 'imagenet' or 'cifar'; received stem={stem!r}.")
    if stem == "imagenet":
        if depth not in IMAGENET_DEPTHS:
            raise ValueError(
                f"{model}: depth={depth!r} is not an ImageNet ResNet depth; valid depths are "
                f"{', '.join(map(str, IMAGENET_DEPTHS))} (or use stem='cifar' for depths 6n+2)."
            )
        return IMAGENET_DEPTHS[depth]
    if not isinstance(depth, int) or depth < 8 or (depth - 2) % 6:
        raise ValueError(
            f"{model}: depth={depth!r} is not a CIFAR ResNet depth; valid depths are 6n+2 for "
            "n >= 1: 8, 14, 20, 32, 44, 56, 110, ... (or use stem='imagenet' for 18, 34, 50, "
            "101, 152)."
        )
    return "basic", ((depth - 2) // 6,) * 3


def batch_norm(channels: int) -> layers.BatchNorm:
    """torchvision's BatchNorm2d: epsilon 1e-5, running statistics keep 0.9 per step.

    Examples
    --------
    >>> bn = batch_norm(8)
    >>> bn.epsilon, bn.momentum, bn.scale.shape
    (1e-05, 0.9, (8,))
    """
    return layers.BatchNorm(feature_count=channels, momentum=0.9, epsilon=1e-5)


def torch_padding(window: int):
    """PyTorch's padding of a ``window``-wide window: ``window // 2`` on every side, as pairs.

    TF's "same" would put the odd element after instead, which shifts every
    stride-2 window by one pixel, so torchvision's weights would give other
    outputs.

    Examples
    --------
    >>> torch_padding(3)
    ((1, 1), (1, 1))
    """
    return ((window // 2, window // 2),) * 2


def conv(size: int, channels_in: int, channels_out: int, strides: int = 1) -> layers.Conv2D:
    """A bias-free ``size x size`` "valid" convolution for :func:`padded` (He-normal initial filter).

    Examples
    --------
    >>> layer = conv(3, 2, 4, strides=2)
    >>> layer.filter.shape, layer.bias, layer.padding
    ((3, 3, 2, 4), None, 'valid')
    """
    return layers.Conv2D(filter_shape=(size, size, channels_in, channels_out), strides=strides,
                         padding="valid", use_bias=False, filter_initializer=he_normal)


def padded(layer, x):
    """``layer`` (a "valid" convolution or pool) over ``x`` padded as PyTorch pads.

    The layer runs with :func:`torch_padding` for this call (zeros for a
    convolution, -inf for a max pool, as in PyTorch; inside the kernels,
    without a padded copy of ``x``), while its own ``padding`` field stays
    "valid": checkpoints keep their structure, and files saved when the input
    was zero-padded first load and run the same.

    Examples
    --------
    >>> import s4tf
    >>> layer = conv(3, 2, 4, strides=2)
    >>> padded(layer, s4tf.ones([1, 8, 8, 2])).shape, layer.padding
    ((1, 4, 4, 4), 'valid')
    """
    window = layer.filter.shape[0] if isinstance(layer, layers.Conv2D) else layer.pool_size[0]
    return layer(x, padding=torch_padding(window)) if window > 1 else layer(x)


def build_blocks(block_class, plan, channels_in: int, width: int, **options) -> tuple[list, int]:
    """The blocks of every stage (width doubling, stride 2 from the second stage on) and the output width.

    ``options`` go to every block (e.g. ``dropout=`` for wide ResNets).

    Examples
    --------
    >>> from s4tf.models.resnet import BasicBlock
    >>> blocks, channels = build_blocks(BasicBlock, (1, 2), channels_in=4, width=4)
    >>> [type(b).__name__ for b in blocks], channels
    (['BasicBlock', 'BasicBlock', 'BasicBlock'], 8)
    """
    blocks = []
    for stage, count in enumerate(plan):
        stage_width = width * 2 ** stage
        for i in range(count):
            strides = 2 if stage > 0 and i == 0 else 1
            blocks.append(block_class(channels_in, stage_width, strides, **options))
            channels_in = stage_width * block_class.expansion
    return blocks, channels_in
