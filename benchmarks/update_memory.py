"""Peak extra memory of one optimizer update: in place (sole owner) vs forced copy.

For SGD, SGD with momentum 0.9 and Adam on three float32 models of
``--parameters`` parameters (default 20 M): one large tensor; 32 weight
matrices 1024 wide with their biases; and many small tensors of 1,000
elements. After a warm-up update (so the optimizer state exists) it measures
the tracemalloc peak of the next update, as a percentage of the parameter
bytes: what the update allocates beyond what it keeps. The in-place target is
below 1 % for any model (PyTorch's fused optimizers and donated JAX: 0); a copy
needs at least 100 %. Also reports the state the optimizer keeps between steps.
Prints JSON; ``--runs`` measures that many updates in a row and gives the range.

    python benchmarks/update_memory.py [--parameters 20000000] [--runs 2]
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


class Model(s4tf.Differentiable):
    tensors: list


def build(kind: str, parameters: int) -> Model:
    rng = np.random.default_rng(0)

    def tensor(*shape):
        return s4tf.Tensor(rng.standard_normal(shape, np.float32))

    if kind == "one_tensor":
        return Model([tensor(max(1, parameters // 1024), 1024)])
    if kind == "32_matrices":
        rows = max(1, parameters // (1024 * 32))
        return Model([Block(tensor(rows, 1024), tensor(1024)) for _ in range(32)])
    return Model([tensor(1000) for _ in range(max(1, parameters // 1000))])


def gradients(model: Model):
    leaves, treedef = s4tf.tree_flatten(model, differentiable=True)
    return treedef.tangent_unflatten([s4tf.ones(x.shape) for x in leaves])


def measure(cls, kwargs, kind, parameters, consume, runs):
    """Parameter bytes, the peak of each of ``runs`` updates after a warm-up, the state kept."""
    model = build(kind, parameters)
    nbytes = sum(x.size * 4 for x in s4tf.tree_leaves(model, differentiable=True))
    grads = gradients(model)
    opt = cls(model, **kwargs)
    model = opt.update(model, grads, consume=consume)  # warm-up: the state exists now
    peaks = []
    for _ in range(runs):
        tracemalloc.start()
        model = opt.update(model, grads, consume=consume)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    state = sum(v.nbytes for k, v in opt.state_dict().items() if k.startswith("slot."))
    return int(nbytes), peaks, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parameters", type=int, default=20_000_000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    s4tf.set_backend("naive")
    results = {}
    runs = (("SGD", optimizers.SGD, {}), ("SGD_momentum", optimizers.SGD, {"momentum": 0.9}),
            ("Adam", optimizers.Adam, {}))
    for kind in ("one_tensor", "32_matrices", "many_small"):
        for name, cls, kwargs in runs:
            for label, consume in (("in_place", True), ("copy", False)):
                nbytes, peaks, state = measure(cls, kwargs, kind, args.parameters, consume,
                                               args.runs)
                results[f"{kind}.{name}.{label}"] = {
                    "parameter_bytes": nbytes,
                    "peak_percent_of_parameters": [round(100 * min(peaks) / nbytes, 3),
                                                   round(100 * max(peaks) / nbytes, 3)],
                    # What the optimizer keeps between steps (moments, velocity).
                    "optimizer_state_percent_of_parameters": round(100 * state / nbytes, 3)}
    results["target_in_place_percent"] = 1.0
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
