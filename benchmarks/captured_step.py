"""Captured xla steps (``s4tf.xla.compile``) next to uncaptured xla steps and plain ``jax.jit``.

One run, side by side, as JSON (benchmarks/README.md: performance claims live here,
never as timing assertions in tests). Each model trains on one fixed random
batch in float32, NHWC, in the training phase:

* ``lenet``: LeNet-5 of ``benchmarks/lenet_step.py``, batch 128, plain SGD;
* ``resnet20`` / ``resnet56``: ``s4tf.models.ResNet(depth=..., stem="cifar")``,
  batch 16 at 32x32, SGD with momentum 0.9 (BatchNorm statistics updated).

Frameworks, each warmed up (compiled) first and then timed in turn, ``--runs``
times, so every ratio comes from measurements taken side by side:

* ``s4tf_xla``: ``model = opt.update(model, grads)`` traced every step, then
  ``s4tf.barrier()`` (what ``TrainingLoop`` does);
* ``s4tf_captured``: the same step function under ``s4tf.xla.compile`` (the
  defaults: the capture and its checks on calls 2 and 3 fall in the
  ``--warmup`` of 3 steps, and the verification every 100th call inside the
  timed steps only when ``--steps`` reaches it);
* ``jax``: the same network in a hand-written ``jax.jit`` step with donated
  parameters and optimizer state (LeNet: ``lenet_step.run_jax``'s step; ResNet:
  the Equinox network of ``benchmarks/zoo_step.py`` under plain ``jax.jit``,
  skipped with a reason when Equinox is missing).

The JSON holds, per model and framework, examples/s of every run and the
ratios ``s4tf_captured/jax``, ``s4tf_xla/jax`` and ``s4tf_captured/s4tf_xla``
of each run, as their range and median over the runs (higher is faster for
the first name).

Usage: ``python benchmarks/captured_step.py [--models lenet,resnet20,resnet56]
[--runs 3] [--steps 10] [--warmup 3] [--batch 16] [--lenet-batch 128]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from lenet_step import LR as LENET_LR
from lenet_step import LeNet, batch, initial_weights, jax_forward
from zoo_step import LEARNING_RATE, MOMENTUM, equinox_model_and_state, random_batch

import s4tf

# --- s4tf -----------------------------------------------------------------------------------

def s4tf_problem(model_name: str, sizes: dict):
    """``(model, optimizer, x, y, loss_fn)`` on the xla backend."""
    with s4tf.backend("xla"):
        s4tf.random.seed(0)
        if model_name == "lenet":
            images, labels = batch(sizes["lenet_batch"])
            model = LeNet(**{k: s4tf.Tensor(v) for k, v in initial_weights().items()})
            x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
            opt = s4tf.optimizers.SGD(model, learning_rate=LENET_LR)

            def loss_fn(m, x, y):
                return -(s4tf.log_softmax(m(x)) * y).sum(axis=1).mean()
        else:
            images, labels = random_batch(sizes["batch"], 32)
            model = s4tf.models.ResNet(depth=int(model_name[6:]), classes=10, stem="cifar")
            x, y = s4tf.Tensor(images), s4tf.Tensor(labels)
            opt = s4tf.optimizers.SGD(model, learning_rate=LEARNING_RATE, momentum=MOMENTUM)

            def loss_fn(m, x, y):
                return s4tf.softmax_cross_entropy(logits=m(x), labels=y)
    return model, opt, x, y, loss_fn


def s4tf_runner(model_name: str, sizes: dict, captured: bool):
    """A function ``run(steps) -> seconds`` over one model that keeps training across calls."""
    model, opt, x, y, loss_fn = s4tf_problem(model_name, sizes)

    def train_step(model, x, y):
        with s4tf.training():
            loss, grads = s4tf.value_with_gradient(model, of=lambda m: loss_fn(m, x, y))
        return opt.update(model, grads), loss

    step = s4tf.xla.compile(train_step) if captured else train_step
    state = {"model": model, "loss": None}

    def run(steps: int) -> float:
        model, loss = state["model"], state["loss"]
        state["model"] = None  # the loop below holds the only reference (buffers are donated)
        start = time.perf_counter()
        for _ in range(steps):
            model, loss = step(model, x, y)
            if not captured:
                s4tf.barrier()
        float(loss)
        seconds = time.perf_counter() - start
        state["model"], state["loss"] = model, loss
        return seconds

    return run


# --- plain jax.jit --------------------------------------------------------------------------

def jax_runner(model_name: str, sizes: dict):
    import jax
    import jax.numpy as jnp

    if model_name == "lenet":
        images, labels = batch(sizes["lenet_batch"])
        x, y = jnp.asarray(images), jnp.asarray(labels)

        def loss_fn(p):
            return -(jax.nn.log_softmax(jax_forward(p, x)) * y).sum(axis=1).mean()

        def train_step(carry):
            params, _ = carry
            loss, grads = jax.value_and_grad(loss_fn)(params)
            return jax.tree_util.tree_map(lambda p, g: p - LENET_LR * g, params, grads), loss

        carry = ({k: jnp.asarray(v) for k, v in initial_weights().items()}, jnp.float32(0))
    else:
        import equinox as eqx

        model, bn_state = equinox_model_and_state({"kind": "resnet", "depth": int(model_name[6:])})
        params, static = eqx.partition(model, eqx.is_inexact_array)
        images, labels = random_batch(sizes["batch"], 32)
        x, y = jnp.asarray(images).transpose(0, 3, 1, 2), jnp.asarray(labels)

        def loss_fn(params, bn_state):
            net = jax.vmap(eqx.combine(params, static), axis_name="batch", in_axes=(0, None),
                           out_axes=(0, None))
            logits, bn_state = net(x, bn_state)
            losses = -jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1)
            return losses.mean(), bn_state

        def train_step(carry):
            (params, velocity, bn_state), _ = carry
            (loss, bn_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, bn_state)
            velocity = jax.tree_util.tree_map(lambda v, g: MOMENTUM * v - LEARNING_RATE * g,
                                              velocity, grads)
            params = jax.tree_util.tree_map(lambda p, v: p + v, params, velocity)
            return (params, velocity, bn_state), loss

        velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
        carry = ((params, velocity, bn_state), jnp.float32(0))

    step = jax.jit(train_step, donate_argnums=0)
    state = {"carry": carry}

    def run(steps: int) -> float:
        carry = state.pop("carry")
        start = time.perf_counter()
        for _ in range(steps):
            carry = step(carry)
        float(carry[1])
        seconds = time.perf_counter() - start
        state["carry"] = carry
        return seconds

    return run


def missing(framework: str) -> str | None:
    """Why ``framework`` cannot run here, or None."""
    for module in ("jax",) + (("equinox",) if framework == "jax_resnet" else ()):
        try:
            __import__(module)
        except ImportError as error:
            return f"not installed ({error})"
    return None


def measure(model_name: str, sizes: dict, runs: int, steps: int, warmup: int) -> dict:
    makers = {
        "s4tf_xla": lambda: s4tf_runner(model_name, sizes, captured=False),
        "s4tf_captured": lambda: s4tf_runner(model_name, sizes, captured=True),
        "jax": lambda: jax_runner(model_name, sizes),
    }
    result, runners = {}, {}
    for name, make in makers.items():
        reason = missing("jax_resnet" if name == "jax" and model_name != "lenet" else name)
        if reason:
            result[name] = {"skipped": reason}
            continue
        s4tf.xla.reset_metrics()
        runner = make()
        result[name] = {"first_steps_s": round(runner(warmup), 2), "examples_per_s": []}
        if name.startswith("s4tf"):
            result[name]["compiles"] = s4tf.xla.metrics()["compiles"]
        runners[name] = runner
    examples = sizes["lenet_batch"] if model_name == "lenet" else sizes["batch"]
    for _ in range(runs):
        for name, runner in runners.items():
            result[name]["examples_per_s"].append(round(steps * examples / runner(steps), 2))
    ratios = {}
    for mine, peer in (("s4tf_captured", "jax"), ("s4tf_xla", "jax"),
                       ("s4tf_captured", "s4tf_xla")):
        if mine in runners and peer in runners:
            each = [a / b for a, b in zip(result[mine]["examples_per_s"],
                                          result[peer]["examples_per_s"], strict=True)]
            ratios[f"{mine}/{peer}"] = {"range": [round(min(each), 3), round(max(each), 3)],
                                        "median": round(float(np.median(each)), 3)}
    result["ratios"] = ratios
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="lenet,resnet20,resnet56")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lenet-batch", type=int, default=128)
    arguments = parser.parse_args(argv)
    sizes = {"batch": arguments.batch, "lenet_batch": arguments.lenet_batch}
    report = {"runs": arguments.runs, "steps": arguments.steps, "batch": sizes, "results": {}}
    for name in arguments.models.split(","):
        report["results"][name] = measure(name, sizes, arguments.runs, arguments.steps,
                                          arguments.warmup)
        print(json.dumps({name: report["results"][name]}), flush=True)
    return report


if __name__ == "__main__":
    main()
