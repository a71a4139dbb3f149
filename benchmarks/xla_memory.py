"""Resident memory of the lazy xla backend over many LeNet-5 training steps: is it flat?

Trains LeNet-5 (``lenet_step.py``'s network, batch 128) through
``optimizers.SGD`` with ``model = opt.update(model, grads)`` (or
``--update moved``: ``model.moved(along=grads * -lr)``) and ``s4tf.barrier()``
after each step, as a training loop does (``--read-loss`` also reads the loss
every step), and samples the
process's resident set size every ``--every`` steps after a warm-up. The
slope of a least-squares line through the samples is the growth per step
(target: 0, i.e. within the noise of a few hundred bytes); the median of the
pairwise slopes is reported too, since the allocator sometimes keeps one
step's worth of buffers more from some point on (a single jump of a few MiB,
not a growth per step), which tilts a least-squares line. ``--tracemalloc``
also reports the Python allocations that grew most between the first and the
last sample (slower: every allocation is traced), which is how a leak is
found. Prints JSON.

    python benchmarks/xla_memory.py [--steps 2000] [--every 100] [--tracemalloc]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tracemalloc

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import lenet_step  # noqa: E402  (the benchmark's own LeNet-5)

import s4tf  # noqa: E402


def resident_bytes() -> int:
    """The resident set size of this process (Linux /proc; ``ru_maxrss`` elsewhere is a peak)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def slope(xs, ys) -> float:
    """Least-squares slope of ``ys`` over ``xs``."""
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def median_slope(xs, ys) -> float:
    """The median of the slopes between every pair of samples (Theil-Sen): one jump moves it little."""
    pairs = [(ys[j] - ys[i]) / (xs[j] - xs[i])
             for i in range(len(xs)) for j in range(i + 1, len(xs))]
    return float(np.median(pairs))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--update", choices=("sgd", "moved"), default="sgd",
                        help="opt.update(model, grads), or model.moved(along=grads * -lr)")
    parser.add_argument("--read-loss", action="store_true",
                        help="read the loss (float) after every step, as a logging loop does")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args(argv)

    images, labels = lenet_step.batch(args.batch)
    with s4tf.backend("xla"):
        model = lenet_step.LeNet(**{k: s4tf.Tensor(v) for k, v in lenet_step.initial_weights().items()})
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
    opt = s4tf.optimizers.SGD(model, learning_rate=lenet_step.LR)

    def loss_fn(m):
        return -(s4tf.log_softmax(m(x)) * y).sum(axis=1).mean()

    steps, rss, first_snapshot, loss = [], [], None, None
    for i in range(args.warmup + args.steps + 1):
        if i >= args.warmup and (i - args.warmup) % args.every == 0:
            float(loss)  # the step has finished: no buffers in flight
            if args.tracemalloc and first_snapshot is None:
                tracemalloc.start(8)
            steps.append(i - args.warmup)
            rss.append(resident_bytes())
            if args.tracemalloc and first_snapshot is None:
                first_snapshot = tracemalloc.take_snapshot()
        if i == args.warmup + args.steps:
            break
        loss, grads = s4tf.value_with_gradient(model, of=loss_fn)
        model = opt.update(model, grads) if args.update == "sgd" else model.moved(
            along=grads * -lenet_step.LR)
        del grads
        s4tf.barrier()
        if args.read_loss:
            float(loss)

    report = {
        "steps": args.steps, "batch": args.batch, "update": args.update,
        "read_loss": args.read_loss,
        "rss_start_mib": round(rss[0] / 2**20, 2), "rss_end_mib": round(rss[-1] / 2**20, 2),
        "rss_bytes_per_step": round(slope(steps, rss), 1),
        "rss_bytes_per_step_second_half": round(slope(steps[len(steps) // 2:],
                                                      rss[len(rss) // 2:]), 1),
        "rss_bytes_per_step_median": round(median_slope(steps, rss), 1),
        "largest_jump_mib": round(max(np.diff(rss), default=0) / 2**20, 2),
        "compiles": s4tf.xla.metrics()["compiles"],
    }
    if args.tracemalloc:
        grown = tracemalloc.take_snapshot().compare_to(first_snapshot, "traceback")
        report["python_bytes_per_step"] = round(sum(s.size_diff for s in grown) / args.steps, 1)
        report["top_growth"] = [
            {"bytes": s.size_diff, "count": s.count_diff,
             "where": [f"{f.filename}:{f.lineno}" for f in s.traceback][-4:]}
            for s in grown[:8]
        ]
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
