"""Hand-written PyTorch twins of four zoo architectures, the independent oracle of test_torch_twins.

Not a test module, and it imports nothing of s4tf: each twin is written from
the paper and torchvision's / GPT-2's published layout in plain ``torch.nn``,
so a mistake in the zoo is not repeated here. The layouts are PyTorch's
(NCHW images, ``(out, in, h, w)`` filters, ``nn.Linear`` weights ``(out,
in)``); the test converts the zoo's weights into them.

Each twin registers its layers in the order of the zoo model's fields, which
is how the test pairs them up (kind by kind, shape by shape).

- :class:`CifarResNet`: He et al. 2016, section 4.2 (basic blocks, BatchNorm,
  1x1 projection shortcuts where the shape changes).
- :class:`MobileNetV2`: Sandler et al. 2018 (inverted residuals, depthwise
  3x3 convolutions, ReLU6, linear bottlenecks), torchvision's padding.
- :class:`DenseNet`: Huang et al. 2017 as torchvision builds it (dense
  blocks of BN-ReLU-conv1x1-BN-ReLU-conv3x3, transitions, max-pooled stem).
- :class:`GPT2`: Radford et al. 2019 (pre-LayerNorm blocks, one fused
  query/key/value projection, causal attention, MLP with tanh-approximated
  GELU, output tied to the token embedding).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class BatchNorm2d(nn.BatchNorm2d):
    """torch's BatchNorm2d, but its running variance follows the batch's biased variance.

    S4TF (and Keras) keep ``running = m running + (1 - m) var_biased``; torch
    keeps the unbiased (n - 1) variance. Normalization is torch's own kernel.
    ``momentum=0.1`` here is 0.9 in the zoo's convention.
    """

    def __init__(self, channels: int, eps: float = 1e-5):
        super().__init__(channels, eps=eps, momentum=0.1)

    def forward(self, x):
        if not self.training:
            return super().forward(x)
        out = F.batch_norm(x, None, None, self.weight, self.bias, training=True, eps=self.eps)
        with torch.no_grad():
            mean = x.mean(dim=(0, 2, 3))
            variance = x.var(dim=(0, 2, 3), unbiased=False)
            self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
            self.running_var.mul_(1 - self.momentum).add_(self.momentum * variance)
        return out


def conv(channels_in: int, channels_out: int, size: int, stride: int = 1, groups: int = 1):
    """A bias-free convolution padded ``size // 2`` on every side (PyTorch's convention)."""
    return nn.Conv2d(channels_in, channels_out, size, stride=stride, padding=size // 2,
                     groups=groups, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, channels_in: int, width: int, stride: int):
        super().__init__()
        self.conv1 = conv(channels_in, width, 3, stride)
        self.bn1 = BatchNorm2d(width)
        self.conv2 = conv(width, width, 3)
        self.bn2 = BatchNorm2d(width)
        self.downsample = None
        if stride != 1 or channels_in != width:
            self.downsample = nn.Sequential(conv(channels_in, width, 1, stride), BatchNorm2d(width))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class CifarResNet(nn.Module):
    """The CIFAR ResNet: 3x3 stem, three stages of basic blocks (widths w, 2w, 4w), GAP, linear."""

    def __init__(self, blocks_per_stage: int, width: int, classes: int):
        super().__init__()
        self.conv1 = conv(3, width, 3)
        self.bn1 = BatchNorm2d(width)
        blocks, channels = [], width
        for stage in range(3):
            for i in range(blocks_per_stage):
                stride = 2 if stage > 0 and i == 0 else 1
                blocks.append(BasicBlock(channels, width * 2 ** stage, stride))
                channels = width * 2 ** stage
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean(dim=(2, 3)))


class ConvNormReLU6(nn.Sequential):
    """Convolution (depthwise when ``groups`` is the channel count), BatchNorm, optional ReLU6."""

    def __init__(self, channels_in, channels_out, size=3, stride=1, groups=1, activation=True):
        layers = [conv(channels_in, channels_out, size, stride, groups), BatchNorm2d(channels_out)]
        super().__init__(*layers, *([nn.ReLU6()] if activation else []))


