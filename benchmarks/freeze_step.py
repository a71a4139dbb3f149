"""Fine-tuning step time: a backbone frozen with s4tf.freeze vs. left out with trainable=.

``s4tf.freeze`` makes the backbone's parameters constants to differentiation,
so the backward pass stops at the head; ``trainable=`` on the optimizer only
skips their update (their gradients are still computed). Both are timed next
to training everything, on one random batch, Adam, training mode, as JSON:
milliseconds per step (the fastest of ``--steps``, the three interleaved) and
each one's ratio to the full step.

Usage: ``python benchmarks/freeze_step.py [--backend naive] [--width 32] [--size 64]
[--batch 16] [--steps 5] [--warmup 2]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import s4tf
from s4tf import models, optimizers

BACKBONE = ("conv1", "bn1", "blocks")


class _Run:
    """One configuration's model and optimizer, stepped one step at a time."""

    def __init__(self, model, optimizer, x, y):
        self.model, self.optimizer, self.times = model, optimizer, []
        self.loss = lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y)

    def step(self, timed: bool) -> None:
        start = time.perf_counter()
        with s4tf.training():
            _, grads = s4tf.value_with_gradient(self.model, of=self.loss)
            self.model = self.optimizer.update(self.model, grads)
        s4tf.barrier()
        float(self.model.fc.bias.numpy()[0])  # wait for the step (lazy backends)
        if timed:
            self.times.append(time.perf_counter() - start)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="naive", choices=("naive", "xla"))
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    arguments = parser.parse_args(argv)
    s4tf.set_backend(arguments.backend)
    s4tf.random.seed(0)
    rng = np.random.default_rng(0)
    x = s4tf.Tensor(rng.random((arguments.batch, arguments.size, arguments.size, 3), np.float32))
    y = s4tf.Tensor(rng.integers(0, 10, arguments.batch).astype(np.int32))

    def fresh():
        return models.ResNet(depth=18, width=arguments.width, classes=10)

    full, frozen, masked = fresh(), s4tf.freeze(fresh(), *BACKBONE), fresh()
    runs = {"full": _Run(full, optimizers.Adam(full), x, y),
            "freeze": _Run(frozen, optimizers.Adam(frozen), x, y),
            "trainable": _Run(masked, optimizers.Adam(masked, trainable=["fc"]), x, y)}
    del full, frozen, masked  # the runs hold the only references: updates stay in place
    # Interleaved, one step of each per round, and the fastest step of each kept: on a
    # shared machine the others' load comes and goes within a run.
    for i in range(arguments.warmup + arguments.steps):
        for run in runs.values():
            run.step(timed=i >= arguments.warmup)
    results = {name: min(run.times) * 1e3 for name, run in runs.items()}
    report = {
        "model": f"ResNet-18 width {arguments.width}, {arguments.size}x{arguments.size}, "
                 f"batch {arguments.batch}",
        "backend": arguments.backend,
        "ms_per_step": {k: round(v, 1) for k, v in results.items()},
        "ratio_to_full": {k: round(v / results["full"], 3) for k, v in results.items()},
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
