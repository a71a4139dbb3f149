"""Data augmentation: its throughput on one core, and what it buys on a small training set.

1. ``throughput``: images per second of ``RandomCrop(32, padding=4)`` then
   ``RandomFlip()`` (:mod:`s4tf.datasets.transforms`) on float32 32x32x3
   batches, one BLAS/NumPy thread (the transforms are NumPy and run in the
   data sets' prefetch thread). Target: >= 20,000 images/s, so augmenting
   never holds back a CPU training step.
2. ``accuracy``: ResNet-20 (``examples/resnet_cifar.py``'s network and Adam
   setting) trained on 1,000 Shapes images, validated on 1,000 others,
   without and with that augmentation (``--augment``), same initial weights,
   same batches and epochs. With so few images the network overfits; crops
   and flips should give a higher validation accuracy.

Prints JSON. Usage: ``python benchmarks/augmentation.py [--epochs 15]
[--training-size 1000] [--backend xla] [--skip-accuracy]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

# One thread for NumPy's BLAS: the figure is per core.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import s4tf  # noqa: E402
from s4tf import datasets, models, optimizers  # noqa: E402
from s4tf.datasets import transforms  # noqa: E402


def crop_and_flip():
    return transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomFlip()])


def throughput(batch_size: int = 128, seconds: float = 3.0) -> dict:
    images = np.random.default_rng(0).random((batch_size, 32, 32, 3), dtype=np.float32)
    augment = crop_and_flip()
    rng = np.random.default_rng(0)
    augment(images, rng=rng)  # warm up
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        augment(images, rng=rng)
        count += batch_size
    rate = count / (time.perf_counter() - start)
    return {"images_per_second": round(rate), "batch_size": batch_size,
            "target": 20000, "meets_target": rate >= 20000}


def train(arguments, augment: bool) -> dict:
    data = datasets.Shapes(batch_size=64, training_size=arguments.training_size,
                           validation_size=1000, seed=0,
                           transform=crop_and_flip() if augment else None)
    with s4tf.backend(arguments.backend):
        s4tf.random.seed(0)
        model = models.ResNet(depth=20, classes=data.num_classes, stem="cifar")
        loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                                 optimizer=optimizers.Adam(model, learning_rate=2e-3),
                                 loss=s4tf.softmax_cross_entropy, progress=False,
                                 drop_remainder=True)
        start = time.perf_counter()
        loop.fit(model, epochs=arguments.epochs)
        return {"val_accuracy": round(loop.history[-1]["val_accuracy"], 4),
                "best_val_accuracy": round(max(h["val_accuracy"] for h in loop.history), 4),
                "train_accuracy": round(loop.history[-1]["accuracy"], 4),
                "seconds": round(time.perf_counter() - start, 1)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--training-size", type=int, default=1000)
    parser.add_argument("--backend", default="xla", choices=("naive", "xla"))
    parser.add_argument("--skip-accuracy", action="store_true")
    arguments = parser.parse_args(argv)
    results = {"throughput": throughput()}
    if not arguments.skip_accuracy:
        plain, augmented = train(arguments, False), train(arguments, True)
        results["accuracy"] = {
            "setting": {"model": "ResNet-20", "data": "Shapes", "epochs": arguments.epochs,
                        "training_size": arguments.training_size, "validation_size": 1000,
                        "backend": arguments.backend},
            "without_augment": plain, "with_augment": augmented,
            "gain_points": round(100 * (augmented["val_accuracy"] - plain["val_accuracy"]), 2)}
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
