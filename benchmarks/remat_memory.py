"""Gradient checkpointing: memory and time of a deep MLP's gradient, with and without.

The model is 24 ``Dense(256, 256, activation=gelu)`` layers at batch 4096
(float32); one step is ``s4tf.value_with_gradient(model, of=mean squared
output)``. ``layers.Sequential(..., checkpoint=True)`` rematerialises each
layer (``s4tf.remat``): reverse mode keeps only the 24 layer inputs and
recomputes each layer's intermediates (the pre-activation and GELU's
temporaries) in the backward pass.

* naive: peak memory of one step (``tracemalloc``, which sees NumPy's
  allocations) and its time (the two variants take turns, ``--rounds`` times;
  the medians are compared). Targets: checkpointed / plain peak <= 0.5, time
  <= 1.5.
* xla: the compiled step's memory from XLA's own analysis of the program
  (``memory_analysis()`` of the lowered step, ``s4tf.xla.lower``'s program):
  its temporary buffers, the activations kept between the passes. Target:
  checkpointed / plain <= 0.5. For reference, the same network in plain JAX
  with and without ``jax.checkpoint`` on each layer.

Both variants compute the same gradients (checked before measuring). Prints
JSON.

    python benchmarks/remat_memory.py [--depth 24] [--width 256] [--batch 4096] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc

import numpy as np

import s4tf
from s4tf import layers


def _models(depth, width):
    s4tf.random.seed(0)
    plain = layers.Sequential([layers.Dense(width, width, activation=s4tf.gelu)
                               for _ in range(depth)])
    return plain, layers.Sequential(plain.layers, checkpoint=True)


def _loss(x):
    return lambda m: (m(x) ** 2).mean()


def _peak(model, x):
    tracemalloc.start()
    s4tf.value_with_gradient(model, of=_loss(x))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def _seconds(model, x):
    # CPU time of this process: on a shared machine, wall-clock time also counts the
    # time other processes held the cores.
    start = time.process_time()
    s4tf.value_with_gradient(model, of=_loss(x))
    return time.process_time() - start


def naive(depth, width, batch, rounds) -> dict:
    plain, checkpointed = _models(depth, width)
    x = s4tf.random.normal([batch, width])
    g_plain = s4tf.gradient(plain, of=_loss(x))
    g_ckpt = s4tf.gradient(checkpointed, of=_loss(x))
    for a, b in zip(s4tf.tree_leaves(g_plain), s4tf.tree_leaves(g_ckpt), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same arithmetic, bit for bit
    del g_plain, g_ckpt
    peaks = {"plain": _peak(plain, x), "checkpoint": _peak(checkpointed, x)}
    times = {"plain": [], "checkpoint": []}
    for _ in range(rounds):  # turns, so both see the same machine load
        times["plain"].append(_seconds(plain, x))
        times["checkpoint"].append(_seconds(checkpointed, x))
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {
        "peak_mib": {k: round(v / 2**20, 1) for k, v in peaks.items()},
        "peak_ratio": round(peaks["checkpoint"] / peaks["plain"], 3),
        "peak_target": 0.5,
        "cpu_seconds": {k: [round(t, 3) for t in v] for k, v in times.items()},
        "time_ratio": round(medians["checkpoint"] / medians["plain"], 3),
        "time_target": 1.5,
    }


def xla(depth, width, batch) -> dict:
    try:
        from s4tf.backends.xla.lowering import lowered
    except ImportError as error:
        return {"skipped": f"JAX is not installed ({error})"}
    plain, checkpointed = (s4tf.to_backend(m, "xla") for m in _models(depth, width))
    x = s4tf.to_backend(s4tf.random.normal([batch, width]), "xla")
    result, grads = {}, {}
    for name, model in (("plain", plain), ("checkpoint", checkpointed)):
        step = lowered(lambda m: s4tf.value_with_gradient(m, of=_loss(x)), model)
        analysis = step.compile().memory_analysis()
        result[name] = {"temp_mib": round(analysis.temp_size_in_bytes / 2**20, 1),
                        "barriers": step.as_text().count("optimization_barrier")}
        grads[name] = s4tf.gradient(model, of=_loss(x)).layers[0].weight.numpy()
    np.testing.assert_allclose(grads["plain"], grads["checkpoint"], rtol=1e-5, atol=1e-7)
    result["temp_ratio"] = round(result["checkpoint"]["temp_mib"] / result["plain"]["temp_mib"], 3)
    result["temp_target"] = 0.5
    result["jax_reference"] = _jax_reference(plain, x)
    return result


def _jax_reference(model, x) -> dict:
    """The same network in plain JAX, with and without ``jax.checkpoint`` on each layer."""
    import jax
    import jax.numpy as jnp

    params = [(jnp.asarray(d.weight.numpy()), jnp.asarray(d.bias.numpy())) for d in model.layers]
    xs = jnp.asarray(x.numpy())

    def layer(p, h):
        return jax.nn.gelu(h @ p[0] + p[1], approximate=True)  # s4tf.gelu: the tanh form

    def loss(params, layer_fn):
        h = xs
        for p in params:
            h = layer_fn(p, h)
        return (h ** 2).mean()

    out = {}
    for name, fn in (("plain", layer), ("checkpoint", jax.checkpoint(layer))):
        step = jax.jit(jax.value_and_grad(lambda ps, fn=fn: loss(ps, fn)))
        out[name + "_temp_mib"] = round(
            step.lower(params).compile().memory_analysis().temp_size_in_bytes / 2**20, 1)
    out["temp_ratio"] = round(out["checkpoint_temp_mib"] / out["plain_temp_mib"], 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=24)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds (naive)")
    args = parser.parse_args()
    result = {"model": f"{args.depth} x Dense({args.width}, {args.width}, gelu), MSE",
              "batch": args.batch, "dtype": "float32",
              "naive": naive(args.depth, args.width, args.batch, args.rounds),
              "xla": xla(args.depth, args.width, args.batch)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
