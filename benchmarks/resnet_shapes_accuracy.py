"""Accuracy of the same ResNet trained the same way in s4tf and in PyTorch, on the Shapes set.

``examples/resnet_cifar.py`` trains offline on :class:`s4tf.datasets.Shapes`;
this puts its result next to PyTorch's for the same architecture (the CIFAR
ResNet of ``benchmarks/zoo_step.py``), the same images in the same batches
and order, Adam with the same learning rate and the same number of epochs.
Initial weights differ (each framework's own initialisers), so expect the
two accuracies to agree within a few points, not exactly. Prints JSON.

Usage: ``python benchmarks/resnet_shapes_accuracy.py [--epochs 8] [--depth 20]
[--training-size 8000] [--backend xla]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import s4tf
from s4tf import datasets, models, optimizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_step  # noqa: E402


def epochs_of_batches(data: datasets.Shapes, epochs: int):
    """The same shuffled training batches (as NumPy) for both frameworks, epoch by epoch."""
    for epoch in range(epochs):
        data.training.epoch = epoch
        yield [(images.numpy(), labels.numpy()) for images, labels in data.training]


def train_s4tf(data, arguments) -> dict:
    with s4tf.backend(arguments.backend):
        s4tf.random.seed(0)
        model = models.ResNet(depth=arguments.depth, classes=data.num_classes, stem="cifar")
        loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                                 optimizer=optimizers.Adam(model, learning_rate=arguments.lr),
                                 loss=s4tf.softmax_cross_entropy, progress=False,
                                 drop_remainder=True)
        start = time.perf_counter()
        loop.fit(model, epochs=arguments.epochs)
        return {"val_accuracy": round(loop.history[-1]["val_accuracy"], 4),
                "seconds": round(time.perf_counter() - start, 1)}


def train_torch(data, arguments) -> dict:
    import torch

    torch.manual_seed(0)
    spec = {"kind": "resnet", "depth": arguments.depth, "size": 32}
    model = zoo_step.torch_model(spec)
    model[-1] = torch.nn.Linear(64, data.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=arguments.lr, eps=1e-8)
    start = time.perf_counter()
    for batches in epochs_of_batches(data, arguments.epochs):
        model.train()
        for images, labels in batches:
            if len(images) < data.training.batch_size:
                continue   # as the s4tf loop does with drop_remainder=True
            x = torch.from_numpy(images).permute(0, 3, 1, 2).contiguous()
            loss = torch.nn.functional.cross_entropy(model(x), torch.from_numpy(labels).long())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in data.validation:
            x = torch.from_numpy(images.numpy()).permute(0, 3, 1, 2).contiguous()
            correct += int((model(x).argmax(1).numpy() == labels.numpy()).sum())
            total += len(labels.numpy())
    return {"val_accuracy": round(correct / total, 4),
            "seconds": round(time.perf_counter() - start, 1)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--training-size", type=int, default=8000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--backend", default="xla", choices=("naive", "xla"))
    arguments = parser.parse_args(argv)
    data = datasets.Shapes(batch_size=arguments.batch_size, seed=0, prefetch=False,
                           training_size=arguments.training_size)
    report = {"data": repr(data), "epochs": arguments.epochs, "depth": arguments.depth,
              "s4tf": train_s4tf(data, arguments)}
    try:
        report["torch"] = train_torch(data, arguments)
    except ImportError as error:
        report["torch"] = {"skipped": str(error)}
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
