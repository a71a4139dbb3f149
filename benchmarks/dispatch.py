"""Per-op cost of small ops on the naive backend vs raw NumPy, outside and inside AD.

Ops: a 4-element add, and a 64-wide MLP layer ``relu(x @ W + b)`` (relu via
``s4tf.maximum``). Inside AD the cost is ``value_with_gradient`` of the op (and
a sum) amortised per op of the forward pass. Targets: <= 3x raw NumPy outside
AD, <= 10x inside (the NumPy reference inside AD is the hand-written forward
and backward pass). ``dense_model_64`` is the MLP layer as a ``layers.Dense``
model differentiated as one Differentiable value (flattening the model and
rebuilding its TangentVector included), inside AD only. Prints JSON; no asserts.
``--clock cpu`` times this process's CPU time instead of wall-clock time: on a
shared machine it leaves out the time other processes held the core.

    python benchmarks/dispatch.py [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import json
import time
import timeit

import numpy as np

import s4tf

_CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def run(number: int, clock: str = "wall") -> dict:
    def _per_call(fn, number: int) -> float:
        return min(timeit.repeat(fn, number=number, repeat=5, timer=_CLOCKS[clock])) / number

    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    x_np = rng.standard_normal((1, 64)).astype(np.float32)
    w_np = rng.standard_normal((64, 64)).astype(np.float32)
    bias_np = rng.standard_normal(64).astype(np.float32)
    a, b = s4tf.Tensor(a_np), s4tf.Tensor(b_np)
    x, w, bias = s4tf.Tensor(x_np), s4tf.Tensor(w_np), s4tf.Tensor(bias_np)

    def layer(x, w, bias):
        return s4tf.maximum(x @ w + bias, 0.0)

    dense = s4tf.layers.Dense(64, 64, activation=s4tf.relu)
    dense = s4tf.replace(dense, weight=w, bias=bias)

    def numpy_layer_grad():
        # Forward and hand-written backward of sum(relu(x @ W + b)) w.r.t. W and b.
        h = x_np @ w_np + bias_np
        out = np.maximum(h, 0.0)
        g = (h >= 0).astype(np.float32)
        return out.sum(), x_np.T @ g, g.sum(0)

    results = {
        "add4": {
            "numpy_seconds": _per_call(lambda: a_np + b_np, number),
            "s4tf_seconds": _per_call(lambda: a + b, number),
            "numpy_grad_seconds": _per_call(lambda: ((a_np + b_np).sum(), np.ones(4), np.ones(4)), number),
            "s4tf_grad_seconds": _per_call(
                lambda: s4tf.value_with_gradient(a, b, of=lambda p, q: (p + q).sum()), number // 10),
        },
        "mlp_layer_64": {
            "numpy_seconds": _per_call(lambda: np.maximum(x_np @ w_np + bias_np, 0.0), number),
            "s4tf_seconds": _per_call(lambda: layer(x, w, bias), number),
            "numpy_grad_seconds": _per_call(numpy_layer_grad, number),
            "s4tf_grad_seconds": _per_call(
                lambda: s4tf.value_with_gradient(w, bias, of=lambda p, q: layer(x, p, q).sum()),
                number // 10),
        },
        "dense_model_64": {
            "numpy_grad_seconds": _per_call(numpy_layer_grad, number),
            "s4tf_grad_seconds": _per_call(
                lambda: s4tf.value_with_gradient(dense, of=lambda m: m(x).sum()), number // 10),
        },
    }
    for entry in results.values():
        if "s4tf_seconds" in entry:
            entry["ratio_outside_ad"] = entry["s4tf_seconds"] / entry["numpy_seconds"]
        entry["ratio_inside_ad"] = entry["s4tf_grad_seconds"] / entry["numpy_grad_seconds"]
    results["targets"] = {"outside_ad": 3.0, "inside_ad": 10.0}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per timing")
    parser.add_argument("--clock", choices=sorted(_CLOCKS), default="wall",
                        help="wall-clock time (default) or this process's CPU time")
    args = parser.parse_args()
    print(json.dumps(run(args.number, args.clock), indent=2))


if __name__ == "__main__":
    main()
