"""Mixed precision: step time per policy on naive and xla, and accuracy on the Shapes set.

Two measurements, printed as one JSON object:

- ``step_time``: a ResNet-20 (CIFAR stem) training step at batch 16 (Adam,
  32x32x3 inputs) under ``float32``, ``mixed_bfloat16`` and ``mixed_float16``
  on each backend, the policies taking turns round by round (CPU time per
  step, median over rounds; one BLAS thread), and each low policy's time
  over float32's.
- ``accuracy``: ResNet-20 trained on :class:`s4tf.datasets.Shapes` for 8
  epochs on xla (Adam 2e-3, batch 64) under ``float32`` and
  ``mixed_bfloat16`` from the same initial weights and batches; the final
  validation accuracies and their difference in points.

Usage: ``python benchmarks/precision.py [--part step_time|accuracy|both]
[--backends naive,xla] [--rounds 3] [--epochs 8] [--training-size 4000] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

# One BLAS thread (before NumPy loads OpenBLAS): CPU time then measures work, not how
# many threads spun; --threads in the environment's OPENBLAS_NUM_THREADS overrides it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import s4tf  # noqa: E402
from s4tf import datasets, models, optimizers  # noqa: E402

POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")


def _resnet(classes: int, seed: int = 0):
    s4tf.random.seed(seed)
    return models.ResNet(depth=20, classes=classes, stem="cifar")


def step_time(backend: str, rounds: int, steps: int, batch: int) -> dict:
    """CPU seconds per training step under each policy on ``backend``, taking turns."""
    with s4tf.backend(backend):
        rng = np.random.default_rng(0)
        x = s4tf.Tensor(rng.uniform(size=(batch, 32, 32, 3)).astype(np.float32))
        y = s4tf.Tensor((np.arange(batch) % 10).astype(np.int32))
        runs = {}
        for name in POLICIES:
            model = _resnet(10)
            runs[name] = [model, optimizers.Adam(model, learning_rate=1e-3)]
        times: dict[str, list[float]] = {name: [] for name in POLICIES}

        def step(name):
            model, opt = runs[name]
            runs[name][0] = None  # the optimizer's update may then write in place
            grads = s4tf.gradient(model, of=lambda m: s4tf.softmax_cross_entropy(
                logits=m(x), labels=y))
            model = opt.update(model, grads)
            s4tf.barrier()
            runs[name][0] = model

        with s4tf.training():
            for name in POLICIES:  # warm-up: compiles on xla
                with s4tf.precision.policy(name):
                    step(name)
                    step(name)
            for _ in range(rounds):
                for name in POLICIES:
                    with s4tf.precision.policy(name):
                        start = time.process_time()
                        for _ in range(steps):
                            step(name)
                        # The last step's numbers, so xla's asynchronous run is counted.
                        float(runs[name][0].fc.bias[0])
                        times[name].append((time.process_time() - start) / steps)
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        return {
            "ms_per_step": {name: round(1000 * t, 1) for name, t in medians.items()},
            "bfloat16_over_float32": round(medians["mixed_bfloat16"] / medians["float32"], 2),
            "float16_over_float32": round(medians["mixed_float16"] / medians["float32"], 2),
        }


def accuracy(epochs: int, training_size: int, seed: int = 0) -> dict:
    """Validation accuracy of ResNet-20 on Shapes under float32 and mixed_bfloat16 (xla)."""
    out = {}
    for name in ("float32", "mixed_bfloat16"):
        data = datasets.Shapes(batch_size=64, seed=seed, prefetch=False,
                               training_size=training_size)
        with s4tf.backend("xla"), s4tf.precision.policy(name):
            model = _resnet(data.num_classes, seed)
            loop = s4tf.TrainingLoop(training=data.training, validation=data.validation,
                                     optimizer=optimizers.Adam(model, learning_rate=2e-3),
                                     loss=s4tf.softmax_cross_entropy, progress=False,
                                     drop_remainder=True)
            start = time.perf_counter()
            loop.fit(model, epochs=epochs)
            seconds = time.perf_counter() - start
        out[name] = {"val_accuracy": round(loop.history[-1]["val_accuracy"], 4),
                     "seconds_per_epoch": round(seconds / epochs, 1)}
    out["difference_points"] = round(
        100 * (out["mixed_bfloat16"]["val_accuracy"] - out["float32"]["val_accuracy"]), 2)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="both", choices=("step_time", "accuracy", "both"))
    parser.add_argument("--backends", default="naive,xla")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--training-size", type=int, default=4000,
                        help="Shapes training images (examples/resnet_cifar.py's default)")
    parser.add_argument("--seed", type=int, default=0, help="initial weights, data and order")
    arguments = parser.parse_args(argv)
    report: dict = {}
    if arguments.part in ("step_time", "both"):
        report["step_time"] = {
            backend: step_time(backend, arguments.rounds, arguments.steps, arguments.batch)
            for backend in arguments.backends.split(",")}
    if arguments.part in ("accuracy", "both"):
        report["accuracy"] = {"epochs": arguments.epochs,
                              "training_size": arguments.training_size, "seed": arguments.seed,
                              **accuracy(arguments.epochs, arguments.training_size,
                                         arguments.seed)}
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
