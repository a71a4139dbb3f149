"""Peak extra memory of one optimizer update: in place (sole owner) vs forced copy.

Builds a model of >= 50M float32 parameters, runs one warm-up update (so the
optimizer state exists), then measures the tracemalloc peak of the next
update, for SGD (momentum 0.9) and Adam. The model has 32 weight matrices:
the in-place path allocates one temporary of one tensor's size at a time, so
its peak is the largest tensor, not the model. Prints JSON; the target is an
in-place peak below 5% of the parameter bytes and a copy peak >= 100%.

    python benchmarks/update_memory.py [--parameters 50000000]
"""

from __future__ import annotations

import argparse
import json
import tracemalloc

import numpy as np

import s4tf
from s4tf import optimizers


class Block(s4tf.Differentiable):
    weight: s4tf.Tensor
    bias: s4tf.Tensor


class Big(s4tf.Differentiable):
    blocks: list


def build(parameters: int, width: int = 1024, blocks: int = 32) -> Big:
    rows = max(1, parameters // (width * blocks))
    rng = np.random.default_rng(0)
    return Big([Block(s4tf.Tensor(rng.standard_normal((rows, width), np.float32)),
                      s4tf.Tensor(np.zeros(width, np.float32))) for _ in range(blocks)])


def grads_for(model: Big):
    return Big.TangentVector(blocks=[
        Block.TangentVector(weight=s4tf.ones(b.weight.shape), bias=s4tf.ones(b.bias.shape))
        for b in model.blocks])


def measure(cls, kwargs, parameters, consume):
    model = build(parameters)
    nbytes = sum(x.size * 4 for x in s4tf.tree_leaves(model, differentiable=True))
    grads = grads_for(model)
    opt = cls(model, **kwargs)
    model = opt.update(model, grads, consume=consume)  # warm-up: state exists now
    tracemalloc.start()
    tracemalloc.reset_peak()
    model = opt.update(model, grads, consume=consume)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    state = sum(v.nbytes for k, v in opt.state_dict().items() if k.startswith("slot."))
    return nbytes, peak, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parameters", type=int, default=50_000_000)
    args = parser.parse_args()
    results = {}
    runs = (("SGD", optimizers.SGD, {}), ("SGD_momentum", optimizers.SGD, {"momentum": 0.9}),
            ("Adam", optimizers.Adam, {}))
    for name, cls, kwargs in runs:
        for label, consume in (("in_place", True), ("copy", False)):
            nbytes, peak, state = measure(cls, kwargs, args.parameters, consume)
            results[f"{name}.{label}"] = {
                "parameter_bytes": nbytes, "peak_extra_bytes": peak,
                "peak_percent_of_parameters": round(100 * peak / nbytes, 3),
                # What the optimizer keeps between steps (moments, velocity).
                "optimizer_state_percent_of_parameters": round(100 * state / nbytes, 3)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
