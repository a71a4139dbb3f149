"""LeNet-5 trained by ``s4tf.TrainingLoop`` on xla (captured and traced) next to ``jax.jit`` and PyTorch.

One run, as JSON (issue 24's "a user's own loop and ``TrainingLoop``" row).
LeNet-5 of ``lenet_step.py`` at batch 128, float32, NHWC, plain SGD, one fixed
batch served ``--steps`` times per epoch:

* ``loop_captured``: ``TrainingLoop(..., metrics=("loss",), progress=False)``
  on xla, its default (the step captured with ``s4tf.xla.compile``);
* ``loop_traced``: the same loop with ``capture=False`` (every step traced);
* ``jax``: ``xla_step.py``'s hand-written ``jax.jit`` step with donated
  parameters, in a Python loop;
* ``torch``: ``lenet_step.run_torch``'s PyTorch eager step, in a Python loop
  (skipped with a reason when PyTorch is missing).

Everything is warmed up (compiled) first, then run in alternating rounds of one
epoch (``--steps`` steps, ending in a read of the loss) for ``--rounds``
rounds, so a slow spell of this shared machine hits every side alike. Each
round gives a ratio of throughputs (``a/b``: higher is faster for ``a``); the
JSON gives every round's ratios and their range, and each side's main-thread
CPU time per step (the Python it costs; for PyTorch also its kernels' share on
that thread).

    python benchmarks/loop_step.py [--rounds 5] [--steps 20]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import lenet_step  # noqa: E402
import xla_step  # noqa: E402

import s4tf  # noqa: E402

BATCH = 128


def loop_runner(capture: bool, steps: int):
    """``run()``: one epoch of ``steps`` steps of ``TrainingLoop.fit``, the loss read at its end."""
    images, labels = lenet_step.batch(BATCH)
    with s4tf.backend("xla"):
        model = lenet_step.LeNet(**{k: s4tf.Tensor(v)
                                    for k, v in lenet_step.initial_weights().items()})
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
    loop = s4tf.TrainingLoop(
        training=[(x, y)] * steps, optimizer=s4tf.optimizers.SGD(model, learning_rate=lenet_step.LR),
        loss=lambda output, labels: -(s4tf.log_softmax(output) * labels).sum(axis=1).mean(),
        metrics=("loss",), progress=False, capture=capture)
    loop.model, model = model, None

    def run():
        # The loop holds the only reference: fit hands it back, and the loop keeps it.
        loop.fit(loop.model, epochs=1)  # the epoch's loss line reads the last step
        return loop.history[-1]["loss"]

    return run


def step_runner(make, steps: int):
    run_step, read = make(BATCH)

    def run():
        for _ in range(steps):
            run_step()
        return read()

    return run


def torch_runner(steps: int):
    images, labels = lenet_step.batch(BATCH)

    def run():
        return lenet_step.run_torch(images, labels, steps, warmup=0)["final_loss"]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    runners = {
        "loop_captured": loop_runner(True, args.steps),
        "loop_traced": loop_runner(False, args.steps),
        "jax": step_runner(xla_step.jax_lenet, args.steps),
    }
    results = {"batch": BATCH, "steps_per_round": args.steps, "rounds": args.rounds}
    try:
        import torch  # noqa: F401
        runners["torch"] = torch_runner(args.steps)
    except ImportError as error:
        results["torch"] = f"skipped: {error}"
    for run in runners.values():
        run()  # compiles (the capture and its checks too)
    seconds = {name: [] for name in runners}
    cpu = dict.fromkeys(runners, 0.0)
    for _ in range(args.rounds):
        for name, run in runners.items():
            start, thread = time.perf_counter(), time.thread_time()
            run()
            seconds[name].append(time.perf_counter() - start)
            cpu[name] += time.thread_time() - thread
    for name, times in seconds.items():
        # Main-thread CPU time: the Python a step costs (tracing, the loop's own work),
        # which the machine's load does not inflate as much as wall time.
        results[name] = {"ms_per_step": [round(1e3 * t / args.steps, 2) for t in times],
                         "main_thread_cpu_ms_per_step":
                             round(1e3 * cpu[name] / (args.rounds * args.steps), 3)}
    pairs = [("loop_captured", "jax"), ("loop_traced", "jax"), ("loop_captured", "loop_traced"),
             ("loop_captured", "torch"), ("loop_traced", "torch")]
    for a, b in pairs:
        if a in seconds and b in seconds:
            ratios = [tb / ta for ta, tb in zip(seconds[a], seconds[b], strict=True)]
            results[f"{a}/{b}"] = {"rounds": [round(r, 3) for r in ratios],
                                   "range": [round(min(ratios), 3), round(max(ratios), 3)]}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
