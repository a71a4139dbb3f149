"""Embedding on the lazy xla backend: what the host index check would cost per step.

One "step" looks up a batch of token indices computed by an op (so pending,
as after on-device preprocessing) and calls ``s4tf.barrier()``. ``unchecked``
is ``layers.Embedding`` as it is (no host read on lazy tensors); ``checked``
adds the eager backends' range check (``int(indices.min())``, ``int(max())``),
which forces the pending graph to run before the barrier. Prints one JSON
object with graph executions per step and the time ratio checked / unchecked.

Run: ``python benchmarks/embedding_lazy.py [--steps N]``.
"""

from __future__ import annotations

import argparse
import json
import time

import s4tf
from s4tf import layers


def _step_time(embed, indices, steps: int, check: bool) -> tuple[float, float]:
    def step():
        pending = indices + 0
        if check:
            int(pending.min()), int(pending.max())
        embed(pending)
        s4tf.barrier()

    for _ in range(5):  # compile and warm the cache
        step()
    s4tf.xla.reset_metrics()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    elapsed = (time.perf_counter() - start) / steps
    return elapsed, s4tf.xla.metrics()["executions"] / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        embed = layers.Embedding(vocabulary_size=10_000, embedding_size=128)
        indices = s4tf.random.randint(0, 10_000, shape=(64, 128), seed=0)
        unchecked = _step_time(embed, indices, args.steps, check=False)
        checked = _step_time(embed, indices, args.steps, check=True)
    print(json.dumps({
        "batch": [64, 128], "embedding": [10_000, 128], "steps": args.steps,
        "unchecked": {"seconds_per_step": unchecked[0], "executions_per_step": unchecked[1]},
        "checked": {"seconds_per_step": checked[0], "executions_per_step": checked[1]},
        "checked_over_unchecked": checked[0] / unchecked[0],
    }, indent=2))


if __name__ == "__main__":
    main()
