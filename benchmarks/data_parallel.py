"""Data-parallel step time on 1, 2, 4 and 8 simulated devices: s4tf DataParallel vs plain JAX sharding.

One run, side by side, as JSON. The devices are simulated on this machine's
CPU (``XLA_FLAGS=--xla_force_host_platform_device_count=8``, set here before
JAX starts), so they share its cores: this measures the overhead of s4tf's
distribution path (replicated parameters, sharded batches, the partitioned
step with its all-reduce) against the same step written directly with
``jax.jit`` and ``NamedSharding``, not a speed-up. Both sides train with plain
SGD on the same batch:

* ``lenet``: LeNet-5 at 28x28 (``benchmarks/lenet_step.py``'s model and its
  plain-JAX twin), batch 64;
* ``resnet20``: ``models.ResNet(depth=20, stem="cifar")`` at 32x32, batch 64,
  next to the Equinox ResNet-20 of ``benchmarks/zoo_step.py`` (when equinox is
  installed), jitted with the same shardings.

The ratio is s4tf's examples/s over JAX's at the same device count (1.0 = no
overhead). Usage: ``python benchmarks/data_parallel.py [--steps 10] [--warmup 3]
[--models lenet,resnet20] [--devices 1,2,4,8]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import argparse  # noqa: E402  (XLA_FLAGS must be set before JAX is imported)
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import s4tf  # noqa: E402
from s4tf import distributed  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lenet_step  # noqa: E402
import zoo_step  # noqa: E402

LEARNING_RATE = 0.01


def batch(model: str, size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    side, channels = (28, 1) if model == "lenet" else (32, 3)
    return (rng.uniform(size=(size, side, side, channels)).astype(np.float32),
            rng.integers(0, 10, size=size).astype(np.int32))


def run_s4tf(model_name: str, count: int, images, labels, steps: int, warmup: int) -> dict:
    with s4tf.backend("xla"):
        strategy = distributed.DataParallel(devices=count)
        s4tf.random.seed(0)
        if model_name == "lenet":
            model = lenet_step.LeNet(**{k: s4tf.Tensor(v)
                                        for k, v in lenet_step.initial_weights().items()})
        else:
            model = s4tf.models.ResNet(depth=20, classes=10, stem="cifar")
        model = strategy.replicate(model)
        x, y = strategy.shard((s4tf.Tensor(images), s4tf.Tensor(labels)))
        opt = s4tf.optimizers.SGD(model, learning_rate=LEARNING_RATE)
        loss, start = None, time.perf_counter()
        with s4tf.training():
            for i in range(warmup + steps):
                if i == warmup:
                    float(loss)
                    s4tf.xla.reset_metrics()
                    start = time.perf_counter()
                loss, grads = s4tf.value_with_gradient(
                    model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))
                model = opt.update(model, grads)
                del grads
                s4tf.barrier()
            float(loss)
        seconds = time.perf_counter() - start
        metrics = s4tf.xla.metrics()
        return {"examples_per_s": round(steps * len(images) / seconds, 1),
                "ms_per_step": round(1e3 * seconds / steps, 2),
                "compiles_after_warmup": metrics["compiles"],
                "collectives": list(metrics["collectives"])}


def run_jax(model_name: str, count: int, images, labels, steps: int, warmup: int) -> dict:
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:count]), ("data",))
    replicated, split = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("data"))
    x, y = jax.device_put(images, split), jax.device_put(labels, split)

    if model_name == "lenet":
        params = jax.device_put({k: jnp.asarray(v) for k, v in lenet_step.initial_weights().items()},
                                replicated)

        def loss_fn(p, x, y):
            logits = lenet_step.jax_forward(p, x)
            return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean()

        def step(p, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
            return jax.tree_util.tree_map(lambda a, g: a - LEARNING_RATE * g, p, grads), loss

        state = params
    else:
        import equinox as eqx

        model, bn_state = zoo_step.equinox_model_and_state(zoo_step.MODELS["resnet20"])
        params, static = eqx.partition(model, eqx.is_inexact_array)
        params, bn_state = jax.device_put((params, bn_state), replicated)
        x = jax.device_put(images.transpose(0, 3, 1, 2), split)

        def loss_fn(p, s, x, y):
            batched = jax.vmap(eqx.combine(p, static), axis_name="batch",
                               in_axes=(0, None), out_axes=(0, None))
            logits, s = batched(x, s)
            return -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1).mean(), s

        def step(state, x, y):
            p, s = state
            (loss, s), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, s, x, y)
            return (jax.tree_util.tree_map(lambda a, g: a - LEARNING_RATE * g, p, grads), s), loss

        state = (params, bn_state)
    # The batch is an argument, as s4tf's is (a closed-over array would be a constant).
    step = jax.jit(step, donate_argnums=0)
    loss, start = None, time.perf_counter()
    for i in range(warmup + steps):
        if i == warmup:
            float(loss)
            start = time.perf_counter()
        state, loss = step(state, x, y)
    float(loss)
    seconds = time.perf_counter() - start
    return {"examples_per_s": round(steps * len(images) / seconds, 1),
            "ms_per_step": round(1e3 * seconds / steps, 2)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="lenet,resnet20")
    parser.add_argument("--devices", default="1,2,4,8")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    arguments = parser.parse_args(argv)
    import jax

    report = {"note": "simulated CPU devices share this machine's cores: the ratios measure "
                      "s4tf's overhead next to plain JAX sharding, not a multi-device speed-up",
              "host_cores": os.cpu_count(), "xla_devices": len(jax.devices()), "results": {}}
    for name in arguments.models.split(","):
        images, labels = batch(name, arguments.batch)
        rows = {}
        for count in (int(c) for c in arguments.devices.split(",")):
            mine = run_s4tf(name, count, images, labels, arguments.steps, arguments.warmup)
            try:
                theirs = run_jax(name, count, images, labels, arguments.steps, arguments.warmup)
            except ImportError as error:   # equinox missing for the ResNet twin
                theirs = {"skipped": str(error)}
            row = {"s4tf": mine, "jax": theirs}
            if "examples_per_s" in theirs:
                row["ratio_s4tf_over_jax"] = round(mine["examples_per_s"] / theirs["examples_per_s"], 3)
            rows[str(count)] = row
            print(json.dumps({name: {str(count): row}}), flush=True)
        report["results"][name] = rows
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
