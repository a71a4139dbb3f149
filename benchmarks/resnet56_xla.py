"""ResNet-56 training step on xla next to PyTorch eager and Equinox, in interleaved rounds.

The issue-24 rows "ResNet-56 (CIFAR) training step, xla / PyTorch eager" at
batch 16 and 64, and "xla / Equinox". One run, as JSON (benchmarks/README.md:
performance claims live here, never as timing assertions in tests). Every side
trains ``s4tf.models.ResNet(depth=56, classes=10, stem="cifar")`` or its twin
on one random batch of 32x32x3 images, float32, training mode (BatchNorm batch
statistics), softmax cross-entropy, SGD with momentum 0.9:

* ``s4tf_xla``: a hand-written loop, ``opt.update`` traced every step, then
  ``s4tf.barrier()`` (``captured_step.s4tf_runner``);
* ``s4tf_captured``: the same step under ``s4tf.xla.compile``;
* ``torch``: PyTorch eager at its default threads (``resnet56_naive.TorchStep``,
  the network of ``zoo_step.torch_model``);
* ``equinox``: ``zoo_step.py``'s Equinox network in one plain ``jax.jit`` step
  with every buffer donated (``captured_step.jax_runner``).

Each side is warmed up (compiled) first; then ``--rounds`` rounds, each
running ``--steps`` steps of every side in turn, so a slow spell on this
shared machine hits all sides alike. The JSON holds per batch each side's
milliseconds per step (per round and the median) and, per round, the
throughput ratios s4tf / peer (above 1: s4tf is faster) with their range and
median; ``load_average`` is the machine's 1-minute load before and after.

``--sides`` picks some of the sides (all by default): on a loaded machine
PyTorch's two OpenMP threads slowed down 10x and more here, while the XLA sides
slow down about 2x.

    python benchmarks/resnet56_xla.py [--batch 16,64] [--rounds 5] [--steps 5] [--warmup 3]
        [--sides s4tf_xla,s4tf_captured,torch,equinox]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import zoo_step  # noqa: E402
from captured_step import jax_runner, missing, s4tf_runner  # noqa: E402

SIDES = ("s4tf_xla", "s4tf_captured", "torch", "equinox")
RATIOS = (("s4tf_xla", "torch"), ("s4tf_captured", "torch"),
          ("s4tf_xla", "equinox"), ("s4tf_captured", "equinox"))


def torch_runner(batch: int):
    """``run(steps) -> seconds`` of the PyTorch eager twin at PyTorch's default threads."""
    import time

    import torch
    from resnet56_naive import TorchStep

    images, labels = zoo_step.random_batch(batch, zoo_step.MODELS["resnet56"]["size"])
    step = TorchStep(torch, images, labels)

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return time.perf_counter() - start

    return run


def runners(batch: int, sides=SIDES) -> tuple[dict, dict]:
    """The chosen sides that can run here, and why the others cannot."""
    sizes = {"batch": batch}
    makers = {
        "s4tf_xla": lambda: s4tf_runner("resnet56", sizes, captured=False),
        "s4tf_captured": lambda: s4tf_runner("resnet56", sizes, captured=True),
        "torch": lambda: torch_runner(batch),
        "equinox": lambda: jax_runner("resnet56", sizes),
    }
    reasons = {"s4tf_xla": missing("s4tf_xla"), "s4tf_captured": missing("s4tf_captured"),
               "equinox": missing("jax_resnet")}
    try:
        import torch  # noqa: F401
    except ImportError as error:
        reasons["torch"] = f"not installed ({error})"
    made = {name: make() for name, make in makers.items()
            if name in sides and not reasons.get(name)}
    return made, {name: reason for name, reason in reasons.items() if reason and name in sides}


def measure(batch: int, rounds: int, steps: int, warmup: int, chosen=SIDES) -> dict:
    sides, skipped = runners(batch, chosen)
    result = {"batch": batch, "load_average": [round(os.getloadavg()[0], 2)],
              "first_steps_s": {name: round(run(warmup), 2) for name, run in sides.items()}}
    ms = {name: [] for name in sides}
    for _ in range(rounds):
        for name, run in sides.items():
            ms[name].append(1e3 * run(steps) / steps)
    result["load_average"].append(round(os.getloadavg()[0], 2))
    result["ms_per_step"] = {name: {"median": round(statistics.median(times), 2),
                                    "rounds": [round(t, 2) for t in times]}
                             for name, times in ms.items()}
    ratios = {}
    for mine, peer in RATIOS:
        if mine in ms and peer in ms:
            each = [b / a for a, b in zip(ms[mine], ms[peer], strict=True)]
            ratios[f"{mine}/{peer}"] = {"median": round(statistics.median(each), 3),
                                        "range": [round(min(each), 3), round(max(each), 3)]}
    result["ratios"] = ratios
    result["skipped"] = skipped
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="16,64", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="steps per side and round")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed first steps per side (compiles and the capture's checks)")
    parser.add_argument("--sides", default=",".join(SIDES),
                        help="comma-separated, of " + ", ".join(SIDES))
    args = parser.parse_args(argv)
    chosen = tuple(args.sides.split(","))
    unknown = sorted(set(chosen) - set(SIDES))
    if unknown:
        parser.error(f"--sides: unknown {unknown}; choose from {', '.join(SIDES)}")
    reason = missing("s4tf_xla")
    if reason:
        report = {"skipped": f"the xla backend needs JAX: {reason}"}
        print(json.dumps(report))
        return report
    report = {}
    for batch in (int(b) for b in args.batch.split(",")):
        report[f"batch_{batch}"] = measure(batch, args.rounds, args.steps, args.warmup, chosen)
        print(json.dumps({f"batch_{batch}": report[f"batch_{batch}"]}), flush=True)
    return report


if __name__ == "__main__":
    main()