class InvertedResidual(nn.Module):
    def __init__(self, channels_in: int, channels_out: int, stride: int, expansion: int):
        super().__init__()
        hidden = channels_in * expansion
        self.expand = None if expansion == 1 else ConvNormReLU6(channels_in, hidden, 1)
        self.depthwise = ConvNormReLU6(hidden, hidden, 3, stride, groups=hidden)
        self.project = ConvNormReLU6(hidden, channels_out, 1, activation=False)
        self.residual = stride == 1 and channels_in == channels_out

    def forward(self, x):
        y = x if self.expand is None else self.expand(x)
        y = self.project(self.depthwise(y))
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    """Stem 3x3/2, inverted residual blocks ``(expansion, channels, repeats, stride)``, 1x1 head."""

    def __init__(self, stem: int, blocks, head: int, classes: int):
        super().__init__()
        self.stem = ConvNormReLU6(3, stem, 3, 2)
        layers, channels = [], stem
        for expansion, out, repeats, stride in blocks:
            for i in range(repeats):
                layers.append(InvertedResidual(channels, out, stride if i == 0 else 1, expansion))
                channels = out
        self.blocks = nn.ModuleList(layers)
        self.head = ConvNormReLU6(channels, head, 1)
        self.classifier = nn.Linear(head, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.classifier(self.head(x).mean(dim=(2, 3)))


class DenseLayer(nn.Module):
    def __init__(self, channels_in: int, growth_rate: int, bottleneck_size: int):
        super().__init__()
        inner = bottleneck_size * growth_rate
        self.norm1 = BatchNorm2d(channels_in)
        self.conv1 = conv(channels_in, inner, 1)
        self.norm2 = BatchNorm2d(inner)
        self.conv2 = conv(inner, growth_rate, 3)

    def forward(self, x):
        return self.conv2(F.relu(self.norm2(self.conv1(F.relu(self.norm1(x))))))


class DenseBlock(nn.ModuleList):
    def forward(self, x):
        features = [x]
        for layer in self:
            features.append(layer(torch.cat(features, dim=1)))
        return torch.cat(features, dim=1)


class Transition(nn.Module):
    def __init__(self, channels_in: int, channels_out: int):
        super().__init__()
        self.norm = BatchNorm2d(channels_in)
        self.conv = conv(channels_in, channels_out, 1)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.norm(x))), 2, 2)


class DenseNet(nn.Module):
    """7x7/2 stem, BN, ReLU, 3x3/2 max pool; dense blocks and transitions; BN, ReLU, GAP, linear.

    The blocks are registered before the transitions (the zoo's field order);
    ``forward`` interleaves them.
    """

    def __init__(self, block_sizes, growth_rate: int, initial_features: int,
                 bottleneck_size: int, classes: int):
        super().__init__()
        self.conv0 = conv(3, initial_features, 7, 2)
        self.norm0 = BatchNorm2d(initial_features)
        blocks, transitions, channels = [], [], initial_features
        for i, count in enumerate(block_sizes):
            blocks.append(DenseBlock(DenseLayer(channels + j * growth_rate, growth_rate,
                                                bottleneck_size) for j in range(count)))
            channels += count * growth_rate
            if i < len(block_sizes) - 1:
                transitions.append(Transition(channels, channels // 2))
                channels //= 2
        self.dense_blocks = nn.ModuleList(blocks)
        self.transitions = nn.ModuleList(transitions)
        self.norm5 = BatchNorm2d(channels)
        self.classifier = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.norm0(self.conv0(x))), 3, 2, padding=1)
        for i, block in enumerate(self.dense_blocks):
            x = block(x)
            if i < len(self.transitions):
                x = self.transitions[i](x)
        return self.classifier(F.relu(self.norm5(x)).mean(dim=(2, 3)))


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.c_attn = nn.Linear(width, 3 * width)   # queries, keys, values, in that order
        self.c_proj = nn.Linear(width, width)
        self.heads = heads

    def forward(self, x):
        batch, length, width = x.shape
        head_size = width // self.heads
        q, k, v = (t.view(batch, length, self.heads, head_size).transpose(1, 2)
                   for t in self.c_attn(x).split(width, dim=2))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_size)
        future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        joined = (weights @ v).transpose(1, 2).reshape(batch, length, width)
        return self.c_proj(joined)


class MLP(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPT2Block(nn.Module):
    def __init__(self, width: int, heads: int, eps: float = 1e-5):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width, eps=eps)
        self.attn = CausalSelfAttention(width, heads)
        self.ln_2 = nn.LayerNorm(width, eps=eps)
        self.mlp = MLP(width)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Token and position embeddings, GPT-2 blocks, a final LayerNorm, logits tied to ``wte``."""

    def __init__(self, vocab_size: int, context: int, width: int, depth: int, heads: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList(GPT2Block(width, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T
