"""Per-example gradients of an MLP 784-256-10: ``vmap(gradient)`` against the alternatives.

Two rows of issue 21, one run, as JSON:

* ``naive``: ``s4tf.vmap`` of ``s4tf.gradient`` (one pass over the batch, each
  primitive's batching rule) next to a Python loop of ``s4tf.gradient`` over
  the examples, both on the naive NumPy backend. Target: vmap >= 10x faster.
* ``xla``: the same ``vmap(gradient)`` on the lazy xla backend (recorded,
  compiled once, then each step records and runs the cached program) next to
  ``jax.jit(jax.vmap(jax.grad(loss)))`` of the same network and weights, each
  step read back. Target: s4tf's throughput >= 0.8x JAX's.

The network is ``Dense(784, 256, relu) -> Dense(256, 10)``, float32, at batch
64, with the softmax cross-entropy of an int label; the gradient is the
model's (a ``TangentVector`` whose leaves lead with the batch axis: the first
weight's is ``(64, 784, 256)``). Both sides are checked to give the same
numbers first, then take turns step by step (:mod:`side_by_side`); each run's
ratio is the peer's median step time over vmap's (above 1: vmap is faster).

BLAS runs on one thread unless ``--threads`` says otherwise: on a shared
machine a multi-threaded GEMM waits for cores others hold (a (64, 784) @ (784,
256) product took 33 ms instead of 0.3 ms under load), which measures the
machine, not the library; the loop's one-row products run on one thread anyway.

    python benchmarks/per_example_gradients.py [--batch 64] [--steps 10] [--runs 3] [--threads 1]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from side_by_side import arguments, blas_threads, compare  # noqa: E402

if blas_threads(sys.argv).startswith("OpenBLAS default"):
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before NumPy loads its BLAS

import json  # noqa: E402

import numpy as np  # noqa: E402

import s4tf  # noqa: E402
from s4tf import layers  # noqa: E402

SIZES = (784, 256, 10)


def data(batch: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], batch).astype(np.int32)
    return x, y


def model():
    s4tf.random.seed(0)
    return layers.Sequential(layers.Dense(SIZES[0], SIZES[1], activation=s4tf.relu),
                             layers.Dense(SIZES[1], SIZES[2]))


def per_example(model, x, y):
    """One example's gradient of its loss with respect to the model."""
    return s4tf.gradient(model, of=lambda m: s4tf.softmax_cross_entropy(logits=m(x), labels=y))


def naive_row(batch: int, steps: int, runs: int) -> dict:
    with s4tf.backend("naive"):
        net = model()
        xs, ys = data(batch)
        x, y = s4tf.Tensor(xs), s4tf.Tensor(ys)
        batched = s4tf.vmap(per_example, in_axes=(None, 0, 0))

        def vmapped():
            return batched(net, x, y)

        def loop():
            return [per_example(net, x[i], y[i]) for i in range(batch)]

        got, expected = vmapped(), loop()
        for i in (0, batch - 1):
            np.testing.assert_allclose(got.layers[0].weight[i].numpy(),
                                       expected[i].layers[0].weight.numpy(), rtol=1e-4, atol=1e-6)
        result = compare(vmapped, loop, steps=steps, runs=runs)
    return {"backend": "naive", "peer": "Python loop of s4tf.gradient", **result,
            "target": ">= 10"}


def jax_step(net, jax, jnp):
    """``jax.jit(jax.vmap(jax.grad(loss)))`` of the same network, and its parameters."""
    params = [jnp.asarray(np.asarray(p.numpy()))
              for dense in net.layers for p in (dense.weight, dense.bias)]

    def loss(params, x, y):
        w1, b1, w2, b2 = params
        logits = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return -jax.nn.log_softmax(logits)[y]

    return params, jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))


def xla_row(batch: int, steps: int, runs: int) -> dict:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as error:
        return {"skipped": f"JAX is not installed ({error})"}
    xs, ys = data(batch)
    with s4tf.backend("xla"):
        net = s4tf.to_backend(model(), "xla")
        x, y = s4tf.Tensor(xs), s4tf.Tensor(ys)
        batched = s4tf.vmap(per_example, in_axes=(None, 0, 0))
        params, step = jax_step(net, jax, jnp)
        jx, jy = jnp.asarray(xs), jnp.asarray(ys)

        def vmapped():
            grads = batched(net, x, y)
            s4tf.barrier()
            return grads.layers[0].weight.numpy()  # waits for the step

        def jax_run():
            return np.asarray(jax.block_until_ready(step(params, jx, jy))[0])

        np.testing.assert_allclose(vmapped(), jax_run(), rtol=1e-4, atol=1e-6)
        compiles = s4tf.xla.metrics()["compiles"]
        result = compare(vmapped, jax_run, steps=steps, runs=runs)
        result["compiles_while_timed"] = s4tf.xla.metrics()["compiles"] - compiles
    return {"backend": "xla", "peer": "jax.jit(jax.vmap(jax.grad(loss)))", "jax": jax.__version__,
            **result, "target": ">= 0.8"}


def main() -> None:
    args = arguments(__doc__.splitlines()[0], batch=64, steps=10,
                     threads="OpenBLAS threads for both sides (default 1; see the docstring)")
    result = {"model": "Dense(784, 256, relu) -> Dense(256, 10), softmax cross-entropy",
              "batch": args.batch, "dtype": "float32",
              "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
              "naive": naive_row(args.batch, args.steps, args.runs),
              "xla": xla_row(args.batch, args.steps, args.runs)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
