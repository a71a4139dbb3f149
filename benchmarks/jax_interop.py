"""s4tf through JAX: a jitted ResNet-20 step next to its Equinox twin, to_jax, and DLPack.

Three measurements, side by side in one run, printed as JSON:

* ``resnet20_jit``: one ResNet-20 (CIFAR, 32x32) training step, SGD with
  momentum, batch ``--batch``: the s4tf model passed through ``jax.jit`` and
  ``jax.value_and_grad`` (s4tf ops on JAX tracers: the ``jax`` backend) next to
  ``zoo_step.py``'s Equinox twin, both jitted with every buffer donated, in
  rounds that alternate the two. ``ratio`` is s4tf's throughput over
  Equinox's (the target: at least 0.95).
* ``to_jax_100m``: ``s4tf.to_jax`` of a 100 M-parameter model on the xla
  backend: whether every array is the tensor's own buffer (no copy) and the
  time (target: < 10 ms).
* ``dlpack_400mb``: a 400 MB naive tensor to PyTorch and back
  (``torch.from_dlpack``, ``s4tf.from_dlpack``): whether the memory is the
  same (no copy) and the time (target: < 1 ms).

    python benchmarks/jax_interop.py [--batch 64] [--steps 5] [--warmup 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np

import s4tf

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import zoo_step  # noqa: E402  (the Equinox twin, batches and timing shared with zoo_step.py)


def s4tf_jit_step(spec: dict, images, labels):
    """The s4tf ResNet's SGD-momentum step under ``jax.jit``, and its first arguments."""
    import jax
    import jax.numpy as jnp

    with s4tf.backend("jax"):
        s4tf.random.seed(0)
        model = zoo_step.s4tf_model(spec)
        x, y = s4tf.Tensor(jnp.asarray(images)), s4tf.Tensor(jnp.asarray(labels))
        velocity = jax.tree_util.tree_map(jnp.zeros_like, model)

    def loss_fn(model):
        with s4tf.training():
            loss = s4tf.softmax_cross_entropy(logits=model(x), labels=y)
        # The model comes back too: its BatchNorm cells hold the new running statistics.
        return s4tf.to_jax(loss), model

    def step(model, velocity):
        (loss, model), grads = jax.value_and_grad(loss_fn, has_aux=True)(model)
        velocity = jax.tree_util.tree_map(
            lambda v, g: zoo_step.MOMENTUM * v - zoo_step.LEARNING_RATE * g, velocity, grads)
        model = jax.tree_util.tree_map(lambda p, v: p + v, model, velocity)
        return model, velocity, loss

    jitted = jax.jit(step, donate_argnums=(0, 1))

    def run(model, velocity):
        with s4tf.backend("jax"):  # the results stay JAX arrays (no host copy)
            return jitted(model, velocity)

    return run, (model, velocity)


def resnet20_jit(batch: int, steps: int, warmup: int, rounds: int) -> dict:
    spec = zoo_step.MODELS["resnet20"]
    images, labels = zoo_step.random_batch(batch, spec["size"])
    rows: dict = {"s4tf_jax_jit": [], "equinox": []}
    for _ in range(rounds):
        step, arguments = s4tf_jit_step(spec, images, labels)
        rows["s4tf_jax_jit"].append(zoo_step.timed_steps(step, arguments, batch, steps, warmup))
        rows["equinox"].append(zoo_step.run_equinox(spec, images, labels, steps, warmup))
    best = {name: max(row["examples_per_s"] for row in runs) for name, runs in rows.items()}
    return {"batch": batch, "steps": steps, "rounds": rounds, "runs": rows,
            "best_examples_per_s": best,
            "ratio": round(best["s4tf_jax_jit"] / best["equinox"], 3), "target_ratio": 0.95}


def to_jax_100m(repeats: int = 5) -> dict:
    s4tf.random.seed(0)
    with s4tf.backend("xla"):
        # 100 M parameters: ten 3,162 x 3,162 dense layers.
        model = s4tf.layers.Sequential(*[s4tf.layers.Dense(3162, 3162) for _ in range(10)])
    s4tf.barrier()
    parameters = s4tf.parameter_count(model)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        arrays = s4tf.to_jax(model)
        times.append(time.perf_counter() - start)
    tensors = s4tf.tree_leaves(model)
    leaves = __import__("jax").tree_util.tree_leaves(arrays)
    same = all(a is t._data.buffer for a, t in zip(leaves, tensors, strict=True))
    return {"parameters": parameters, "same_buffers": same,
            "median_ms": round(1e3 * statistics.median(times), 3), "target_ms": 10}


def dlpack_400mb(repeats: int = 20) -> dict:
    import torch

    tensor = s4tf.Tensor(np.ones(100_000_000, np.float32))  # 400 MB
    pointer = tensor._data.__array_interface__["data"][0]
    times, same = [], True
    for _ in range(repeats):
        start = time.perf_counter()
        back = s4tf.from_dlpack(torch.from_dlpack(tensor))
        times.append(time.perf_counter() - start)
        same &= back._data.__array_interface__["data"][0] == pointer
    return {"megabytes": tensor.size * 4 / 1e6, "same_memory": bool(same),
            "median_ms": round(1e3 * statistics.median(times), 4), "target_ms": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    report = {
        "dlpack_400mb": dlpack_400mb(),
        "to_jax_100m": to_jax_100m(),
        "resnet20_jit": resnet20_jit(args.batch, args.steps, args.warmup, args.rounds),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
