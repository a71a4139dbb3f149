"""Training steps of the lazy xla backend next to the same step in plain ``jax.jit``, interleaved.

Two rows of issue 14, one run, as JSON:

* ``lenet``: LeNet-5 at batch 128 (``lenet_step.py``'s network), s4tf xla with
  ``model.moved(along=grads * -lr)`` and ``s4tf.barrier()`` per step, next to a
  hand-written ``jax.jit`` SGD step with donated parameters;
* ``resnet56``: ``models.ResNet(depth=56, stem="cifar")`` at batch 64 (32x32),
  SGD with momentum 0.9 through ``opt.update``, next to its plain-JAX twin
  (``zoo_step.jax_resnet``: the same convolutions, BatchNorm with running
  statistics, one ``jax.jit`` step, every buffer donated).

Both sides are warmed up (compiled), then run in alternating rounds of
``--steps`` steps each (s4tf, JAX, s4tf, JAX, ...), each round ending by
reading the loss, so a slow spell on this shared machine hits both sides
alike. The ratio is JAX's time / s4tf's time per round (s4tf's throughput
relative to JAX: higher is faster for s4tf); the JSON gives every round's
ratio, their range and the ratio of the totals. s4tf's main-thread CPU time
per step (recording and graph building, which overlaps the device's work) and
its graph nodes per step are reported too.

    python benchmarks/xla_step.py [--models lenet,resnet56] [--rounds 5] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import lenet_step  # noqa: E402
import zoo_step  # noqa: E402

import s4tf  # noqa: E402


def s4tf_lenet(batch: int):
    """``step()`` of s4tf xla LeNet-5 (``moved(along:)``) and ``read()`` of its last loss."""
    images, labels = lenet_step.batch(batch)
    with s4tf.backend("xla"):
        model = lenet_step.LeNet(**{k: s4tf.Tensor(v)
                                    for k, v in lenet_step.initial_weights().items()})
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
    state = {"model": model, "loss": None}
    del model

    def loss_fn(m):
        return -(s4tf.log_softmax(m(x)) * y).sum(axis=1).mean()

    # The model is held by one name only, so its old buffers are donated.
    def run_step():
        model = state.pop("model")
        loss, grads = s4tf.value_with_gradient(model, of=loss_fn)
        model = model.moved(along=grads * -lenet_step.LR)
        del grads
        s4tf.barrier()
        state["model"], state["loss"] = model, loss

    return run_step, lambda: float(state["loss"])


def jax_lenet(batch: int):
    import jax
    import jax.numpy as jnp

    images, labels = lenet_step.batch(batch)
    x, y = jnp.asarray(images), jnp.asarray(labels)

    def loss_fn(p):
        return -(jax.nn.log_softmax(lenet_step.jax_forward(p, x)) * y).sum(axis=1).mean()

    def step(p):
        loss, g = jax.value_and_grad(loss_fn)(p)
        return jax.tree_util.tree_map(lambda a, b: a - lenet_step.LR * b, p, g), loss

    step = jax.jit(step, donate_argnums=0)
    state = {"params": {k: jnp.asarray(v) for k, v in lenet_step.initial_weights().items()}}

    def run_step():
        state["params"], state["loss"] = step(state.pop("params"))

    return run_step, lambda: float(state["loss"])


def s4tf_resnet(batch: int):
    images, labels = zoo_step.random_batch(batch, 32)
    spec = zoo_step.MODELS["resnet56"]
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        model = zoo_step.s4tf_model(spec)
        x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
        opt = s4tf.optimizers.SGD(model, learning_rate=zoo_step.LEARNING_RATE,
                                  momentum=zoo_step.MOMENTUM)
    state = {"model": model, "loss": None}
    del model

    def loss_fn(m):
        return s4tf.softmax_cross_entropy(logits=m(x), labels=y)

    def run_step():
        model = state.pop("model")
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(model, of=loss_fn)
        model = opt.update(model, grads)
        del grads
        s4tf.barrier()
        state["model"], state["loss"] = model, loss

    return run_step, lambda: float(state["loss"])


def jax_resnet(batch: int):
    images, labels = zoo_step.random_batch(batch, 32)
    step, arguments = zoo_step.jax_training_step(zoo_step.MODELS["resnet56"], images, labels)
    state = {"args": arguments}

    def run_step():
        *args, state["loss"] = step(*state.pop("args"))
        state["args"] = tuple(args)

    return run_step, lambda: float(state["loss"])


MODELS = {
    "lenet": {"batch": 128, "s4tf": s4tf_lenet, "jax": jax_lenet},
    "resnet56": {"batch": 64, "s4tf": s4tf_resnet, "jax": jax_resnet},
}


def _first(run_step, read) -> float:
    start = time.perf_counter()
    run_step()
    read()
    return time.perf_counter() - start


def _round(run_step, read, steps: int) -> tuple[float, float]:
    """Wall seconds of ``steps`` steps ending with a read, and the main thread's CPU seconds."""
    start, cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        run_step()
    read()
    return time.perf_counter() - start, time.thread_time() - cpu


def compare(name: str, rounds: int, steps: int, warmup: int, batch: int | None) -> dict:
    spec = MODELS[name]
    batch = batch or spec["batch"]
    mine, peer = spec["s4tf"](batch), spec["jax"](batch)
    s4tf.xla.reset_metrics()
    first = {"s4tf_s": round(_first(*mine), 3), "jax_s": round(_first(*peer), 3)}
    for _ in range(warmup - 1):
        _first(*mine)
        _first(*peer)
    before = s4tf.xla.metrics()
    ratios, totals, cpu = [], [0.0, 0.0], 0.0
    for _ in range(rounds):
        s4tf_s, s4tf_cpu = _round(*mine, steps)
        jax_s, _ = _round(*peer, steps)
        ratios.append(jax_s / s4tf_s)
        totals[0] += s4tf_s
        totals[1] += jax_s
        cpu += s4tf_cpu
    after = s4tf.xla.metrics()
    measured = rounds * steps
    return {
        "batch": batch, "rounds": rounds, "steps_per_round": steps,
        "ratio_s4tf_vs_jax": round(totals[1] / totals[0], 3),
        "round_ratios": [round(r, 3) for r in ratios],
        "round_ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "s4tf_ms_per_step": round(1e3 * totals[0] / measured, 2),
        "jax_ms_per_step": round(1e3 * totals[1] / measured, 2),
        "s4tf_main_thread_cpu_ms_per_step": round(1e3 * cpu / measured, 2),
        "graph_nodes_per_step": (after["traced_ops"] - before["traced_ops"]) / measured,
        "compiles_while_measured": after["compiles"] - before["compiles"],
        "first_step": first,
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--batch", type=int, default=None, help="default: 128 LeNet, 64 ResNet")
    args = parser.parse_args(argv)
    return each_model(args.models.split(","), lambda name: compare(
        name, args.rounds, args.steps, args.warmup, args.batch))


def each_model(names, measure) -> dict:
    """``{name: measure(name)}``, each printed as a JSON line when done; skipped without JAX."""
    try:
        import jax  # noqa: F401
    except ImportError as error:
        report = {"skipped": f"jax is not installed ({error})"}
        print(json.dumps(report))
        return report
    report = {}
    for name in names:
        report[name] = measure(name)
        print(json.dumps({name: report[name]}), flush=True)
    return report


if __name__ == "__main__":
    main()
