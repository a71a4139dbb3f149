"""Per-example gradients of an MLP 784-256-10 at batch 64: ``vmap(gradient)`` against the alternatives.

Two rows of issue 21, one run, as JSON:

* ``naive``: ``s4tf.vmap`` of ``s4tf.gradient`` (one pass over the batch, each
  primitive's batching rule) against a Python loop of ``s4tf.gradient`` over
  the 64 examples, both on the naive NumPy backend. Target: vmap >= 10x faster.
* ``xla``: the same ``vmap(gradient)`` on the lazy xla backend (recorded, compiled
  once, then each step records and runs the cached program; ``s4tf.barrier()``
  and a read end each round) against ``jax.jit(jax.vmap(jax.grad(loss)))`` of
  the same network and weights. Target: s4tf's throughput >= 0.8x JAX's.

The network is ``Dense(784, 256, relu) -> Dense(256, 10)``, float32, with the
softmax cross-entropy of an int label; the gradient is the model's (a
``TangentVector`` whose leaves lead with the batch axis: ``(64, 784, 256)``...).
Both sides are checked to give the same numbers first, then run in alternating
rounds, so a slow spell of this shared machine hits both alike; the ratio is
the other side's time per step over vmap's (higher is better for vmap).

BLAS runs on one thread (``OPENBLAS_NUM_THREADS=1`` etc., unless already set):
on a shared machine a multi-threaded GEMM waits for cores others hold (a
(64, 784) @ (784, 256) product took 33 ms instead of 0.3 ms under load), which
would measure the machine, not the library; the loop's one-row products run on
one thread anyway.

    python benchmarks/per_example_gradients.py [--rounds 5] [--steps 10] [--rows naive,xla]
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before NumPy loads its BLAS

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import s4tf  # noqa: E402
from s4tf import layers  # noqa: E402

BATCH, SIZES = 64, (784, 256, 10)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    return x, y


def _model():
    s4tf.random.seed(0)
    return layers.Sequential(layers.Dense(SIZES[0], SIZES[1], activation=s4tf.relu),
                             layers.Dense(SIZES[1], SIZES[2]))


def per_example(model, x, y):
    """One example's gradient of its loss with respect to the model."""
    return s4tf.gradient(model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))


def _rounds(steps: int, rounds: int, sides: dict) -> dict:
    """Seconds per step of each side, per round; the sides alternate within each round."""
    times = {name: [] for name in sides}
    for step in sides.values():  # warm up (compiles)
        step()
    for _ in range(rounds):
        for name, step in sides.items():
            start = time.perf_counter()
            for _ in range(steps):
                step()
            times[name].append((time.perf_counter() - start) / steps)
    return times


def naive_row(steps: int, rounds: int) -> dict:
    with s4tf.backend("naive"):
        model = _model()
        xs, ys = _data()
        x, y = s4tf.Tensor(xs), s4tf.Tensor(ys)
        batched = s4tf.vmap(per_example, in_axes=(None, 0, 0))

        def vmapped():
            return batched(model, x, y)

        def loop():
            return [per_example(model, x[i], y[i]) for i in range(BATCH)]

        got, expected = vmapped(), loop()
        np.testing.assert_allclose(got.layers[0].weight[5].numpy(),
                                   expected[5].layers[0].weight.numpy(), rtol=1e-4, atol=1e-6)
        times = _rounds(steps, rounds, {"vmap": vmapped, "loop": loop})
    ratios = [t / v for v, t in zip(times["vmap"], times["loop"], strict=True)]
    return {
        "backend": "naive", "vmap_ms_per_step": [round(t * 1e3, 2) for t in times["vmap"]],
        "loop_ms_per_step": [round(t * 1e3, 2) for t in times["loop"]],
        "speedup_per_round": [round(r, 2) for r in ratios],
        "speedup_median": round(statistics.median(ratios), 2), "target": ">= 10",
    }


def _jax_step(model, jax, jnp):
    params = [np.asarray(p.numpy()) for dense in model.layers for p in (dense.weight, dense.bias)]
    params = [jnp.asarray(p) for p in params]

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        logits = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return -jax.nn.log_softmax(logits)[y]

    return params, jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))


def xla_row(steps: int, rounds: int) -> dict:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        return {"skipped": f"JAX is not installed ({error})"}
    xs, ys = _data()
    with s4tf.backend("xla"):
        model = s4tf.to_backend(_model(), "xla")
        x, y = s4tf.Tensor(xs), s4tf.Tensor(ys)
        batched = s4tf.vmap(per_example, in_axes=(None, 0, 0))
        state = {}

        def vmapped():
            state["grads"] = batched(model, x, y)
            s4tf.barrier()

        def read_s4tf():
            return state["grads"].layers[1].bias.numpy()

        params, jax_step = _jax_step(model, jax, jnp)
        jx, jy = jnp.asarray(xs), jnp.asarray(ys)

        def jax_run():
            state["jax"] = jax_step(params, jx, jy)

        def read_jax():
            return np.asarray(jax.block_until_ready(state["jax"])[3])

        vmapped(), jax_run()
        np.testing.assert_allclose(read_s4tf(), read_jax(), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(state["grads"].layers[0].weight.numpy(),
                                   np.asarray(state["jax"][0]), rtol=1e-4, atol=1e-6)
        sides = {"vmap": (vmapped, read_s4tf), "jax": (jax_run, read_jax)}
        times = {name: [] for name in sides}
        compiles = s4tf.xla.metrics()["compiles"]
        for _ in range(rounds):
            for name, (run, read) in sides.items():
                start = time.perf_counter()
                for _ in range(steps):
                    run()
                read()
                times[name].append((time.perf_counter() - start) / steps)
        new_compiles = s4tf.xla.metrics()["compiles"] - compiles
    ratios = [j / v for v, j in zip(times["vmap"], times["jax"], strict=True)]
    return {
        "backend": "xla", "jax": jax.__version__,
        "s4tf_ms_per_step": [round(t * 1e3, 2) for t in times["vmap"]],
        "jax_ms_per_step": [round(t * 1e3, 2) for t in times["jax"]],
        "throughput_ratio_per_round": [round(r, 3) for r in ratios],
        "throughput_ratio_median": round(statistics.median(ratios), 3),
        "compiles_while_timed": new_compiles, "target": ">= 0.8",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per timing round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--rows", default="naive,xla", help="comma-separated: naive, xla")
    args = parser.parse_args()
    rows = {"naive": naive_row, "xla": xla_row}
    result = {"model": "Dense(784, 256, relu) -> Dense(256, 10), softmax cross-entropy",
              "batch": BATCH, "dtype": "float32",
              "blas_threads": os.environ["OPENBLAS_NUM_THREADS"]}
    for name in args.rows.split(","):
        result[name] = rows[name](args.steps, args.rounds)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
